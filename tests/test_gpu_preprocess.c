/* test_gpu_preprocess.c - GPU image preprocessing (kernels/preprocess.cu, src/cuda/images.c)
 * against the CPU path (swin_preprocess_image), bit for bit.
 *
 * Batches: every image of tests/data/preprocess that decodes, in one mixed-size batch; and a
 * synthetic batch (fixed seed) of random sizes from 1x1 to 700x500 plus shapes chosen for each
 * path: tall images (vertical pass first), images already at the target size (passes skipped),
 * one pass skipped either way, a 1500x1100, sizes that repeat (the GPU path plans a size once).
 * Each batch runs under timm and HF, nearest / bilinear / bicubic, S = 224, 97 and 384 (upscaling
 * every fixture), crop_pct 0.875, 0.9, 1.0 and 1.15 (padding), three mean/std sets, and the
 * bilinear / bicubic ones again with Pillow 12's pass order (pillow = 12: always horizontal first).
 * The output is poisoned with NaN before every run and has a guard zone; the number of floats whose
 * bits differ from the CPU's must be 0, and every pass-order / skip combination, Pillow 12's order
 * where Pillow 13's differs, and the padding must have been exercised.
 * Every batch again as parts of its images (what the part decode gives: the pixels preprocessing
 * reads plus a random margin, some images whole): the GPU's output must be the CPU's of the whole
 * images, bit for bit.
 * Pixels already on the device (the path of a GPU decoder): the fixtures packed at unaligned offsets
 * of one device buffer, through swin_engine_preprocess_device, bit for bit; pointers outside it are
 * refused. The op alone: a hand-made record gives the expected values; corrupt records are refused
 * before anything is launched.
 * Through a session: swin_forward_images with GPU preprocessing gives the same logits as CPU
 * preprocessing on the same CUDA session (pinned and pageable pixels, timm and HF), fills the
 * timing, and refuses an image of width 0, a wrong size, a batch over the max, a zero std, and GPU
 * preprocessing on a CPU session; a good call still works after each refusal.
 * Exits 77 without a GPU.  Run: test_gpu_preprocess <source dir>; SWIN_TEST_QUICK=1 runs S = 224
 * and crops 0.9 / 1.15 only.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine.h"
#include "image.h"
#include "model.h"
#include "ops.h"
#include "preprocess.h"
#include "resize.h"
#include "testutil.h"

#define MAX_IMAGES 64

// ---- device output with a guard zone after it, poisoned with NaN before each run

#define GUARD 256
#define GUARD_BYTE 0xA5

typedef struct {
    float *p;
    size_t n;
} dev_out;

static dev_out out_alloc(size_t n) {
    dev_out o = {NULL, n};
    if (cudaMalloc((void **)&o.p, n * sizeof(float) + GUARD) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc of %zu bytes failed\n", n * sizeof(float) + GUARD);
        exit(1);
    }
    cudaMemset((char *)o.p + n * sizeof(float), GUARD_BYTE, GUARD);
    cudaMemset(o.p, 0xFF, n * sizeof(float));   /* all bits set: NaN */
    return o;
}

static void out_free(dev_out *o) {
    cudaFree(o->p);
    o->p = NULL;
}

/* host <- device; 1 when the copy worked and the guard zone is untouched */
static int out_download(const dev_out *o, float *host) {
    unsigned char g[GUARD];
    if (cudaMemcpy(host, o->p, o->n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(g, (const char *)o->p + o->n * sizeof(float), GUARD, cudaMemcpyDeviceToHost) != cudaSuccess)
        return 0;
    for (int i = 0; i < GUARD; i++)
        if (g[i] != GUARD_BYTE) return 0;
    return 1;
}

static int quick(void) {
    const char *q = getenv("SWIN_TEST_QUICK");
    return q && q[0] == '1';
}

typedef struct {
    swin_image img[MAX_IMAGES];
    char name[MAX_IMAGES][96];
    int n;
} batch;

static const struct { float mean[3], std[3]; } NORMS[] = {
    {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}},   /* ImageNet (timm) */
    {{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}},               /* HF default */
    {{0.1f, 0.7f, 0.33f}, {0.05f, 1.7f, 3e-3f}},            /* odd: large and small quotients */
};
static const int SIZES[] = {224, 97, 384};
static const float CROPS[] = {0.875f, 0.9f, 1.0f, 1.15f};
static const char *const INTERP[] = {"nearest", "bilinear", "bicubic"};

/* paths seen, from the plans of the images compared (so the test knows what it covered) */
enum { SEEN_H11, SEEN_H10, SEEN_H01, SEEN_H00, SEEN_V1, SEEN_V0, SEEN_PIL12, SEEN_NEAREST, SEEN_PAD, SEEN_COUNT };
static const char *const SEEN_NAME[] = {"h-first h+v", "h-first h only", "h-first v only", "no pass",
                                        "v-first v+h", "v-first v only", "pillow 12 h+v", "nearest", "padding"};
static long g_seen[SEEN_COUNT];

/* "pillow 12 h+v": horizontal first under pillow = 12 where the default plan goes vertical first
 * with both passes (the shapes where the two Pillow versions give different bytes) */
static void note_paths(const swin_preprocess_params *p, const swin_image *im) {
    int rw, rh, x0, y0;
    swin_resize_plan pl, pl13;
    if (swin_preprocess_plan(p, im->width, im->height, &rw, &rh, &x0, &y0) != SWIN_OK) return;
    if (swin_resize_plan_make(im->width, im->height, rw, rh, x0, y0, p->size, p->size, p->interp, p->pillow, &pl) !=
        SWIN_OK)
        return;
    if (pl.interp == SWIN_INTERP_NEAREST) g_seen[SEEN_NEAREST]++;
    else if (pl.h_first) g_seen[pl.need_h ? (pl.need_v ? SEEN_H11 : SEEN_H10) : (pl.need_v ? SEEN_H01 : SEEN_H00)]++;
    else g_seen[pl.need_h ? SEEN_V1 : SEEN_V0]++;
    if (x0 < 0 || y0 < 0) g_seen[SEEN_PAD]++;
    if (p->pillow == 12 && pl.h_first && pl.need_h && pl.need_v &&
        swin_resize_plan_make(im->width, im->height, rw, rh, x0, y0, p->size, p->size, p->interp, 0, &pl13) ==
            SWIN_OK) {
        g_seen[SEEN_PIL12] += !pl13.h_first;
        swin_resize_plan_free(&pl13);
    }
    swin_resize_plan_free(&pl);
}

static void batch_free(batch *b) {
    for (int i = 0; i < b->n; i++) swin_image_free(&b->img[i]);
    b->n = 0;
}

// ---- inputs

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* every file in dir that swin_image_load decodes, in name order */
static void load_fixtures(const char *dir, batch *b) {
    char *names[MAX_IMAGES];
    int nn = 0;
    DIR *d = opendir(dir);
    if (!CHECK(d != NULL, "cannot open %s", dir)) return;
    for (struct dirent *de; (de = readdir(d)) && nn < MAX_IMAGES;)
        if (swin_image_has_extension(de->d_name)) names[nn++] = strdup(de->d_name);
    closedir(d);
    qsort(names, (size_t)nn, sizeof *names, cmp_str);
    for (int i = 0; i < nn; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        swin_image img = {0};
        if (swin_image_load(path, &img) != SWIN_OK) {
            printf("skip    %s: %s\n", names[i], swin_last_error());
        } else {
            b->img[b->n] = img;
            snprintf(b->name[b->n], sizeof b->name[0], "%s", names[i]);
            b->n++;
        }
        free(names[i]);
    }
    CHECK(b->n >= 10, "only %d fixtures decoded in %s", b->n, dir);
}

static int rnd(int n) {
    int v = (int)tu_uniform(0.0f, (float)n);
    return v < n ? v : n - 1;
}

static void add_synthetic(batch *b, int w, int h) {
    swin_image *im = &b->img[b->n];
    im->width = w;
    im->height = h;
    im->rgb = malloc((size_t)w * h * 3);
    int smooth = b->n % 2;   /* gradients with a little noise, or plain noise (clips a lot in bicubic) */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                int v = smooth ? (x * 255 / (w > 1 ? w - 1 : 1) * (c + 1) + y * 255 / (h > 1 ? h - 1 : 1) * (3 - c)) / 4 +
                                     rnd(9) - 4
                               : rnd(256);
                im->rgb[((size_t)y * w + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    snprintf(b->name[b->n], sizeof b->name[0], "synthetic %dx%d", w, h);
    b->n++;
}

static void make_synthetic(batch *b) {
    /* chosen shapes; then random ones. S = 224 / 97 for the comments */
    static const int FIXED[][2] = {
        {1, 1}, {1, 600}, {700, 3}, {240, 700}, {31, 690}, {300, 2000},  /* tall: vertical first */
        {224, 224}, {97, 97},     /* HF: both passes skipped */
        {224, 500}, {97, 300},    /* HF: vertical first, no horizontal pass */
        {500, 224}, {300, 97},    /* HF: horizontal only */
        {224, 100}, {97, 40},     /* HF: horizontal first, no horizontal pass (reads the source) */
        {256, 320}, {110, 150},   /* timm 224 / 97 at crop 0.875: already at the resized size */
        {1500, 1100},
        {333, 250}, {240, 700}, {333, 250}, {333, 250},   /* repeated sizes share one plan */
    };
    for (size_t i = 0; i < sizeof FIXED / sizeof FIXED[0]; i++) add_synthetic(b, FIXED[i][0], FIXED[i][1]);
    while (b->n < 42) add_synthetic(b, 1 + rnd(700), 1 + rnd(500));
}

// ---- GPU vs CPU, one batch under one set of parameters

static size_t count_diff(const float *got, const float *ref, size_t n, size_t *first) {
    size_t bad = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t a, r;
        memcpy(&a, &got[k], 4);
        memcpy(&r, &ref[k], 4);
        if (a != r && !bad++) *first = k;
    }
    return bad;
}

/* dev: NULL (host pixels, swin_engine_preprocess_images) or a device buffer [dev_bytes] holding the
 * same pixels at dev_imgs[i].rgb (swin_engine_preprocess_device) */
static void compare_on(swin_engine *e, const char *set, const swin_preprocess_params *p, const batch *b,
                       const uint8_t *dev, size_t dev_bytes, const swin_image *dev_imgs) {
    char what[160];
    snprintf(what, sizeof what, "%s %s %s S %d crop %.3g%s", set, p->style == SWIN_PRE_HF ? "hf" : "timm",
             INTERP[p->interp], p->size, p->style == SWIN_PRE_HF ? 0.0 : p->crop_pct, p->pillow ? " pil12" : "");
    size_t per = swin_preprocess_floats(p), total = per * (size_t)b->n;
    dev_out out = out_alloc(total);
    swin_status st = dev ? swin_engine_preprocess_device(e, p, dev, dev_bytes, dev_imgs, b->n, out.p)
                         : swin_engine_preprocess_images(e, p, b->img, b->n, out.p);
    if (!CHECK(st == SWIN_OK, "%s: %s", what, swin_last_error())) {
        out_free(&out);
        return;
    }
    float *got = malloc(total * sizeof(float)), *ref = malloc(per * sizeof(float));
    CHECK(out_download(&out, got), "%s: download failed or written past the end of the output", what);
    size_t bad_all = 0;
    for (int i = 0; i < b->n; i++) {
        note_paths(p, &b->img[i]);
        if (!CHECK(swin_preprocess_image(p, &b->img[i], ref) == SWIN_OK, "%s: CPU: %s", what, swin_last_error()))
            continue;
        size_t first = 0, bad = count_diff(got + (size_t)i * per, ref, per, &first);
        if (bad) {
            size_t plane = (size_t)p->size * p->size, q = first % plane;
            printf("        %s (%dx%d): %zu of %zu floats differ, first at c %zu y %zu x %zu: gpu %.9g cpu %.9g\n",
                   b->name[i], b->img[i].width, b->img[i].height, bad, per, first / plane, q / p->size,
                   q % p->size, got[(size_t)i * per + first], ref[first]);
        }
        bad_all += bad;
    }
    printf("%s %-46s %2d images, %9zu floats, %zu differ\n", bad_all ? "FAIL" : "ok  ", what, b->n, total, bad_all);
    CHECK(bad_all == 0, "%s: %zu floats differ from the CPU", what, bad_all);
    free(got);
    free(ref);
    out_free(&out);
}

/* The batch again as parts of its images, as the part decode gives them (image.h): each image
 * cut to what preprocessing reads (swin_preprocess_source_rect) plus a random margin, every
 * third one left whole; the GPU's output must be the CPU's for the whole images, bit for bit. */
static long g_part_runs;

static void compare_parts(swin_engine *e, const char *set, const swin_preprocess_params *p, const batch *b) {
    static batch parts;
    parts.n = 0;
    for (int i = 0; i < b->n; i++) {
        const swin_image *im = &b->img[i];
        swin_image *pt = &parts.img[parts.n];
        swin_rect r;
        snprintf(parts.name[parts.n], sizeof parts.name[0], "%s", b->name[i]);
        if (swin_preprocess_source_rect(p, im->width, im->height, &r) != SWIN_OK || r.x0 == r.x1 || i % 3 == 0) {
            *pt = *im;   /* whole (borrowed: not freed below) */
            parts.n++;
            continue;
        }
        r.x0 -= rnd(1 + (r.x0 < 9 ? r.x0 : 9)), r.y0 -= rnd(1 + (r.y0 < 9 ? r.y0 : 9));
        r.x1 += rnd(1 + (im->width - r.x1 < 9 ? im->width - r.x1 : 9));
        r.y1 += rnd(1 + (im->height - r.y1 < 9 ? im->height - r.y1 : 9));
        *pt = (swin_image){.width = r.x1 - r.x0, .height = r.y1 - r.y0, .x0 = r.x0, .y0 = r.y0,
                           .full_width = im->width, .full_height = im->height};
        pt->rgb = malloc((size_t)pt->width * pt->height * 3);
        for (int y = 0; y < pt->height; y++)
            memcpy(pt->rgb + (size_t)y * pt->width * 3, im->rgb + ((size_t)(r.y0 + y) * im->width + r.x0) * 3,
                   (size_t)pt->width * 3);
        g_part_runs += pt->width < im->width || pt->height < im->height;
        parts.n++;
    }
    char what[160];
    snprintf(what, sizeof what, "%s %s %s S %d crop %.3g%s, parts", set, p->style == SWIN_PRE_HF ? "hf" : "timm",
             INTERP[p->interp], p->size, p->style == SWIN_PRE_HF ? 0.0 : p->crop_pct, p->pillow ? " pil12" : "");
    size_t per = swin_preprocess_floats(p), total = per * (size_t)parts.n, bad_all = 0;
    dev_out out = out_alloc(total);
    float *got = malloc(total * sizeof(float)), *ref = malloc(per * sizeof(float));
    if (CHECK(swin_engine_preprocess_images(e, p, parts.img, parts.n, out.p) == SWIN_OK, "%s: %s", what,
              swin_last_error()) &&
        CHECK(out_download(&out, got), "%s: download failed or written past the end of the output", what)) {
        for (int i = 0; i < b->n; i++) {
            size_t first = 0;
            if (swin_preprocess_image(p, &b->img[i], ref) == SWIN_OK)
                bad_all += count_diff(got + (size_t)i * per, ref, per, &first);
        }
        CHECK(bad_all == 0, "%s: %zu floats differ from the CPU's of the whole images", what, bad_all);
    }
    free(got);
    free(ref);
    out_free(&out);
    for (int i = 0; i < parts.n; i++)
        if (i % 3 != 0 && parts.img[i].rgb != b->img[i].rgb) free(parts.img[i].rgb);
}

static void compare(swin_engine *e, const char *set, const swin_preprocess_params *p, const batch *b) {
    compare_on(e, set, p, b, NULL, 0, NULL);
    compare_parts(e, set, p, b);
}

/* the grid of styles, interpolations, sizes and crops over one batch in the pass order of one
 * Pillow version (12: the filters only; nearest is one pass, the same in every version) */
static void compare_grid_pillow(swin_engine *e, const char *set, const batch *b, int pillow) {
    int k = 0;
    for (int style = SWIN_PRE_TIMM; style <= SWIN_PRE_HF; style++)
        for (int in = pillow == 12 ? SWIN_INTERP_BILINEAR : SWIN_INTERP_NEAREST; in < 3; in++)
            for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++)
                for (size_t c = 0; c < (style == SWIN_PRE_HF ? 1 : sizeof CROPS / sizeof CROPS[0]); c++, k++) {
                    if (quick() && (s > 0 || (style == SWIN_PRE_TIMM && c != 1 && c != 3))) continue;
                    swin_preprocess_params p;
                    memset(&p, 0, sizeof p);
                    p.style = (swin_preprocess_style)style;
                    p.interp = (swin_interp)in;
                    p.size = SIZES[s];
                    p.crop_pct = CROPS[c];
                    p.pillow = pillow;
                    int nm = k % 3;
                    memcpy(p.mean, NORMS[nm].mean, sizeof p.mean);
                    memcpy(p.std, NORMS[nm].std, sizeof p.std);
                    compare(e, set, &p, b);
                }
}

static void compare_grid(swin_engine *e, const char *set, const batch *b) {
    compare_grid_pillow(e, set, b, 0);    /* the default: Pillow 13 */
    compare_grid_pillow(e, set, b, 12);
}

// ---- pixels already on the device (a GPU decoder's output), packed at odd offsets

static void test_device_pixels(swin_engine *e, const batch *b) {
    size_t bytes = 0, off[MAX_IMAGES];
    for (int i = 0; i < b->n; i++) {
        off[i] = bytes;
        bytes += (size_t)b->img[i].width * b->img[i].height * 3 + 7;   /* unaligned on purpose */
    }
    uint8_t *dev = NULL;
    if (!CHECK(cudaMalloc((void **)&dev, bytes) == cudaSuccess, "device pixels: cudaMalloc")) return;
    swin_image di[MAX_IMAGES];
    for (int i = 0; i < b->n; i++) {
        cudaMemcpy(dev + off[i], b->img[i].rgb, (size_t)b->img[i].width * b->img[i].height * 3, cudaMemcpyHostToDevice);
        di[i] = b->img[i];
        di[i].rgb = dev + off[i];
    }
    static const struct { int style, interp, size; float crop; int pillow; } CASES[] = {
        {SWIN_PRE_TIMM, SWIN_INTERP_BICUBIC, 224, 0.875f, 0}, {SWIN_PRE_HF, SWIN_INTERP_BILINEAR, 97, 0.0f, 0},
        {SWIN_PRE_TIMM, SWIN_INTERP_NEAREST, 384, 1.15f, 0}, {SWIN_PRE_TIMM, SWIN_INTERP_BILINEAR, 97, 1.15f, 0},
        {SWIN_PRE_HF, SWIN_INTERP_BICUBIC, 97, 0.0f, 12}};
    swin_preprocess_params p;
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        memset(&p, 0, sizeof p);
        p.style = (swin_preprocess_style)CASES[c].style, p.interp = (swin_interp)CASES[c].interp;
        p.size = CASES[c].size, p.crop_pct = CASES[c].crop, p.pillow = CASES[c].pillow;
        memcpy(p.mean, NORMS[c % 3].mean, sizeof p.mean);
        memcpy(p.std, NORMS[c % 3].std, sizeof p.std);
        compare_on(e, "on-device", &p, b, dev, bytes, di);
    }
    /* refused: a pointer outside the buffer; an image running past its end */
    dev_out out = out_alloc(swin_preprocess_floats(&p) * (size_t)b->n);
    swin_image keep = di[1];
    di[1].rgb = dev + bytes;
    swin_status st = swin_engine_preprocess_device(e, &p, dev, bytes, di, b->n, out.p);
    CHECK(st == SWIN_ERR_ARGUMENT && strstr(swin_last_error(), "not inside"), "device: pointer past the buffer: %d '%s'",
          (int)st, swin_last_error());
    printf("refused %-32s -> %s\n", "device pixels outside src", swin_last_error());
    di[1] = keep;
    st = swin_engine_preprocess_device(e, &p, dev, off[b->n - 1] + 5, di, b->n, out.p);
    CHECK(st == SWIN_ERR_ARGUMENT && strstr(swin_last_error(), "outside src"), "device: image past the end: %d '%s'",
          (int)st, swin_last_error());
    printf("refused %-32s -> %s\n", "device image past src's end", swin_last_error());
    out_free(&out);
    cudaFree(dev);
}

// ---- the op alone, with pixels already on the device

static float timm_value(uint8_t u, float mean, float std) {
    float v = (float)u / 255.0f;
    return (v - mean) / std;
}

static void test_op(void) {
    enum { W = 4, H = 3, S = 4 };   /* window 4x4 at (0,0) of an unresized 4x3 image: last row padded */
    uint8_t px[W * H * 3];
    for (int i = 0; i < W * H * 3; i++) px[i] = (uint8_t)(i * 37 + 11);
    swin_pre_image r;
    memset(&r, 0, sizeof r);
    r.w = W, r.h = H, r.ix1 = W, r.iy1 = H, r.r1 = H, r.c1 = W;
    r.mode = SWIN_PRE_H_FIRST;   /* need_h = need_v = 0: a copy, no coefficients, no intermediate */
    swin_pre_batch b;
    memset(&b, 0, sizeof b);
    b.n = 1, b.size = S, b.style = SWIN_PRE_TIMM, b.img = &r;
    for (int c = 0; c < 3; c++) b.mean[c] = NORMS[0].mean[c], b.std[c] = NORMS[0].std[c];
    void *src = NULL, *meta = NULL;
    size_t meta_bytes = swin_pre_meta_bytes(1, 4);
    if (!CHECK(cudaMalloc(&src, sizeof px) == cudaSuccess && cudaMalloc(&meta, meta_bytes) == cudaSuccess,
               "op: cudaMalloc")) return;
    cudaMemcpy(src, px, sizeof px, cudaMemcpyHostToDevice);
    dev_out out = out_alloc(3 * S * S);
    swin_status st = swin_preprocess_cuda(out.p, src, sizeof px, NULL, 0, meta, meta_bytes, &b, 0);
    CHECK(st == SWIN_OK, "op: %s", swin_last_error());
    float got[3 * S * S], want[3 * S * S];
    CHECK(out_download(&out, got), "op: download failed or guard overwritten");
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++)
                want[(c * S + y) * S + x] = timm_value(y < H ? px[(y * W + x) * 3 + c] : 0, b.mean[c], b.std[c]);
    size_t first = 0;
    CHECK(count_diff(got, want, 3 * S * S, &first) == 0, "op: copy path differs at %zu", first);

    /* refusals: nothing is launched, the message says why */
    int32_t coef[4] = {0, 1, 2, 3};
    struct { const char *what, *expect; } bad[] = {
        {"copied columns past the image", "copied columns"}, {"pixels past src", "outside src"},
        {"nearest index = width", "nearest"}, {"meta too small", "meta has"},
        {"filter taps past the image", "taps"}, {"std 0", "bad mean/std"}};
    for (int t = 0; t < 6; t++) {
        swin_pre_image rr = r;
        swin_pre_batch bb = b;
        size_t mb = meta_bytes, sb = sizeof px;
        bb.img = &rr;
        switch (t) {
        case 0: rr.ix1 = W + 1; bb.size = 8; break;   /* inside the 8x8 window, past the 4-wide image */
        case 1: sb = sizeof px - 1; break;
        case 2: rr.mode = SWIN_PRE_NEAREST; coef[3] = W; bb.coef = coef; bb.n_coef = 4; rr.coef_h = 0; rr.coef_v = 0;
                rr.ix1 = 4; rr.iy1 = 3; break;
        case 3: mb = swin_pre_meta_bytes(1, 0) - 1; break;
        case 4: rr.need_h = 1; rr.ksize_h = 1; coef[0] = 3; coef[1] = 2; /* first 3, count 2 > w - 3 */
                bb.coef = coef; bb.n_coef = 4; rr.ix1 = 1; break;
        case 5: bb.std[1] = 0.0f; break;
        }
        st = swin_preprocess_cuda(out.p, src, sb, NULL, 0, meta, mb, &bb, 0);
        CHECK(st == SWIN_ERR_ARGUMENT && strstr(swin_last_error(), bad[t].expect),
              "op: %s: status %d, message '%s'", bad[t].what, (int)st, swin_last_error());
        printf("refused %-32s -> %s\n", bad[t].what, swin_last_error());
        coef[0] = 0, coef[1] = 1, coef[3] = 3;
    }
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "op: CUDA error");
    out_free(&out);
    cudaFree(src);
    cudaFree(meta);
}

// ---- through a session: GPU vs CPU preprocessing, same logits

static swin_status make_model(swin_model **out) {
    swin_config c;
    memset(&c, 0, sizeof c);
    c.version = 1;
    snprintf(c.arch, sizeof c.arch, "tiny_pre");
    c.img_h = c.img_w = 56, c.patch_size = 4, c.in_chans = 3, c.embed_dim = 48, c.num_stages = 2;
    c.depths[0] = 2, c.depths[1] = 1, c.num_heads[0] = 3, c.num_heads[1] = 6;
    c.window_size = 7, c.mlp_ratio = 4.0f, c.qkv_bias = 1, c.ln_eps = 1e-5f, c.num_classes = 10;
    c.pre_style = SWIN_PRE_TIMM, c.interp = SWIN_INTERP_BICUBIC, c.crop_pct = 0.9f;
    memcpy(c.mean, NORMS[0].mean, sizeof c.mean);
    memcpy(c.std, NORMS[0].std, sizeof c.std);
    return swin_model_random_config(&c, 77, out);
}

static void test_session(const swin_model *m, const batch *syn) {
    enum { MAXB = 4, N = 3 };
    swin_session_options o = swin_session_options_default();
    o.device = SWIN_DEVICE_CUDA;
    o.max_batch = MAXB;
    swin_session *s = NULL;
    if (!CHECK(swin_session_create(m, &o, &s) == SWIN_OK, "session: %s", swin_last_error())) return;
    const swin_config *cfg = swin_model_config(m);
    int classes = cfg->num_classes;
    /* three images of different sizes; the second in pinned memory */
    swin_image imgs[N] = {syn->img[3], syn->img[16], syn->img[20]};
    size_t bytes1 = (size_t)imgs[1].width * imgs[1].height * 3;
    uint8_t *pinned = swin_session_host_alloc(s, bytes1);
    if (CHECK(pinned != NULL, "pinned alloc of %zu bytes", bytes1)) {
        memcpy(pinned, imgs[1].rgb, bytes1);
        imgs[1].rgb = pinned;
    }
    float gpu[MAXB * 16], cpu[MAXB * 16], again[MAXB * 16];
    for (int style = SWIN_PRE_TIMM; style <= SWIN_PRE_HF; style++) {
        swin_preprocess_params p = swin_preprocess_params_from_config(cfg);
        p.style = (swin_preprocess_style)style;
        swin_images_timing t = {-1, -1, -1};
        swin_status st = swin_forward_images(s, &p, imgs, N, SWIN_PRE_DEVICE_GPU, gpu, &t);
        CHECK(st == SWIN_OK, "forward_images gpu: %s", swin_last_error());
        st = swin_forward_images(s, &p, imgs, N, SWIN_PRE_DEVICE_CPU, cpu, NULL);
        CHECK(st == SWIN_OK, "forward_images cpu: %s", swin_last_error());
        st = swin_forward_images(s, &p, imgs, N, SWIN_PRE_DEVICE_AUTO, again, NULL);   /* AUTO = GPU here */
        CHECK(st == SWIN_OK, "forward_images auto: %s", swin_last_error());
        size_t first = 0, n = (size_t)N * classes;
        size_t d1 = count_diff(gpu, cpu, n, &first), d2 = count_diff(again, cpu, n, &first);
        printf("%s session %-4s: GPU vs CPU preprocessing, %zu logits, %zu / %zu differ; upload %.3f ms, "
               "preprocess %.3f ms, forward %.3f ms\n", d1 || d2 ? "FAIL" : "ok  ", style ? "hf" : "timm", n, d1, d2,
               t.upload_ms, t.preprocess_ms, t.forward_ms);
        CHECK(d1 == 0 && d2 == 0, "session %s: logits differ (%zu, %zu)", style ? "hf" : "timm", d1, d2);
        CHECK(isfinite(t.upload_ms) && t.upload_ms >= 0 && isfinite(t.preprocess_ms) && t.preprocess_ms > 0 &&
              isfinite(t.forward_ms) && t.forward_ms > 0, "timing not filled: %g %g %g", t.upload_ms,
              t.preprocess_ms, t.forward_ms);
    }

    /* refusals, each followed by a good call that must still match the CPU preprocessing */
    swin_preprocess_params p = swin_preprocess_params_from_config(cfg);
    CHECK(swin_forward_images(s, &p, imgs, N, SWIN_PRE_DEVICE_CPU, cpu, NULL) == SWIN_OK, "cpu: %s",
          swin_last_error());
    swin_image zero_w[N] = {imgs[0], imgs[1], imgs[2]}, five[MAXB + 1] = {imgs[0], imgs[1], imgs[2], imgs[0], imgs[1]};
    zero_w[1].width = 0;
    swin_preprocess_params p57 = p, std0 = p;
    p57.size = 57;
    std0.std[2] = 0.0f;
    const struct {
        const char *what;
        const swin_preprocess_params *p;
        const swin_image *imgs;
        int n;
        const char *expect;
    } cases[] = {
        {"image of width 0", &p, zero_w, N, "empty"},
        {"size 57 for a 56 model", &p57, imgs, N, "model takes"},
        {"batch over the max", &p, five, MAXB + 1, "out of range"},
        {"std 0", &std0, imgs, N, "mean/std"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        swin_status st = swin_forward_images(s, cases[i].p, cases[i].imgs, cases[i].n, SWIN_PRE_DEVICE_GPU, gpu, NULL);
        printf("refused %-32s -> %s\n", cases[i].what, swin_last_error());
        CHECK(st == SWIN_ERR_ARGUMENT && strstr(swin_last_error(), cases[i].expect),
              "%s: status %d, message '%s'", cases[i].what, (int)st, swin_last_error());
        st = swin_forward_images(s, &p, imgs, N, SWIN_PRE_DEVICE_GPU, again, NULL);
        size_t first = 0;
        CHECK(st == SWIN_OK && count_diff(again, cpu, (size_t)N * classes, &first) == 0,
              "good call after '%s': %s", cases[i].what, st == SWIN_OK ? "logits differ" : swin_last_error());
    }
    if (pinned) swin_session_host_free(s, pinned);
    swin_session_free(s);

    /* GPU preprocessing on a CPU session */
    o = swin_session_options_default();
    if (CHECK(swin_session_create(m, &o, &s) == SWIN_OK, "cpu session: %s", swin_last_error())) {
        swin_status st = swin_forward_images(s, &p, imgs, 1, SWIN_PRE_DEVICE_GPU, gpu, NULL);
        CHECK(st == SWIN_ERR_ARGUMENT, "GPU preprocessing on a CPU session: status %d", (int)st);
        swin_session_free(s);
    }
}

/* the engine-level entry: an empty image is refused, and a good call works right after */
static void test_engine_refusals(swin_engine *e, const batch *syn) {
    swin_preprocess_params p;
    memset(&p, 0, sizeof p);
    p.style = SWIN_PRE_TIMM, p.interp = SWIN_INTERP_BILINEAR, p.size = 64, p.crop_pct = 0.9f;
    memcpy(p.mean, NORMS[0].mean, sizeof p.mean);
    memcpy(p.std, NORMS[0].std, sizeof p.std);
    dev_out out = out_alloc(swin_preprocess_floats(&p) * 2);
    swin_image two[2] = {syn->img[5], syn->img[6]};
    two[0].width = 0;
    swin_status st = swin_engine_preprocess_images(e, &p, two, 2, out.p);
    CHECK(st == SWIN_ERR_ARGUMENT && strstr(swin_last_error(), "image 0 is empty"), "engine: width 0: status %d, '%s'",
          (int)st, swin_last_error());
    two[0].width = syn->img[5].width;
    two[1].rgb = NULL;
    st = swin_engine_preprocess_images(e, &p, two, 2, out.p);
    CHECK(st == SWIN_ERR_ARGUMENT, "engine: NULL pixels: status %d", (int)st);
    two[1].rgb = syn->img[6].rgb;
    p.interp = (swin_interp)7;
    st = swin_engine_preprocess_images(e, &p, two, 2, out.p);
    CHECK(st == SWIN_ERR_ARGUMENT && strstr(swin_last_error(), "interpolation"), "engine: interp 7: status %d, '%s'",
          (int)st, swin_last_error());
    p.interp = SWIN_INTERP_BILINEAR;
    st = swin_engine_preprocess_images(e, &p, two, 2, out.p);
    float *host = malloc(out.n * sizeof(float));
    CHECK(st == SWIN_OK && out_download(&out, host), "engine: good call after refusals: %s", swin_last_error());
    free(host);
    out_free(&out);
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : ".";
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev == 0) {
        printf("test_gpu_preprocess: skipped, no usable GPU (%s)\n", ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        return TU_SKIP;
    }
    swin_model *m = NULL;
    if (!CHECK(make_model(&m) == SWIN_OK, "model: %s", swin_last_error())) return tu_finish("test_gpu_preprocess");
    swin_session_options o = swin_session_options_default();
    o.device = SWIN_DEVICE_CUDA;
    swin_engine *e = NULL;
    swin_status st = swin_engine_create(m, &o, &e);
    if (st == SWIN_ERR_NO_DEVICE) {
        printf("test_gpu_preprocess: skipped: %s\n", swin_last_error());
        swin_model_free(m);
        return TU_SKIP;
    }
    if (CHECK(st == SWIN_OK, "engine: %s", swin_last_error())) {
        static batch fix, syn;
        char dir[2048];
        snprintf(dir, sizeof dir, "%s/tests/data/preprocess", root);
        load_fixtures(dir, &fix);
        tu_seed(20240611);
        make_synthetic(&syn);
        if (fix.n) compare_grid(e, "fixtures", &fix);
        compare_grid(e, "synthetic", &syn);
        for (int k = 0; k < SEEN_COUNT; k++) {
            printf("path    %-16s %6ld image runs\n", SEEN_NAME[k], g_seen[k]);
            CHECK(g_seen[k] > 0, "path '%s' never exercised", SEEN_NAME[k]);
        }
        printf("parts   %ld image runs on a part of the image, all identical to the whole image's output\n",
               g_part_runs);
        CHECK(g_part_runs > 100, "only %ld runs on parts", g_part_runs);
        if (fix.n) test_device_pixels(e, &fix);
        test_op();
        test_engine_refusals(e, &syn);
        test_session(m, &syn);
        batch_free(&fix);
        batch_free(&syn);
        swin_engine_free(e);
    }
    swin_model_free(m);
    return tu_finish("test_gpu_preprocess");
}
