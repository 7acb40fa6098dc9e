/* gemm_tma.h - the persistent TMA GEMM of gemm_tma.cu, called by gemm_wgmma.cu's entries (which
 * check the arguments: the shapes and alignments of swin_gemm_wgmma_supports, FP8's of
 * swin_gemm_wgmma_fp8_gelu_cuda) when swin_gemm_tma_wanted(M, N): SWIN_GEMM_TMA is not 0, the
 * driver encodes tensor maps and the [M, N] output has enough 128 x 128 tiles (gemm_tma.cu). */
#ifndef SWIN_GEMM_TMA_H
#define SWIN_GEMM_TMA_H

#include <stdint.h>

#include "gemm.h"   /* swin_gemm_tma_wanted */

#ifdef __cplusplus
extern "C" {
#endif

/* fp16 / bf16 / fp32 (TF32 math): out [M, N] = act(in [M, K] @ w [N, K]^T + bias [N]), act none
 * or GELU */
swin_status swin_gemm_tma_cuda(void *out, const void *in, const void *w, const void *bias, int M, int K, int N,
                               swin_act act, swin_dtype dt, cudaStream_t st);
/* fp16 / bf16 / TF32 linear layers: out [M, N] = in [M, K] @ w [N, K]^T + bias [N] (+ residual [M, N],
 * 16-byte aligned, may be out itself but not an input) */
swin_status swin_gemm_tma_linear_cuda(void *out, const void *in, const void *w, const void *bias, const void *residual,
                                      int M, int K, int N, swin_dtype dt, cudaStream_t st);
/* V2's post-norm residual: x [M, N] += LN(in [M, K] @ w [N, K]^T + bias [N]) with the LayerNorm's
 * gamma, beta [N] (fp32) and eps, N <= 128 (gemm.h swin_gemm_wgmma_post_ln_cuda, which checks) */
swin_status swin_gemm_tma_post_ln_cuda(void *x, const void *in, const void *w, const void *bias, const float *gamma,
                                       const float *beta, float eps, int M, int K, int N, swin_dtype dt,
                                       cudaStream_t st);
/* the same on E4M3 operands: x (fp16) += LN((in_q @ w_q^T) * col_scale [N] + bias [N], fp16) */
swin_status swin_gemm_tma_post_ln_fp8_cuda(void *x, const uint8_t *in_q, const uint8_t *w_q, const float *col_scale,
                                           const void *bias, const float *gamma, const float *beta, float eps, int M,
                                           int K, int N, cudaStream_t st);
/* V1's proj and norm2 + fc1 with the LayerNorm between them folded away (gemm.h
 * swin_gemm_wgmma_proj_scatter_cuda, swin_gemm_wgmma_ln_gelu_cuda, which check the arguments) */
swin_status swin_gemm_tma_proj_scatter_cuda(void *x, float *part, const void *win, const void *w, const void *bias,
                                            const swin_dims *d, swin_dtype dt, cudaStream_t st);
swin_status swin_gemm_tma_ln_gelu_cuda(void *out, const void *x, const float *part, const void *w_fold,
                                       const float *colsum, const float *b_fold, int T, int C, int H, float eps,
                                       swin_dtype dt, cudaStream_t st);
/* E4M3 in, fp16 out: out = (in_q @ w_q^T) * col_scale [N] + bias [N] (+ residual [M, N], may be out;
 * gemm.h swin_gemm_wgmma_linear_fp8_cuda, which checks) */
swin_status swin_gemm_tma_linear_fp8_cuda(void *out, const uint8_t *in_q, const uint8_t *w_q, const float *col_scale,
                                          const void *bias, const void *residual, int M, int K, int N, cudaStream_t st);
/* E4M3: out_q = e4m3(gelu((in_q @ w_q^T) * col_scale + bias) * out_inv), without the GELU where
 * gelu is 0 (gemm.h swin_gemm_wgmma_fp8_gelu_cuda, swin_gemm_wgmma_fp8_out_cuda) */
swin_status swin_gemm_tma_fp8_out_cuda(uint8_t *out_q, const uint8_t *in_q, const uint8_t *w_q, const float *col_scale,
                                       const void *bias, float out_inv, int gelu, int M, int K, int N, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif
