/* attn_testutil.h - what the tests of the fused attention kernels that take a whole block
 * (test_gpu_attention_qkv.c, test_gpu_attention_proj.c) share: a case's geometry and its
 * swin_dims, and uploads in a 16-bit dtype. Header-only (static functions); needs testutil.h and
 * testutil_cuda.h before it. */
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

static const char *const attn_dt_name[] = {"f32", "f16", "bf16"};
/* relative to max|ref|: fp32 sums of values rounded to the dtype, only the sums' order differing */
static const double attn_dt_tol[] = {1e-5, 2e-3, 1.6e-2};

#endif
