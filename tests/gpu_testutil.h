/* gpu_testutil.h - helpers for the GPU kernel tests (test_gpu_kernels.c, test_gpu_gemm.c):
 * skip without a device, device buffers in a swin_dtype with a guard zone after the data,
 * upload/download through host fp32 with f16/bf16 conversion, NaN poisoning, and the comparison
 * that prints one line per case. Header-only (static functions); needs testutil.h.
 */
#ifndef SWIN_GPU_TESTUTIL_H
#define SWIN_GPU_TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "testutil.h"

#define TG_GUARD 256          /* bytes after every buffer, filled with TG_GUARD_BYTE */
#define TG_GUARD_BYTE 0xA5

static const char *const tg_dt_name[3] = {"f32", "f16", "bf16"};
/* tolerance relative to max|ref| for results computed in fp32 and stored in the dtype */
static const double tg_tol[3] = {1e-5, 2e-3, 1.6e-2};

/* 1 when a GPU is usable; else prints why (the caller returns TU_SKIP). */
static inline int tg_have_gpu(const char *suite) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("%s: skipped, no usable GPU (%s)\n", suite, e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 0;
    }
    return 1;
}

static inline int tg_quick(void) {
    const char *q = getenv("SWIN_TEST_QUICK");
    return q && q[0] == '1';
}

typedef struct {
    void *p;
    size_t n;   /* elements */
    int dt;     /* 0 f32, 1 f16, 2 bf16 (swin_dtype) */
} tg_buf;

static inline size_t tg_es(int dt) { return dt == 0 ? 4 : 2; }

static inline tg_buf tg_alloc(size_t n, int dt) {
    tg_buf b = {NULL, n, dt};
    if (cudaMalloc(&b.p, n * tg_es(dt) + TG_GUARD) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc of %zu bytes failed\n", n * tg_es(dt) + TG_GUARD);
        exit(1);
    }
    cudaMemset((char *)b.p + n * tg_es(dt), TG_GUARD_BYTE, TG_GUARD);
    return b;
}

static inline void tg_free(tg_buf *b) {
    cudaFree(b->p);
    b->p = NULL;
}

static inline void tg_upload(tg_buf *b, const float *x) {
    size_t bytes = b->n * tg_es(b->dt);
    void *h = malloc(bytes ? bytes : 1);
    if (b->dt == 0) memcpy(h, x, bytes);
    for (size_t i = 0; b->dt && i < b->n; i++)
        ((uint16_t *)h)[i] = b->dt == 1 ? tu_f32_to_f16(x[i]) : tu_f32_to_bf16(x[i]);
    cudaMemcpy(b->p, h, bytes, cudaMemcpyHostToDevice);
    free(h);
}

static inline void tg_download(const tg_buf *b, float *x) {
    size_t bytes = b->n * tg_es(b->dt);
    void *h = malloc(bytes ? bytes : 1);
    cudaMemcpy(h, b->p, bytes, cudaMemcpyDeviceToHost);
    if (b->dt == 0) memcpy(x, h, bytes);
    for (size_t i = 0; b->dt && i < b->n; i++)
        x[i] = b->dt == 1 ? tu_f16_to_f32(((uint16_t *)h)[i]) : tu_bf16_to_f32(((uint16_t *)h)[i]);
    free(h);
}

/* all bits set: a NaN in f32, f16 and bf16 */
static inline void tg_poison(tg_buf *b) { cudaMemset(b->p, 0xFF, b->n * tg_es(b->dt)); }

/* 1 when the guard zone after the data is untouched */
static inline int tg_guard_ok(const tg_buf *b) {
    unsigned char g[TG_GUARD];
    cudaMemcpy(g, (const char *)b->p + b->n * tg_es(b->dt), TG_GUARD, cudaMemcpyDeviceToHost);
    for (int i = 0; i < TG_GUARD; i++)
        if (g[i] != TG_GUARD_BYTE) return 0;
    return 1;
}

/* Synchronise; 1 when no CUDA error is pending (printed otherwise). */
static inline int tg_sync_ok(const char *what) {
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

/* Compare got with ref over n: max|got-ref| / max|ref| <= tol (tol 0: bit-exact values). NaN or
 * Inf never passes. Prints one line; returns 1 on pass. */
static inline int tg_compare(const char *name, const float *got, const float *ref, size_t n, double tol) {
    double diff = tu_max_abs_diff(got, ref, n), scale = tu_max_abs(ref, n);
    double err = tol == 0 ? diff : diff / (scale > 1e-30 ? scale : 1e-30);
    int ok = err <= tol && isfinite(err);
    printf("%s %-44s err %.3g (tol %.3g, max|ref| %.3g)\n", ok ? "ok  " : "FAIL", name, err, tol, scale);
    return CHECK(ok, "%s: error %.3g above %.3g", name, err, tol);
}

#endif
