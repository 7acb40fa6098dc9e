/* gemm.h - linear layers through cuBLASLt with fused epilogues (kernels/gemm.c).
 *
 *   out [M, N] = act(in [M, K] @ w [N, K]^T + bias [N]) (+ residual [M, N])
 *
 * Row-major PyTorch layouts; w and bias in the session dtype; fp32 accumulation always;
 * SWIN_TF32 allows TF32 tensor cores for fp32 data, SWIN_FP32 forbids them. Plans (descriptors
 * and the chosen algorithm) are cached per shape, so replays and graph capture do no heuristics.
 */
#ifndef SWIN_GEMM_H
#define SWIN_GEMM_H

#include <cuda_runtime_api.h>
#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct swin_gemm swin_gemm;

swin_status swin_gemm_create(swin_gemm **out, swin_precision prec, void *workspace, size_t ws_bytes);
/* Give a handle made without one its workspace (or a new one): an engine creates its cuBLAS
 * handles before it measures free memory and allocates its arena, which holds the workspace. */
swin_status swin_gemm_set_workspace(swin_gemm *g, void *workspace, size_t ws_bytes);
void swin_gemm_free(swin_gemm *g);
void *swin_gemm_cublas(swin_gemm *g);   /* the cublasHandle_t, for batched GEMMs elsewhere */
/* Build the plan of one shape ahead of time (pointers assumed 256-byte aligned, as arena slices
 * are), so that a later graph capture runs no heuristics. Optional: swin_linear_cuda builds
 * missing plans itself. */
swin_status swin_gemm_prepare(swin_gemm *g, int M, int K, int N, swin_act act, int has_bias,
                              int has_residual);

swin_status swin_linear_cuda(void *out, const void *in, const void *w, const void *bias,
                             const void *residual, int M, int K, int N, swin_act act,
                             swin_gemm *g, cudaStream_t st);

/* Which GEMM runs a linear layer with GELU (fp16 / bf16 handles; TF32 ones on Hopper's large
 * tiles only): unfused (0, the default),
 * cuBLASLt followed by the GELU op; fused (1), our tensor-core kernel with the bias and the exact
 * GELU in its epilogue (gemm_mma.cu) where the shape allows (swin_gemm_mma_supports), else the
 * former (on Hopper its large tiles on sm90/gemm_wgmma.cu). The engine's --mlp auto fuses only
 * where wgmma runs (faster there; mma.sync alone is slower); both stay selectable so that the two
 * are measured in one run (`--mlp`). */
void swin_gemm_set_fused_gelu(swin_gemm *g, int fused);
/* n device floats of 1 for FP8 calls with unscaled rows (swin_linear_fp8_cuda, in_scale NULL);
 * they must stay allocated while the handle makes such calls */
void swin_gemm_set_ones(swin_gemm *g, const float *ones, size_t n);

/* The tensor-core GEMM itself (kernels/gemm_mma.cu): out [M, N] = act(in [M, K] @ w [N, K]^T +
 * bias [N]) for fp16 / bf16, fp32 accumulation, act none or GELU (erf); bias may be NULL. */
int swin_gemm_mma_supports(swin_dtype dt, int M, int K, int N, const void *out, const void *in, const void *w,
                           const void *bias);
swin_status swin_gemm_mma_cuda(void *out, const void *in, const void *w, const void *bias, int M, int K, int N,
                               swin_act act, swin_dtype dt, cudaStream_t st);
/* the argument checks of it and of swin_gemm_wgmma_cuda (op names the caller in the message):
 * SWIN_ERR_ARGUMENT for NULLs, an unknown activation or out aliasing an input;
 * SWIN_ERR_UNSUPPORTED, naming what the kernel needs, when !supported (the caller's *_supports) */
swin_status swin_gemm_mma_check(const char *op, const char *needs, int supported, const void *out, const void *in,
                                const void *w, swin_act act, swin_dtype dt, int M, int K, int N);

/* The same GEMM on Hopper's wgmma (kernels/sm90/gemm_wgmma.cu, compute capability 9.0 only; dt
 * SWIN_DT_F32 means TF32 math on fp32 data; outputs of 2 x SMs tiles or more run on the
 * persistent TMA kernel of kernels/sm90/gemm_tma.cu unless SWIN_GEMM_TMA=0): swin_linear_cuda
 * takes it for a fused GELU layer of large tiles where available, unless SWIN_GEMM_WGMMA=0 in
 * the environment (then the mma.sync kernel, for comparison). Callable directly (the tests); SWIN_ERR_UNSUPPORTED where
 * swin_gemm_wgmma_available() says 0 or swin_gemm_wgmma_supports says no: fp16, bf16 or fp32,
 * M, K, N > 0 with K and N multiples of 8, M x K and N x K below 2^31, out, in and w 16-byte
 * aligned, bias (may be NULL) aligned to a pair of elements. */
int swin_gemm_wgmma_available(void);
int swin_gemm_wgmma_supports(swin_dtype dt, int M, int K, int N, const void *out, const void *in, const void *w,
                             const void *bias);
swin_status swin_gemm_wgmma_cuda(void *out, const void *in, const void *w, const void *bias, int M, int K, int N,
                                 swin_act act, swin_dtype dt, cudaStream_t st);
/* A 16-bit or TF32 linear layer without activation on the persistent TMA kernel of gemm_tma.cu
 * (Hopper):
 *   out [M, N] = in [M, K] @ w [N, K]^T + bias [N] (+ residual [M, N], may be out itself)
 * swin_linear_cuda takes it with SWIN_GEMM_TMA_LINEAR=1 in the environment, or with =2 where it
 * was faster than cuBLASLt's best candidate on the shape's first un-captured call (off by
 * default: Swin-T's forward was not faster, kernels/gemm.c; =1 also puts every FP8 layer with
 * unscaled rows on it) where swin_gemm_wgmma_linear_supports
 * says yes (fp16, bf16, fp32 data as TF32 (not for --precision fp32), the shapes and alignments
 * of swin_gemm_wgmma_supports, a 16-byte
 * aligned residual, neither out nor the residual an input, an output of 2 x SMs tiles or more:
 * swin_gemm_tma_wanted); the call returns SWIN_ERR_UNSUPPORTED where that says no. */
int swin_gemm_wgmma_linear_supports(swin_dtype dt, int M, int K, int N, const void *out, const void *in, const void *w,
                                    const void *bias, const void *residual);
swin_status swin_gemm_wgmma_linear_cuda(void *out, const void *in, const void *w, const void *bias,
                                        const void *residual, int M, int K, int N, swin_dtype dt, cudaStream_t st);
/* An FP8 site's linear layer on the same kernel (E4M3 operands, fp16 out and bias, fp32 column
 * scales), swin_linear_fp8_cuda with row scales of 1 (in_scale NULL):
 *   out [M, N] = (in_q [M, K] @ w_q [N, K]^T) * col_scale [N] + bias [N] (+ residual [M, N], may be out)
 * swin_linear_fp8_cuda takes it per shape (kernels/gemm.c: timed against cuBLASLt's on the
 * shape's first call, or as SWIN_GEMM_TMA_FP8 says) where swin_gemm_wgmma_linear_fp8_supports says
 * yes: Hopper with TMA, K a multiple of 16 and N of 8, M x K, M x N and N x K below 2^31, out,
 * in_q, w_q and the residual 16-byte aligned, col_scale 8, bias 4, out and the residual apart
 * from the inputs, an output of 2 x SMs tiles or more (swin_gemm_tma_wanted); the call returns
 * SWIN_ERR_UNSUPPORTED where that says no. */
int swin_gemm_wgmma_linear_fp8_supports(int M, int K, int N, const void *out, const void *in_q, const void *w_q,
                                        const float *col_scale, const void *bias, const void *residual);
swin_status swin_gemm_wgmma_linear_fp8_cuda(void *out, const uint8_t *in_q, const uint8_t *w_q, const float *col_scale,
                                            const void *bias, const void *residual, int M, int K, int N,
                                            cudaStream_t st);
/* V1's norm2 folded into the GEMMs around it (Hopper, the persistent TMA kernel of
 * kernels/sm90/gemm_tma.cu at any size; fp16 / bf16; the engine's SWIN_LN_FOLD=1, opt-in):
 *   proj_scatter: x [T, C] at token_src(r) += win [rows, C] @ w [C, C]^T + bias [C] for the window
 *     rows r of d (padding rows dropped; ops.h's reverse with the shift), rounded once; and part
 *     [ceil(C / 128), T] float pairs: each token's (mean, sum of squared deviations) of its new
 *     values over each 128-column tile (so nothing else reads x to normalise it)
 *   ln_gelu: out [T, H] = gelu(LN(x) @ w^T + bias) for the LayerNorm of part's statistics (eps),
 *     computed as rstd (x @ w_fold^T - mean colsum) + b_fold (swin_ln_fold_weights_cuda, ops.h)
 * swin_gemm_ln_fold_supports: compute capability 9.0 with TMA, fp16 / bf16, C and H multiples of
 * 8, T x C and H x C below 2^31; pointers: 16-byte aligned x, win, w, w_fold, out; bias 4-byte,
 * part, colsum and b_fold 8-byte. x must not alias win, w or part; out not x, w_fold or part.
 * The calls return SWIN_ERR_UNSUPPORTED where the GPU or the dtype cannot, SWIN_ERR_ARGUMENT for
 * the rest. */
int swin_gemm_ln_fold_supports(swin_dtype dt, int C, int H);
swin_status swin_gemm_wgmma_proj_scatter_cuda(void *x, float *part, const void *win, const void *w, const void *bias,
                                              const swin_dims *d, swin_dtype dt, cudaStream_t st);
swin_status swin_gemm_wgmma_ln_gelu_cuda(void *out, const void *x, const float *part, const void *w_fold,
                                         const float *colsum, const float *b_fold, int T, int C, int H, float eps,
                                         swin_dtype dt, cudaStream_t st);

/* V2's res-post-norm in the epilogue of the layer before it (Hopper, the persistent TMA kernel
 * of kernels/sm90/gemm_tma.cu at any size; fp16 / bf16; the engine's fc2 where a row fits a tile):
 *   x [M, N] += LN(in [M, K] @ w [N, K]^T + bias [N]), LayerNorm weight gamma and bias beta [N]
 *   (fp32) and eps: the GEMM's output rounded to the dtype, normalised in fp32 and added to x,
 *   rounded once: swin_linear_cuda then swin_layernorm_residual_cuda (ops.h) in one kernel, equal
 *   to them up to the order of the fp32 sums.
 * swin_gemm_post_ln_supports: compute capability 9.0 with TMA, fp16 / bf16, M > 0, K and N
 * multiples of 8, N <= 128, M x K, M x N and N x K below 2^31. The call also wants x, in and w
 * 16-byte aligned, bias (may be NULL) 4-byte, gamma and beta 8-byte, eps finite and > 0, x not
 * in or w; SWIN_ERR_UNSUPPORTED where the GPU, the dtype or the shape cannot, SWIN_ERR_ARGUMENT
 * for the rest. */
int swin_gemm_post_ln_supports(swin_dtype dt, int M, int K, int N);
swin_status swin_gemm_wgmma_post_ln_cuda(void *x, const void *in, const void *w, const void *bias, const float *gamma,
                                         const float *beta, float eps, int M, int K, int N, swin_dtype dt,
                                         cudaStream_t st);
/* The same on FP8 operands (an FP8 site's GEMM, as swin_linear_fp8_cuda with row scales of 1):
 *   x [M, N] (fp16) += LN((in_q [M, K] @ w_q [N, K]^T) * col_scale [N] + bias [N])
 * E4M3 in_q and w_q (16-byte aligned), col_scale fp32 (8-byte), bias fp16 (4-byte, may be NULL),
 * the GEMM's output rounded to fp16 before the LayerNorm; K a multiple of 16, N of 8, N <= 128.
 * swin_gemm_post_ln_fp8_supports: the GPU and the shape, as swin_gemm_post_ln_supports. */
int swin_gemm_post_ln_fp8_supports(int M, int K, int N);
swin_status swin_gemm_wgmma_post_ln_fp8_cuda(void *x, const uint8_t *in_q, const uint8_t *w_q, const float *col_scale,
                                             const void *bias, const float *gamma, const float *beta, float eps, int M,
                                             int K, int N, cudaStream_t st);
/* 1 where the persistent TMA kernel takes an [M, N] output by default (TMA available, at least
 * 2 x SMs tiles of 128 x 128; SWIN_GEMM_TMA and SWIN_GEMM_TMA_MIN_TILES move it: gemm_tma.cu) */
int swin_gemm_tma_wanted(int M, int N);

/* The transformer block's MLP as one kernel on Hopper (kernels/sm90/mlp_wgmma.cu, compute
 * capability 9.0), the hidden kept on chip:
 *   out [M, C] = gelu(in [M, C] @ w1 [H, C]^T + b1 [H]) @ w2 [C, H]^T + b2 [C] (+ res [M, C])
 * fp16 / bf16, fp32 accumulation, the hidden rounded to the data type after the GELU; biases may
 * be NULL, res may be NULL or out itself (no other aliasing). swin_mlp_wgmma_supports: fp16 or
 * bf16, C 96, 128 or 192, H a multiple of 128, M x C and H x C below 2^31, in, w1, w2 16-byte
 * aligned, out, biases and res 4-byte aligned; swin_mlp_wgmma_cuda returns SWIN_ERR_UNSUPPORTED
 * where that or swin_gemm_wgmma_available() says no. */
int swin_mlp_wgmma_supports(swin_dtype dt, int M, int C, int H, const void *out, const void *in, const void *w1,
                            const void *b1, const void *w2, const void *b2, const void *res);
swin_status swin_mlp_wgmma_cuda(void *out, const void *in, const void *w1, const void *b1, const void *w2,
                                const void *b2, const void *res, int M, int C, int H, swin_dtype dt, cudaStream_t st);
/* FP8 fc1 in one wgmma GEMM (Hopper), GELU and the next layer's quantisation in its epilogue:
 *   out_q [M, N] = e4m3(gelu((in_q [M, K] @ w_q [N, K]^T) * col_scale [N] + bias [N]) * out_inv)
 * E4M3 in_q, w_q and out_q (out_q must not alias them), col_scale fp32 (the weight's per-channel
 * scale times the input's scale), bias fp16 or NULL, GELU in fp32 (swin_gelu_erf16). K and N
 * multiples of 16; out_q, in_q, w_q 16-byte aligned, col_scale 8, bias 4. */
swin_status swin_gemm_wgmma_fp8_gelu_cuda(uint8_t *out_q, const uint8_t *in_q, const uint8_t *w_q,
                                          const float *col_scale, const void *bias, float out_inv, int M, int K,
                                          int N, cudaStream_t st);
/* The same without the GELU and with out_inv 1, for FP8's qkv GEMM writing attention's q, k, v in
 * E4M3 (src/cuda/engine.c): out_q = e4m3((in_q @ w_q^T) * col_scale [N] + bias [N]), where the
 * caller has folded the per-channel output scales' inverses into col_scale and bias. */
swin_status swin_gemm_wgmma_fp8_out_cuda(uint8_t *out_q, const uint8_t *in_q, const uint8_t *w_q,
                                         const float *col_scale, const void *bias, int M, int K, int N,
                                         cudaStream_t st);

/* fp32 linear layers on Hopper's TF32 tensor cores with fp32 accuracy (kernels/sm90/gemm_x3.cu:
 * each operand split into a TF32 head and tail, three TF32 products summed in fp32):
 *   out [M, N] = act(in [M, K] @ w [N, K]^T + bias [N]) (+ residual [M, N], may be out)
 * act none or GELU (erf; not with a residual); bias and residual may be NULL.
 * swin_gemm_x3_supports: compute capability 9.0, K a multiple of 4, N even, M x K and N x K below
 * 2^31, in and w 16-byte aligned, out, bias and residual 8-byte aligned, out and residual apart
 * from in and w; the call returns SWIN_ERR_UNSUPPORTED where that says no. A SWIN_FP32 handle's
 * swin_linear_cuda times it against cuBLASLt's fp32 GEMM on a shape's first call (with
 * SWIN_GEMM_TUNE=0: it where its 64 x 128 tiles fill the GPU twice) and runs the faster, unless
 * SWIN_FP32_GEMM=sgemm in the environment (cuBLASLt only, for comparison). */
int swin_gemm_x3_supports(int M, int K, int N, const void *out, const void *in, const void *w, const void *bias,
                          const void *residual, swin_act act);
swin_status swin_gemm_x3_cuda(float *out, const float *in, const float *w, const float *bias, const float *residual,
                              int M, int K, int N, swin_act act, cudaStream_t st);

/* FP8 (compute capability 8.9+; a handle made for SWIN_FP16): out [M, N] fp16 =
 * (in_q [M, K] @ w_q [N, K]^T) * w_scale[n] * in_scale[m] + bias [N] (+ residual [M, N], may alias
 * out), in_q and w_q E4M3 bytes, w_scale [N] and in_scale [M] fp32 device vectors (cuBLASLt's
 * outer-vector scaling), fp32 accumulation. K and N multiples of 16, pointers 16-byte aligned.
 * in_scale NULL: rows unscaled (cuBLASLt then reads the handle's ones, swin_gemm_set_ones, at
 * least M of them); then on Hopper the persistent TMA kernel (swin_gemm_wgmma_linear_fp8_cuda)
 * may run the layer instead, as SWIN_GEMM_TMA_FP8 says (read at swin_gemm_create): 0 never, 1
 * wherever it takes the shape, 2 (default) where it also was faster than cuBLASLt's best
 * candidate on the shape's first un-captured call (with SWIN_GEMM_TUNE=0: never); where it runs,
 * its sums stay in the tensor cores' FP8 accumulator for the whole K (about 14 bits relative to
 * the sum of |terms|; cuBLASLt promotes them to fp32 as it goes). */
swin_status swin_linear_fp8_cuda(void *out, const uint8_t *in_q, const float *in_scale, const uint8_t *w_q,
                                 const float *w_scale, const void *bias, const void *residual, int M, int K, int N,
                                 swin_gemm *g, cudaStream_t st);

#ifdef __cplusplus
}
#endif
#endif
