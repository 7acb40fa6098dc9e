/* images.c - RGB8 host images into the engine (engine.h): upload, GPU preprocessing, forward.
 *
 * Per call:
 *   plan     on the host, per image size (images of one size share it): the timm / HF geometry
 *            (swin_preprocess_plan) and Pillow's resize plan of the S x S window
 *            (swin_resize_plan_make with p->pillow's pass order: the very plan the CPU path
 *            applies), flattened into swin_pre_image records and one int32 coefficient array,
 *            written to page-locked staging in the layout of its device copy (one transfer)
 *   upload   each image's pixels (the caller's memory: page-locked from swin_engine_host_alloc
 *            makes the copy asynchronous, pageable works too) into one device buffer; pixels
 *            already on the device (swin_engine_preprocess_device, a GPU decoder) are used in place
 *   kernels  swin_preprocess_cuda (kernels/preprocess.cu) into the destination: e->input for the
 *            forward, or the caller's device buffer (swin_engine_preprocess_images)
 *   forward  async.c: swin_engine_begin_images enqueues all of the above and the forward,
 *            swin_engine_end waits (swin_engine_forward_images_on is the two in a row)
 * The scratch (device pixels, intermediates and plan; the pinned staging) grows on demand before
 * anything is enqueued and lives until the engine is freed. The preprocessing-only calls
 * synchronise their stream before they return, on failure too; the forward frees the caller's
 * pixels and the staging at swin_engine_end.
 * Test: tests/test_gpu_preprocess.c.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "resize.h"

#define PRE_MAX_IMAGES 65536   /* swin_preprocess_cuda's limit */

struct swin_pre_state {
    void *src;   size_t src_cap;    /* device: the images' RGB8 pixels, packed */
    void *tmp;   size_t tmp_cap;    /* device: the resize intermediates */
    void *meta;  size_t meta_cap;   /* device: records and coefficients */
    void *stage; size_t stage_cap;  /* page-locked host: the same, as built */
};

static size_t align16(size_t x) { return (x + 15u) & ~(size_t)15u; }
static size_t round_mib(size_t x) { return (x + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1); }

// ---- scratch

/* *buf holds at least need bytes afterwards (contents not kept). */
static swin_status grow(swin_engine *e, void **buf, size_t *cap, size_t need, int host, const char *what) {
    if (need <= *cap) return SWIN_OK;
    if (*buf) {
        SWIN_CUDA_TRY(cudaStreamSynchronize(e->stream));   /* idle already: every call ends synchronised */
        cudaError_t fe = host ? cudaFreeHost(*buf) : cudaFree(*buf);
        *buf = NULL;
        *cap = 0;
        if (fe != cudaSuccess)
            return swin_fail(SWIN_ERR_CUDA, "GPU preprocessing: freeing the %s: %s", what, cudaGetErrorString(fe));
    }
    size_t bytes = round_mib(need);
    cudaError_t ce = swin_cuda_alloc(buf, bytes, host);
    if (ce != cudaSuccess) {
        *buf = NULL;
        cudaGetLastError();   /* not sticky: keep it from being blamed on a later launch */
        return swin_fail(SWIN_ERR_MEMORY, "cuda:%d: cannot allocate %.1f MiB of %s memory for the %s of GPU "
                         "preprocessing: %s", e->dev, bytes / 1048576.0, host ? "page-locked host" : "device",
                         what, cudaGetErrorString(ce));
    }
    *cap = bytes;
    return SWIN_OK;
}

void swin_engine_images_free(swin_engine *e) {
    if (!e || !e->pre) return;
    struct swin_pre_state *s = e->pre;
    if (s->src) cudaFree(s->src);
    if (s->tmp) cudaFree(s->tmp);
    if (s->meta) cudaFree(s->meta);
    if (s->stage) cudaFreeHost(s->stage);
    free(s);
    e->pre = NULL;
}

// ---- the plan of a batch

static swin_status check_call(const swin_engine *e, const swin_preprocess_params *p, const swin_image *imgs,
                              int n, const void *out) {
    if (!e || !p || !imgs || !out) return swin_fail(SWIN_ERR_ARGUMENT, "GPU preprocessing: NULL argument");
    if (n < 1 || n > PRE_MAX_IMAGES)
        return swin_fail(SWIN_ERR_ARGUMENT, "GPU preprocessing: %d images, expected 1 to %d", n, PRE_MAX_IMAGES);
    for (int i = 0; i < n; i++)
        if (!imgs[i].rgb || imgs[i].width < 1 || imgs[i].height < 1)
            return swin_fail(SWIN_ERR_ARGUMENT, "GPU preprocessing: image %d is empty (%dx%d)", i, imgs[i].width,
                             imgs[i].height);
    for (int c = 0; c < 3; c++)   /* as swin_preprocess_image */
        if (!(p->std[c] != 0.0f) || !isfinite(p->std[c]) || !isfinite(p->mean[c]))
            return swin_fail(SWIN_ERR_ARGUMENT, "preprocess: bad mean/std for channel %d (%g, %g)", c, p->mean[c],
                             p->std[c]);
    if (swin_preprocess_height(p) != swin_preprocess_width(p))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "GPU preprocessing makes square inputs only (asked for %dx%d); "
                         "preprocess on the CPU instead", swin_preprocess_height(p), swin_preprocess_width(p));
    return SWIN_OK;
}

/* Images of one geometry (size, and where the part lies when the decoder gave a part) share a plan. */
static int same_geometry(const swin_image *a, const swin_image *b) {
    return a->width == b->width && a->height == b->height && a->x0 == b->x0 && a->y0 == b->y0 &&
           a->full_width == b->full_width && a->full_height == b->full_height;
}

/* first[i]: the first image of image i's geometry (i when it is the first): the plan depends on
 * that alone. Open addressing on the geometry. */
static swin_status find_first_of_size(const swin_image *imgs, int n, int *first) {
    size_t cap = 16;
    while (cap < 2 * (size_t)n) cap <<= 1;
    int *slot = malloc(cap * sizeof *slot);
    if (!slot) return swin_fail(SWIN_ERR_MEMORY, "GPU preprocessing: out of memory");
    for (size_t k = 0; k < cap; k++) slot[k] = -1;
    for (int i = 0; i < n; i++) {
        const swin_image *m = &imgs[i];
        size_t k = ((size_t)(unsigned)m->width * 2654435761u ^ (size_t)(unsigned)m->height * 40503u ^
                    (size_t)(unsigned)(m->x0 + 31 * m->y0) * 97u ^ (size_t)(unsigned)m->full_width * 7919u) & (cap - 1);
        while (slot[k] >= 0 && !same_geometry(&imgs[slot[k]], m)) k = (k + 1) & (cap - 1);
        if (slot[k] < 0) slot[k] = i;
        first[i] = slot[k];
    }
    free(slot);
    return SWIN_OK;
}

/* plans[i]: the resize plan of the S x S window for each image that is the first of its geometry
 * (the others stay empty), in the coordinates of the pixels it holds; *n_coef: their int32 values
 * in all */
static swin_status make_plans(const swin_preprocess_params *p, const swin_image *imgs, int n, const int *first,
                              swin_resize_plan *plans, size_t *n_coef) {
    *n_coef = 0;
    for (int i = 0; i < n; i++) {
        if (first[i] != i) continue;
        swin_status st = swin_preprocess_resize_plan(p, &imgs[i], &plans[i]);
        if (st != SWIN_OK)
            return swin_fail_prefix(st, "image %d (%dx%d)", i, swin_image_full_width(&imgs[i]),
                                    swin_image_full_height(&imgs[i]));
        *n_coef += plans[i].h.len + plans[i].v.len;
    }
    return SWIN_OK;
}

static void make_record(swin_pre_image *r, const swin_resize_plan *pl, long long coef_h, long long coef_v) {
    memset(r, 0, sizeof *r);
    r->coef_h = coef_h;
    r->coef_v = coef_v;
    r->w = pl->sw;
    r->h = pl->sh;
    r->wx0 = pl->wx0;
    r->wy0 = pl->wy0;
    r->ix0 = pl->ix0;
    r->ix1 = pl->ix1;
    r->iy0 = pl->iy0;
    r->iy1 = pl->iy1;
    r->mode = pl->interp == SWIN_INTERP_NEAREST ? SWIN_PRE_NEAREST : pl->h_first ? SWIN_PRE_H_FIRST : SWIN_PRE_V_FIRST;
    r->need_h = pl->need_h;
    r->need_v = pl->need_v;
    r->r0 = pl->r0;
    r->r1 = pl->r1;
    r->c0 = pl->c0;
    r->c1 = pl->c1;
    r->ksize_h = pl->h.ksize;
    r->ksize_v = pl->v.ksize;
}

/* Records and coefficients into the staging (meta layout); an image that is not the first of its
 * size copies the first one's record (same coefficients). Intermediates packed 16-byte aligned.
 * Pixels: packed the same way for an upload (dev == NULL; *src_bytes gets the size), or where
 * imgs[i].rgb lies in dev (already on the device; *src_bytes is left alone). */
static void fill_stage(void *stage, const swin_resize_plan *plans, const int *first, const swin_image *imgs,
                       int n, const uint8_t *dev, size_t *src_bytes, size_t *tmp_bytes) {
    swin_pre_image *rec = stage;
    int32_t *coef = (int32_t *)((char *)stage + swin_pre_meta_coef_offset(n));
    size_t src = 0, tmp = 0, c = 0;
    for (int i = 0; i < n; i++) {
        const swin_resize_plan *pl = &plans[first[i]];
        if (first[i] != i) {
            rec[i] = rec[first[i]];   /* first[i] < i: already filled */
        } else {
            long long ch = 0, cv = 0;
            if (pl->h.len) {
                ch = (long long)c;
                memcpy(coef + c, pl->h.first, pl->h.len * sizeof(int32_t));
                c += pl->h.len;
            }
            if (pl->v.len) {
                cv = (long long)c;
                memcpy(coef + c, pl->v.first, pl->v.len * sizeof(int32_t));
                c += pl->v.len;
            }
            make_record(&rec[i], pl, ch, cv);
        }
        rec[i].src = dev ? (long long)((uintptr_t)imgs[i].rgb - (uintptr_t)dev) : (long long)src;
        rec[i].tmp = (long long)tmp;
        src = align16(src + (size_t)pl->sw * pl->sh * 3);
        tmp = align16(tmp + (size_t)swin_pre_tmp_pixels(&rec[i]) * 3);
    }
    if (!dev) *src_bytes = src;
    *tmp_bytes = tmp;
}

// ---- enqueue

/* Stage, upload and launch the preprocessing of n planned images into out (device) on e->stream.
 * dev: NULL (pixels copied into the pixel buffer: from the host, or from device memory where
 * on_device[i] is set) or the device buffer [dev_bytes] that holds them all.
 * ev (optional, 3 events): recorded before the pixel uploads, after them, after the kernels. */
static swin_status stage_and_launch(swin_engine *e, const swin_preprocess_params *p, const swin_image *imgs,
                                    const int *on_device, int n, const swin_resize_plan *plans, const int *first,
                                    size_t n_coef, const uint8_t *dev, size_t dev_bytes, float *out, cudaEvent_t *ev) {
    if (!e->pre && !(e->pre = calloc(1, sizeof *e->pre)))
        return swin_fail(SWIN_ERR_MEMORY, "GPU preprocessing: out of memory");
    struct swin_pre_state *s = e->pre;
    size_t meta_bytes = swin_pre_meta_bytes(n, n_coef), src_bytes = dev_bytes, tmp_bytes = 0;
    SWIN_TRY(grow(e, &s->stage, &s->stage_cap, meta_bytes, 1, "plan staging"));
    fill_stage(s->stage, plans, first, imgs, n, dev, &src_bytes, &tmp_bytes);
    SWIN_TRY(grow(e, &s->meta, &s->meta_cap, meta_bytes, 0, "plan"));
    if (!dev) SWIN_TRY(grow(e, &s->src, &s->src_cap, src_bytes, 0, "pixels"));
    SWIN_TRY(grow(e, &s->tmp, &s->tmp_cap, tmp_bytes, 0, "intermediates"));

    const swin_pre_image *rec = s->stage;
    const uint8_t *src = dev ? dev : (const uint8_t *)s->src;
    if (ev) SWIN_CUDA_TRY(cudaEventRecord(ev[0], e->stream));
    for (int i = 0; !dev && i < n; i++)
        SWIN_CUDA_TRY(cudaMemcpyAsync((char *)s->src + rec[i].src, imgs[i].rgb,
                                      (size_t)imgs[i].width * imgs[i].height * 3,
                                      on_device && on_device[i] ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice,
                                      e->stream));
    if (ev) SWIN_CUDA_TRY(cudaEventRecord(ev[1], e->stream));
    swin_pre_batch b;
    memset(&b, 0, sizeof b);
    b.n = n;
    b.size = swin_preprocess_height(p);   /* square: check_call */
    b.style = p->style;
    memcpy(b.mean, p->mean, sizeof b.mean);
    memcpy(b.std, p->std, sizeof b.std);
    b.img = rec;
    b.coef = n_coef ? (const int32_t *)((const char *)s->stage + swin_pre_meta_coef_offset(n)) : NULL;
    b.n_coef = n_coef;
    SWIN_TRY(swin_preprocess_cuda(out, src, src_bytes, tmp_bytes ? s->tmp : NULL, tmp_bytes, s->meta,
                                  s->meta_cap, &b, e->stream));
    if (ev) SWIN_CUDA_TRY(cudaEventRecord(ev[2], e->stream));
    return SWIN_OK;
}

static swin_status enqueue_preprocess(swin_engine *e, const swin_preprocess_params *p, const swin_image *imgs,
                                      const int *on_device, int n, const uint8_t *dev, size_t dev_bytes, float *out,
                                      cudaEvent_t *ev) {
    swin_resize_plan *plans = calloc((size_t)n, sizeof *plans);
    int *first = malloc((size_t)n * sizeof *first);
    size_t n_coef = 0;
    swin_status st = plans && first ? find_first_of_size(imgs, n, first)
                                    : swin_fail(SWIN_ERR_MEMORY, "GPU preprocessing: out of memory");
    if (st == SWIN_OK) st = make_plans(p, imgs, n, first, plans, &n_coef);
    if (st == SWIN_OK) st = stage_and_launch(e, p, imgs, on_device, n, plans, first, n_coef, dev, dev_bytes, out, ev);
    for (int i = 0; plans && i < n; i++) swin_resize_plan_free(&plans[i]);
    free(plans);
    free(first);
    return st;
}

/* Synchronise after enqueueing; the first error wins. */
static swin_status finish(swin_engine *e, swin_status st, const char *what) {
    cudaError_t ce = cudaStreamSynchronize(e->stream);
    if (st != SWIN_OK) return st;
    if (ce != cudaSuccess)
        return swin_fail(SWIN_ERR_CUDA, "%s on cuda:%d failed: %s (SWIN_CUDA_SYNC=1 names the kernel)", what, e->dev,
                         cudaGetErrorString(ce));
    return SWIN_OK;
}

// ---- entry points

swin_status swin_engine_preprocess_images(swin_engine *e, const swin_preprocess_params *p,
                                          const swin_image *imgs, int n, float *out_dev) {
    SWIN_TRY(check_call(e, p, imgs, n, out_dev));
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    return finish(e, enqueue_preprocess(e, p, imgs, NULL, n, NULL, 0, out_dev, NULL), "GPU preprocessing");
}

swin_status swin_engine_preprocess_device(swin_engine *e, const swin_preprocess_params *p, const uint8_t *src,
                                          size_t src_bytes, const swin_image *imgs, int n, float *out_dev) {
    SWIN_TRY(check_call(e, p, imgs, n, out_dev));
    if (!src) return swin_fail(SWIN_ERR_ARGUMENT, "GPU preprocessing: NULL device pixel buffer");
    for (int i = 0; i < n; i++) {   /* the op checks the extent of each image against src_bytes */
        uintptr_t a = (uintptr_t)imgs[i].rgb, b = (uintptr_t)src;
        if (a < b || a - b >= src_bytes)
            return swin_fail(SWIN_ERR_ARGUMENT, "GPU preprocessing: image %d's pixels are not inside the device "
                             "buffer of %zu bytes", i, src_bytes);
    }
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    return finish(e, enqueue_preprocess(e, p, imgs, NULL, n, src, src_bytes, out_dev, NULL), "GPU preprocessing");
}

swin_status swin_engine_forward_images(swin_engine *e, const swin_preprocess_params *p,
                                       const swin_image *imgs, int n, float *logits,
                                       swin_images_timing *timing) {
    return swin_engine_forward_images_on(e, p, imgs, NULL, n, logits, timing);
}

swin_status swin_engine_enqueue_images(swin_engine *e, const swin_preprocess_params *p, const swin_image *imgs,
                                       const int *on_device, int n, cudaEvent_t *ev) {
    SWIN_TRY(check_call(e, p, imgs, n, e ? e->input : NULL));
    if (n > e->opt.max_batch)
        return swin_fail(SWIN_ERR_ARGUMENT, "batch %d out of range [1, %d] (the session's max batch)", n,
                         e->opt.max_batch);
    if (swin_preprocess_height(p) != e->m->cfg.img_h || swin_preprocess_width(p) != e->m->cfg.img_w)
        return swin_fail(SWIN_ERR_ARGUMENT, "preprocessing makes %dx%d inputs; the model takes %dx%d",
                         swin_preprocess_height(p), swin_preprocess_width(p), e->m->cfg.img_h, e->m->cfg.img_w);
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    return enqueue_preprocess(e, p, imgs, on_device, n, NULL, 0, e->input, ev);
}

swin_status swin_engine_forward_images_on(swin_engine *e, const swin_preprocess_params *p,
                                          const swin_image *imgs, const int *on_device, int n, float *logits,
                                          swin_images_timing *timing) {
    SWIN_TRY(swin_engine_begin_images(e, p, imgs, on_device, n, 0, logits));
    return swin_engine_end(e, timing);
}

void *swin_engine_host_alloc(swin_engine *e, size_t bytes) {
    void *p = NULL;
    if (cudaSetDevice(e->dev) != cudaSuccess || swin_cuda_alloc(&p, bytes, 1) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return p;
}

void swin_engine_host_free(swin_engine *e, void *ptr) {
    (void)e;
    if (ptr) cudaFreeHost(ptr);
}
