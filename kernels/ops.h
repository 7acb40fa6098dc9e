/* ops.h - CUDA ops of the Swin forward pass (C-callable; implemented in the kernels/ .cu files).
 *
 * Each op mirrors its CPU counterpart in src/layers.h: same arguments and shapes, device pointers,
 * activations in the session dtype `dt`, LayerNorm parameters, bias tables and scales in fp32,
 * the stream last. Each op validates its arguments (returns SWIN_ERR_ARGUMENT with a message),
 * launches, and checks the launch (SWIN_ERR_CUDA naming the kernel). Three levels per file:
 * a static __global__ kernel, a launcher choosing grid/block, and the op entry below.
 */
#ifndef SWIN_OPS_H
#define SWIN_OPS_H

#include <cuda_runtime_api.h>
#include "../src/layers.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SWIN_DT_F32 = 0, SWIN_DT_F16 = 1, SWIN_DT_BF16 = 2 } swin_dtype;
static inline size_t swin_dtype_size(swin_dtype dt) { return dt == SWIN_DT_F32 ? 4 : 2; }

/* When set (env SWIN_CUDA_SYNC=1 at session creation), every op synchronises after its launch
 * so that an asynchronous fault is reported by the op that caused it. */
extern int swin_cuda_debug_sync;

/* ---- conversions */
/* dst[n] (dt_dst) <- src[n] (dt_src) */
swin_status swin_convert_cuda(void *dst, swin_dtype dt_dst, const void *src, swin_dtype dt_src,
                              size_t n, cudaStream_t st);

/* ---- activation (kernels/act.cu): x[n] = GELU(x) (exact erf form) (+ residual[n] when not NULL;
 * residual must not alias x). swin_linear_cuda uses it for SWIN_ACT_GELU. */
swin_status swin_gelu_cuda(void *x, const void *residual, size_t n, swin_dtype dt, cudaStream_t st);

/* ---- norms (kernels/layernorm.cu) */
swin_status swin_layernorm_cuda(void *out, const void *in, const float *ln_w, const float *ln_b,
                                int rows, int C, float eps, swin_dtype dt, cudaStream_t st);
swin_status swin_layernorm_residual_cuda(void *x, const void *y, const float *ln_w, const float *ln_b,
                                         int rows, int C, float eps, swin_dtype dt, cudaStream_t st);
swin_status swin_ln_pool_cuda(void *out, const void *x, const float *ln_w, const float *ln_b,
                              int B, int L, int C, float eps, swin_dtype dt, cudaStream_t st);

/* ---- window layout (kernels/window.cu); ln_w == NULL means no norm */
swin_status swin_ln_shift_partition_cuda(void *win, const void *x, const float *ln_w, const float *ln_b,
                                         const swin_dims *d, swin_dtype dt, cudaStream_t st);
swin_status swin_window_reverse_residual_cuda(void *x, const void *win, const float *ln_w,
                                              const float *ln_b, const swin_dims *d, swin_dtype dt,
                                              cudaStream_t st);
/* x += roll(reverse(win), +shift); out = LN(x) (V1: attention residual then norm2, one pass) */
swin_status swin_window_reverse_residual_ln_cuda(void *x, void *out, const void *win, const float *ln_w,
                                                 const float *ln_b, const swin_dims *d, swin_dtype dt,
                                                 cudaStream_t st);

/* ---- patch embedding and merging (kernels/patch.cu) */
/* img is fp32 [B,3,H,W]; cols in dt */
swin_status swin_im2col_patch_cuda(void *cols, const float *img, int B, int H, int W, int p,
                                   swin_dtype dt, cudaStream_t st);
/* pos is in dt */
swin_status swin_add_pos_cuda(void *x, const void *pos, int B, int L, int C, swin_dtype dt, cudaStream_t st);
swin_status swin_merge_gather_cuda(void *out, const void *x, const float *ln_w, const float *ln_b,
                                   int B, int res, int C, float eps, swin_dtype dt, cudaStream_t st);

/* ---- window attention (kernels/attention.cu) */
typedef enum { SWIN_ATTN_IMPL_FUSED = 0, SWIN_ATTN_IMPL_UNFUSED = 1 } swin_attn_impl;
/* Workspace bytes the unfused path needs for this geometry (0 for fused). */
size_t swin_window_attention_workspace(const swin_dims *d, swin_dtype dt, swin_attn_impl impl);
/* out [B*nW, N, C] <- qkv [B*nW, N, 3C]; bias_table [(2W-1)^2, heads] fp32; scale [heads] fp32.
 * cublas: a cublasHandle_t (as void *) for the unfused path, NULL for fused. */
swin_status swin_window_attention_cuda(void *out, const void *qkv, const float *bias_table,
                                       const float *scale, const swin_dims *d, swin_dtype dt,
                                       swin_attn_impl impl, void *workspace, void *cublas,
                                       cudaStream_t st);

#ifdef __cplusplus
}
#endif
#endif
