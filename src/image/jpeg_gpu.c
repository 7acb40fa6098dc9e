/* jpeg_gpu.c - Pillow-exact JPEG decoding of a batch on the GPU (see jpeg_gpu.h): the batch's
 * entropy-coded data, Huffman tables and records gathered into page-locked memory, copied to
 * the GPU, decoded by kernels/jpeg_huff.cu and kernels/jpeg_exact.cu on the decoder's stream,
 * the statuses copied back. Buffers grow with the batches and are kept between calls.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "jpeg_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

swin_status swin_jpeg_gpu_split_bits(int32_t *bits) {
    const char *v = getenv("SWIN_JPEG_GPU_SPLIT");
    if (v && *v) {
        char *e;
        const long b = strtol(v, &e, 10);
        if (*e || b < 0 || b > 0x40000000)
            return swin_fail(SWIN_ERR_ARGUMENT, "SWIN_JPEG_GPU_SPLIT='%s': expected bits of data a part, 0 to %d "
                             "(0: never split)", v, 0x40000000);
        *bits = (int32_t)b;
        return SWIN_OK;
    }
    int threads;
    int32_t min_bits;
    swin_jp_config(&threads, &min_bits);
    *bits = swin_jp_split_bits(threads, min_bits);
    return SWIN_OK;
}

#ifndef SWIN_HAVE_CUDA

swin_status swin_jpeg_gpu_create(int device_index, swin_jpeg_gpu **out) {
    (void)device_index;
    *out = NULL;
    return swin_fail(SWIN_ERR_UNSUPPORTED, "this swin was built without CUDA: no GPU JPEG decoding");
}
void swin_jpeg_gpu_free(swin_jpeg_gpu *g) { (void)g; }
swin_status swin_jpeg_gpu_decode(swin_jpeg_gpu *g, swin_nvjpeg_buffer *px, const swin_jpeg_gpu_input *in, int n,
                                 swin_nvjpeg_image *out) {
    (void)g; (void)px; (void)in; (void)n; (void)out;
    return swin_fail(SWIN_ERR_UNSUPPORTED, "this swin was built without CUDA");
}
void swin_jpeg_gpu_get_stats(const swin_jpeg_gpu *g, swin_jpeg_gpu_stats *out) {
    (void)g;
    memset(out, 0, sizeof *out);
}

#else

#include <time.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "ops.h"

typedef struct {                 /* a page-locked host buffer and its device twin */
    void *host, *dev;
    size_t cap;
} twin;

struct swin_jpeg_gpu {
    int dev;
    cudaStream_t stream;
    twin bytes, tables, recs, pxrecs, status;
    swin_nvjpeg_buffer coef, planes;   /* device only */
    int *first, first_cap;             /* [n + 1]: image i's records are first[i] .. first[i + 1] - 1 */
    int32_t split;                     /* swin_jpeg_gpu_split_bits, read at creation */
    swin_jpeg_gpu_stats stats;
};

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void twin_free(twin *t) {
    if (t->host) cudaFreeHost(t->host);
    if (t->dev) cudaFree(t->dev);
    memset(t, 0, sizeof *t);
}

/* room for bytes (an eighth more when it grows); only when nothing is in flight */
static swin_status twin_grow(twin *t, size_t bytes) {
    if (bytes <= t->cap) return SWIN_OK;
    twin_free(t);
    size_t want = bytes + bytes / 8;
    SWIN_CUDA_TRY(cudaMallocHost(&t->host, want));
    SWIN_CUDA_TRY(cudaMalloc(&t->dev, want));
    t->cap = want;
    return SWIN_OK;
}

swin_status swin_jpeg_gpu_create(int device_index, swin_jpeg_gpu **out) {
    *out = NULL;
    int32_t split;
    SWIN_TRY(swin_jpeg_gpu_split_bits(&split));   /* a bad SWIN_JPEG_GPU_SPLIT stops the start */
    swin_jpeg_gpu *g = calloc(1, sizeof *g);
    if (!g) return swin_fail(SWIN_ERR_MEMORY, "GPU JPEG decoder: out of memory");
    g->dev = device_index;
    g->split = split;
    cudaError_t e = cudaSetDevice(device_index);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(g);
        return swin_fail(SWIN_ERR_CUDA, "GPU JPEG decoder on cuda:%d: %s", device_index, cudaGetErrorString(e));
    }
    *out = g;
    return SWIN_OK;
}

void swin_jpeg_gpu_free(swin_jpeg_gpu *g) {
    if (!g) return;
    cudaSetDevice(g->dev);
    cudaStreamSynchronize(g->stream);
    twin *t[] = {&g->bytes, &g->tables, &g->recs, &g->pxrecs, &g->status};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) twin_free(t[i]);
    swin_nvjpeg_buffer_free(&g->coef);
    swin_nvjpeg_buffer_free(&g->planes);
    free(g->first);
    cudaStreamDestroy(g->stream);
    free(g);
}

void swin_jpeg_gpu_get_stats(const swin_jpeg_gpu *g, swin_jpeg_gpu_stats *out) {
    if (g) *out = g->stats;
    else memset(out, 0, sizeof *out);
}

static swin_status decode(swin_jpeg_gpu *g, swin_nvjpeg_buffer *px, const swin_jpeg_gpu_input *in, int n,
                          swin_nvjpeg_image *out) {
    SWIN_CUDA_TRY(cudaSetDevice(g->dev));
    double t0 = now_ms();
    size_t n_bytes = 0, n_coef = 0, n_plane = 0, n_rgb = 0;
    int n_tables = 0, n_rec = 0;
    for (int i = 0; i < n; i++) {
        const swin_jpeg_scan *sc = in[i].scan;
        n_bytes += (swin_jp_staged_len(&sc->img) + 3) & ~(size_t)3;   /* each image's bytes 4-byte aligned */
        n_coef += sc->n_coef, n_plane += sc->scratch_bytes;
        n_rgb += (size_t)sc->img.rec.w * sc->img.rec.h * 3, n_tables += sc->n_tables;
        n_rec += swin_jp_parts(&sc->img, g->split);
    }
    /* the previous call ended with a synchronisation: nothing of this decoder is in flight */
    SWIN_TRY(twin_grow(&g->bytes, n_bytes ? n_bytes : 1));
    SWIN_TRY(twin_grow(&g->tables, (size_t)n_tables * sizeof(swin_jh_table)));
    SWIN_TRY(twin_grow(&g->recs, (size_t)n_rec * sizeof(swin_jh_image)));
    SWIN_TRY(twin_grow(&g->pxrecs, (size_t)n * sizeof(swin_jx_image)));
    SWIN_TRY(twin_grow(&g->status, (size_t)n_rec * sizeof(int)));
    if (n + 1 > g->first_cap) {
        int *f = realloc(g->first, (size_t)(n + 1) * sizeof *f);
        if (!f) return swin_fail(SWIN_ERR_MEMORY, "GPU JPEG decoder: out of memory");
        g->first = f, g->first_cap = n + 1;
    }
    SWIN_TRY(swin_nvjpeg_buffer_reserve(&g->coef, g->dev, n_coef * sizeof(int16_t)));
    SWIN_TRY(swin_nvjpeg_buffer_reserve(&g->planes, g->dev, n_plane));
    SWIN_TRY(swin_nvjpeg_buffer_reserve(px, g->dev, n_rgb));
    uint8_t *bytes = g->bytes.host;
    swin_jh_table *tables = g->tables.host;
    swin_jh_image *recs = g->recs.host;
    swin_jx_image *pxrecs = g->pxrecs.host;
    size_t at = 0, coef = 0, plane = 0, rgb = 0;
    int t = 0, r = 0;
    for (int i = 0; i < n; i++) {
        const swin_jpeg_scan *sc = in[i].scan;
        const size_t len = swin_jp_staged_len(&sc->img);   /* staged: img.data 0, img.rst after it */
        memcpy(bytes + at, in[i].data, len);
        memcpy(tables + t, sc->tables, (size_t)sc->n_tables * sizeof *tables);
        swin_jh_image m = sc->img;
        m.data = (long long)at;
        m.rst = m.n_rst ? (long long)at + sc->img.rst : 0;
        m.table = t;
        m.rec = pxrecs[i] = swin_jpeg_record_at(&sc->img.rec, (long long)coef, (long long)plane, (long long)rgb);
        g->first[i] = r;   /* its records: one, or its parts (their interval starts rewritten in bytes) */
        r += swin_jp_split(&m, bytes, g->split, recs + r);
        at += (len + 3) & ~(size_t)3, t += sc->n_tables, coef += sc->n_coef, plane += sc->scratch_bytes;
        rgb += (size_t)sc->img.rec.w * sc->img.rec.h * 3;
    }
    double t1 = now_ms();
    g->stats.stage_ms += t1 - t0;
    cudaStream_t st = g->stream;
    SWIN_CUDA_TRY(cudaMemcpyAsync(g->bytes.dev, bytes, n_bytes, cudaMemcpyHostToDevice, st));
    SWIN_CUDA_TRY(cudaMemcpyAsync(g->tables.dev, tables, (size_t)n_tables * sizeof *tables, cudaMemcpyHostToDevice, st));
    g->first[n] = r;
    SWIN_TRY(swin_jpeg_huff_cuda((int16_t *)g->coef.dev, n_coef, g->bytes.dev, n_bytes, g->tables.dev, n_tables, recs, g->recs.dev,
                                 g->status.dev, r, st));
    SWIN_TRY(swin_jpeg_exact_cuda(px->dev, n_rgb, (const int16_t *)g->coef.dev, n_coef, g->planes.dev, n_plane, pxrecs, g->pxrecs.dev, n, st));
    SWIN_CUDA_TRY(cudaMemcpyAsync(g->status.host, g->status.dev, (size_t)r * sizeof(int), cudaMemcpyDeviceToHost, st));
    SWIN_CUDA_TRY(cudaStreamSynchronize(st));
    g->stats.gpu_ms += now_ms() - t1;
    static const char *const WHY[SWIN_JP_NO_SYNC + 1] = {"decoded", "a bad Huffman code", "a run past the 64th coefficient",
                                               "a DC value out of range", "the data ends or a marker comes early",
                                               "a restart marker missing or out of sequence",
                                               "more than the end-of-image marker after the scan",
                                               "a coefficient out of the 8-bit range",
                                               "no synchronisation of its pieces"};
    const int *rec_status = g->status.host;
    for (int i = 0; i < n; i++) {
        swin_nvjpeg_image *o = &out[i];
        memset(o, 0, sizeof *o);
        int status = SWIN_JH_OK;   /* the first failing part's */
        for (int k = g->first[i]; k < g->first[i + 1] && !status; k++) status = rec_status[k];
        if (status == SWIN_JH_OK) {
            o->ok = 1;
            o->width = pxrecs[i].w, o->height = pxrecs[i].h;
            o->rgb = px->dev + pxrecs[i].rgb;
            g->stats.images++;
        } else {
            snprintf(o->err, sizeof o->err, "%s: left to libjpeg (%s)", in[i].name,
                     status > 0 && status <= SWIN_JP_NO_SYNC ? WHY[status] : "?");
            g->stats.refused++;
        }
    }
    return SWIN_OK;
}

swin_status swin_jpeg_gpu_decode(swin_jpeg_gpu *g, swin_nvjpeg_buffer *px, const swin_jpeg_gpu_input *in, int n,
                                 swin_nvjpeg_image *out) {
    if (!g || !px || (n > 0 && (!in || !out)))
        return swin_fail(SWIN_ERR_ARGUMENT, "swin_jpeg_gpu_decode: NULL argument");
    if (n <= 0) return SWIN_OK;
    swin_status st = decode(g, px, in, n, out);
    if (st != SWIN_OK) {
        for (int i = 0; i < n; i++) {
            out[i].ok = 0;
            snprintf(out[i].err, sizeof out[i].err, "%s: GPU JPEG decoding failed: %s", in[i].name, swin_last_error());
        }
        cudaStreamSynchronize(g->stream);   /* leave nothing in flight */
    }
    return st;
}

#endif /* SWIN_HAVE_CUDA */
