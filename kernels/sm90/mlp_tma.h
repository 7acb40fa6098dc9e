/* mlp_tma.h - the persistent TMA one-kernel MLP of mlp_tma.cu, called by mlp_wgmma.cu's entry
 * swin_mlp_wgmma_cuda (which checks the arguments: swin_mlp_wgmma_supports) for the shapes of
 * swin_mlp_tma_supports unless SWIN_MLP_TMA=0 or the driver encodes no tensor maps. */
#ifndef SWIN_MLP_TMA_H
#define SWIN_MLP_TMA_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 for the shapes the kernel is built for: C 96, 128 or 192 and H = 4 C (Swin's MLP ratio) */
int swin_mlp_tma_supports(int M, int C, int H);
/* out [M, C] = gelu(in @ w1^T + b1) @ w2^T + b2 (+ res); fp16 / bf16, the shapes of
 * swin_mlp_tma_supports; in, w1, w2 16-byte aligned (gemm.h's swin_mlp_wgmma_cuda) */
swin_status swin_mlp_tma_cuda(void *out, const void *in, const void *w1, const void *b1, const void *w2, const void *b2,
                              const void *res, int M, int C, int H, swin_dtype dt, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif
