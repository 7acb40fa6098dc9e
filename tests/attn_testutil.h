/* attn_testutil.h - what the tests of the fused attention kernels that take a whole block
 * (test_gpu_attention_qkv.c, test_gpu_attention_proj.c) share: a case's geometry and its
 * swin_dims, uploads in a 16-bit dtype, and their timings' tables and paired runs. Header-only
 * (static functions); needs testutil.h and testutil_cuda.h before it. */
#ifndef SWIN_ATTN_TESTUTIL_H
#define SWIN_ATTN_TESTUTIL_H

#include "layers.h"

/* a grid of res_h x res_w tokens, windows, shift, SwinV1/V2, heads of 32 channels (C = 32 heads),
 * B images, with or without the projections' biases */
typedef struct {
    int res_h, res_w, win_h, win_w, shift_h, shift_w, version, heads, B, has_bias;
    int quick;   /* part of the SWIN_TEST_QUICK subset */
} attn_case;

/* the case's dims, the grid padded up to a multiple of the window (timm's order) */
static inline swin_dims attn_case_dims(const attn_case *c) {
    swin_dims d = swin_dims_square(c->B, c->res_h, 32 * c->heads, c->heads, 32, c->win_h, c->shift_h, c->version,
                                   1e-5f);
    d.res_w = c->res_w, d.win_w = c->win_w, d.shift_w = c->shift_w;
    d.hp = (c->res_h + c->win_h - 1) / c->win_h * c->win_h;
    d.wp = (c->res_w + c->win_w - 1) / c->win_w * c->win_w;
    return d;
}

/* n values of f, converted to the 16-bit dtype dt (scratch: n halves), into device memory d */
static inline void upload_dt(void *d, const float *f, size_t n, int dt, void *scratch) {
    tu_to_dtype(scratch, f, n, dt);
    CUDA_OK(cudaMemcpy(d, scratch, n * 2, cudaMemcpyHostToDevice));
}

/* the timings' tables in device memory: a random relative-position bias table ((2W - 1)^2 x heads,
 * through the host scratch f) and 12 head scales of 0.18 */
static inline void attn_bench_tables(int W, int heads, float *f, float **d_bias, float **d_scale) {
    const size_t nbias = (size_t)(2 * W - 1) * (2 * W - 1) * heads;
    float scale[12];
    for (int i = 0; i < 12; i++) scale[i] = 0.18f;
    CUDA_OK(cudaMalloc((void **)d_bias, nbias * 4));
    CUDA_OK(cudaMalloc((void **)d_scale, sizeof scale));
    tu_fill(f, nbias, -2.0f, 2.0f);
    CUDA_OK(cudaMemcpy(*d_bias, f, nbias * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(*d_scale, scale, sizeof scale, cudaMemcpyHostToDevice));
}

/* the medians (ms, tu_time_enqueue) of run with *which = 0, then 1, into t[0], t[1]; a failed
 * call fails the test */
static inline void attn_time_pair(tu_enqueue_fn run, void *ctx, int *which, cudaStream_t st, float t[2]) {
    int err[2];
    for (int k = 0; k < 2; k++) *which = k, t[k] = tu_time_enqueue(run, ctx, st, &err[k]);
    CHECK(!err[0] && !err[1], "timing: %s", swin_last_error());
}

static const char *const attn_dt_name[] = {"f32", "f16", "bf16"};
/* relative to max|ref|: fp32 sums of values rounded to the dtype, only the sums' order differing */
static const double attn_dt_tol[] = {1e-5, 2e-3, 1.6e-2};

#endif
