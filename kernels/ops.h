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
#include "../src/image/jpeg_exact.h"
#include "../src/image/jpeg_par.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SWIN_DT_F32 = 0, SWIN_DT_F16 = 1, SWIN_DT_BF16 = 2 } swin_dtype;
static inline size_t swin_dtype_size(swin_dtype dt) { return dt == SWIN_DT_F32 ? 4 : 2; }

/* When set (env SWIN_CUDA_SYNC=1 at session creation), every op synchronises after its launch
 * so that an asynchronous fault is reported by the op that caused it. */
extern int swin_cuda_debug_sync;

/* 1 when the ops launch their kernels with Programmatic Dependent Launch on the current device
 * (kernels/common.cuh): SWIN_PDL unset or not 0 in the environment (read once; default on) or swin_pdl_set(1),
 * and compute capability 9.0 or newer running kernels built for it (cached per device). A CUDA
 * graph keeps the launches it was captured with. */
int swin_pdl_enabled(void);
/* Override SWIN_PDL for the launches that follow: 1 on, 0 off, -1 the environment's again.
 * For tests, between forwards (not synchronised with launches on other threads). */
void swin_pdl_set(int on);

/* ---- conversions */
/* dst[n] (dt_dst) <- src[n] (dt_src) */
swin_status swin_convert_cuda(void *dst, swin_dtype dt_dst, const void *src, swin_dtype dt_src,
                              size_t n, cudaStream_t st);

/* ---- activation (kernels/act.cu): x[n] = GELU(x) (exact erf form) (+ residual[n] when not NULL;
 * residual must not alias x). swin_linear_cuda uses it for SWIN_ACT_GELU. */
swin_status swin_gelu_cuda(void *x, const void *residual, size_t n, swin_dtype dt, cudaStream_t st);

/* The cheaper GELU formulas of the wgmma fc1 epilogue (kernels/common.cuh): Numerical Recipes'
 * erfc (its fp32 outputs) and Abramowitz & Stegun 7.1.26 (its 16-bit and E4M3 outputs); the GELU
 * op itself is erff's (swin_gelu_cuda) */
typedef enum { SWIN_GELU_ERFC = 1, SWIN_GELU_AS = 2 } swin_gelu_kind;
/* y[n] = the GELU formula `form` of x[n], fp32 (the test of each formula against float64) */
swin_status swin_gelu_form_cuda(float *y, const float *x, size_t n, swin_gelu_kind form, cudaStream_t st);

/* ---- norms (kernels/layernorm.cu) */
swin_status swin_layernorm_cuda(void *out, const void *in, const float *ln_w, const float *ln_b,
                                int rows, int C, float eps, swin_dtype dt, cudaStream_t st);
swin_status swin_layernorm_residual_cuda(void *x, const void *y, const float *ln_w, const float *ln_b,
                                         int rows, int C, float eps, swin_dtype dt, cudaStream_t st);
swin_status swin_ln_pool_cuda(void *out, const void *x, const float *ln_w, const float *ln_b,
                              int B, int L, int C, float eps, swin_dtype dt, cudaStream_t st);
/* A linear layer w [N, K] (fp32, on the device), bias [N] (dt or NULL) after a LayerNorm (gamma,
 * beta [K]) folded into weights for LN(x) w^T + bias = rstd (x w_fold^T - mean colsum) + b_fold
 * (gemm.h swin_gemm_wgmma_ln_gelu_cuda): w_fold [N, K] = dt(w diag(gamma)), colsum [N] fp32 the
 * row sums of w_fold as stored, b_fold [N] fp32 = bias + w beta. fp16 / bf16 only. */
swin_status swin_ln_fold_weights_cuda(void *w_fold, float *colsum, float *b_fold, const float *w, const void *bias,
                                      const float *gamma, const float *beta, int N, int K, swin_dtype dt,
                                      cudaStream_t st);

/* The E4M3 input of an FP8 site, written by the op whose output the site reads instead of by a
 * quantising pass of its own: q = e4m3(out * inv) of the output as stored in the 16-bit dtype
 * (bit for bit what swin_quantize_fp8_cuda of that output gives), in the output's [rows, C]
 * layout, q 8-byte aligned; keep16 = 0: the 16-bit output is not written (its only reader was the
 * quantisation). NULL: no E4M3 copy. */
typedef struct {
    uint8_t *q;
    float inv;
    int keep16;
} swin_q8_dst;

/* ---- window layout (kernels/window.cu); ln_w == NULL means no norm. Any swin_dims geometry
 * (padding tokens: zero rows in win, and in q8, dropped on the way back), as the CPU
 * counterparts. q8: the E4M3 copy of win (partition), of x (reverse), of out (reverse_ln). */
swin_status swin_ln_shift_partition_cuda(void *win, const void *x, const float *ln_w, const float *ln_b,
                                         const swin_dims *d, const swin_q8_dst *q8, swin_dtype dt,
                                         cudaStream_t st);
swin_status swin_window_reverse_residual_cuda(void *x, const void *win, const float *ln_w,
                                              const float *ln_b, const swin_dims *d, const swin_q8_dst *q8,
                                              swin_dtype dt, cudaStream_t st);
/* x += roll(reverse(win), +shift); out = LN(x) (V1: attention residual then norm2, one pass) */
swin_status swin_window_reverse_residual_ln_cuda(void *x, void *out, const void *win, const float *ln_w,
                                                 const float *ln_b, const swin_dims *d, const swin_q8_dst *q8,
                                                 swin_dtype dt, cudaStream_t st);

/* ---- patch embedding and merging (kernels/patch.cu) */
/* img is fp32 [B,3,H,W]; cols [B*gh*gw, 3*p*p] in dt; pixels outside the image read as 0 */
swin_status swin_im2col_patch_cuda(void *cols, const float *img, int B, int H, int W, int p, int gh, int gw,
                                   swin_dtype dt, cudaStream_t st);
/* The first three in one kernel (kernels/patch_embed.cu): x [B*(H/4)*(W/4), C] = LN(im2col(img) @
 * w^T + bias), with the three ops' roundings (cols and the linear's output rounded to dt); w dt
 * [C, 48], bias dt [C] or NULL, ln_w / ln_b fp32 [C]. Where supports says so: fp16 / bf16, patch
 * 4, H and W multiples of 4, W <= 512, C a multiple of 16 up to 256 (else SWIN_ERR_UNSUPPORTED). */
int swin_patch_embed_supports(int p, int H, int W, int C, swin_dtype dt);
swin_status swin_patch_embed_cuda(void *x, const float *img, const void *w, const void *bias, const float *ln_w,
                                  const float *ln_b, int B, int H, int W, int C, float eps, swin_dtype dt,
                                  cudaStream_t st);
/* pos is in dt */
swin_status swin_add_pos_cuda(void *x, const void *pos, int B, int L, int C, swin_dtype dt, cudaStream_t st);
/* x [B, H, W, C] -> out [B*ceil(H/2)*ceil(W/2), 4C]; an odd grid reads zeros past its edge;
 * q8: out's E4M3 copy (the reduction's input), or NULL */
swin_status swin_merge_gather_cuda(void *out, const void *x, const float *ln_w, const float *ln_b,
                                   int B, int H, int W, int C, float eps, const swin_q8_dst *q8, swin_dtype dt,
                                   cudaStream_t st);

/* ---- window attention (kernels/attention.cu) */
/* FUSED: one kernel (tensor cores for fp16/bf16, true fp32 for fp32 data); UNFUSED: cuBLAS around
 * a materialised score tensor; TF32: fp32 data on TF32 tensor cores where that kernel takes the
 * geometry, else as FUSED (precision tf32); X3: fp32 data with fp32 accuracy on the TF32 tensor
 * cores (3xTF32) where that kernel takes the geometry, else as FUSED (precision fp32) */
typedef enum {
    SWIN_ATTN_IMPL_FUSED = 0,
    SWIN_ATTN_IMPL_UNFUSED = 1,
    SWIN_ATTN_IMPL_TF32 = 2,
    SWIN_ATTN_IMPL_X3 = 3
} swin_attn_impl;
/* Workspace bytes the unfused path needs for this geometry (0 for fused). */
size_t swin_window_attention_workspace(const swin_dims *d, swin_dtype dt, swin_attn_impl impl);
/* out [B*nW, N, C] <- qkv [B*nW, N, 3C]; bias_table [(2Wh-1)*(2Ww-1), heads] fp32; scale [heads] fp32.
 * q8: out's E4M3 copy (proj's FP8 input) or NULL; the fp16/bf16 fused kernels write it with out
 * (keep16 0: instead of out), the other paths quantise out after the attention.
 * cublas: a cublasHandle_t (as void *) for the unfused path, NULL for fused. */
swin_status swin_window_attention_cuda(void *out, const void *qkv, const float *bias_table,
                                       const float *scale, const swin_dims *d, swin_dtype dt,
                                       swin_attn_impl impl, const swin_q8_dst *q8, void *workspace, void *cublas,
                                       cudaStream_t st);
/* The fused fp16 attention (V1) on q, k, v stored in E4M3 (FP8's qkv GEMM,
 * swin_gemm_wgmma_fp8_out_cuda): qkv_q [B*nW, N, 3C] E4M3 bytes, deq [3C] their scales as
 * src/fp8.h swin_fp8_qkv_scales makes them. Head h's factor f = deq[h hd] deq[C + h hd] (its first
 * channel's q and k scales); the scores are f (q bytes . k bytes), summed by FP8 MMAs (exact products,
 * fp32 sums), then scale, bias and mask as swin_window_attention_cuda's fp16 kernel applies them
 * (it with scale[h] f and q, k the bytes' values computes the same); v is dequantised (e4m3 *
 * deq[2C + channel] in fp16, the scale rounded to fp16) for P V; out fp16 (and q8 as there). Only
 * where swin_window_attention_e4m3_supports: V1, head_dim 32, windows of 49 to 64 tokens (7x7,
 * 8x8), C a multiple of 16, fp16, a GPU with FP8 MMAs (compute capability 8.9 or later), the head
 * kernel not switched off (SWIN_ATTN_HEAD). */
int swin_window_attention_e4m3_supports(const swin_dims *d, swin_dtype dt);
swin_status swin_window_attention_e4m3_cuda(void *out, const uint8_t *qkv_q, const float *deq,
                                            const float *bias_table, const float *scale, const swin_dims *d,
                                            const swin_q8_dst *q8, cudaStream_t st);

/* The same attention with the qkv projection computed inside it (one kernel, q, k and v never
 * stored): out [B*nW, N, C] <- attention(x W^T + b), x [B*nW, N, C] the windows' rows (the qkv
 * GEMM's input), W [3C, C] and b [3C] (or NULL) in dt; out must not overlap x. fp16 / bf16 with
 * head_dim 32, windows of 49 to 64 tokens and C 96, 128, 192, 256, 384 or 512
 * (swin_window_attention_qkv_supports says whether d is one); SWIN_ERR_UNSUPPORTED otherwise. q8
 * as above. swin_window_attention_qkv_one_wave: 1 where the kernel would give every (window, head)
 * of d a CTA of its own on the current GPU, all resident at once (0 where not, or unsupported). */
int swin_window_attention_qkv_supports(const swin_dims *d, swin_dtype dt);
int swin_window_attention_qkv_one_wave(const swin_dims *d, swin_dtype dt);
swin_status swin_window_attention_qkv_cuda(void *out, const void *x, const void *w, const void *b,
                                           const float *bias_table, const float *scale, const swin_dims *d,
                                           swin_dtype dt, const swin_q8_dst *q8, cudaStream_t st);
/* The same with the window partition inside too: x [B, H, W, C] is the image (d's grid), and the
 * kernel gathers each window's rows from it as swin_ln_shift_partition_cuda lays them out (the
 * shift, padding tokens as zero rows), normalised with ln_w / ln_b (fp32 [C], 16-byte aligned;
 * V1's norm1, bit for bit that op's output) or, both NULL, as they are (V2). Replaces
 * swin_ln_shift_partition_cuda + swin_window_attention_qkv_cuda; the same geometries. */
swin_status swin_ln_window_attention_qkv_cuda(void *out, const void *x, const float *ln_w, const float *ln_b,
                                              const void *w, const void *b, const float *bias_table,
                                              const float *scale, const swin_dims *d, swin_dtype dt,
                                              const swin_q8_dst *q8, cudaStream_t st);
/* The block's attention half in one kernel: the above, then proj, the window reverse, the residual
 * and the LayerNorm beside it (kernels/attention_proj.cuh; a window's heads run as a thread-block
 * cluster, so compute capability 9.0 and heads <= 16 where the GPU allows that cluster size):
 *   V1: x[t] += proj(attn)[r], ln_out[t] = LN(x[t]) (norm2); xw: the windows' rows
 *       (swin_ln_shift_partition_cuda's output, norm1 applied), apart from x and ln_out
 *   V2: x[t] += LN(proj(attn)[r]) (norm1, res-post-norm); xw NULL: the rows are gathered from x
 * with w, b the qkv projection's (as above), p->w [C, C] and p->b [C] (or NULL) proj's, in dt;
 * p->ln_w / ln_b fp32 [C]; x, ln_out, p->w, ln_w, ln_b 16-byte aligned. The same results as the
 * unfused ops to dt's precision (not bit for bit: the sums' order). SWIN_ERR_UNSUPPORTED where
 * swin_window_attention_proj_supports(d, dt) is 0. */
typedef struct {
    void *x;                    /* [B, H, W, C]: the block's input, the residual, updated in place */
    void *ln_out;               /* V1: LN(x) [B, H, W, C]; V2: unused (NULL) */
    const void *w, *b;          /* proj */
    const float *ln_w, *ln_b;   /* V1: norm2; V2: norm1 */
} swin_attn_epilogue;
int swin_window_attention_proj_supports(const swin_dims *d, swin_dtype dt);
/* 1 where every cluster of the kernel would take one window of d, all resident at once */
int swin_window_attention_proj_one_wave(const swin_dims *d, swin_dtype dt);
swin_status swin_window_attention_proj_cuda(const swin_attn_epilogue *p, const void *xw, const void *w, const void *b,
                                            const float *bias_table, const float *scale, const swin_dims *d,
                                            swin_dtype dt, cudaStream_t st);

/* ---- FP8 E4M3 (kernels/fp8.cu), the arithmetic of src/fp8.h; e4m3() rounds to nearest even and
 * saturates to +-448 (NaN stays NaN). */
/* *amax = max(*amax, max |x[0..n)|) (device float, atomically; a NaN wins) */
swin_status swin_amax_cuda(float *amax, const void *x, size_t n, swin_dtype dt, cudaStream_t st);
/* q[i] = e4m3(x[i] * inv_scale), and the same after the exact GELU */
swin_status swin_quantize_fp8_cuda(uint8_t *q, const void *x, size_t n, float inv_scale, swin_dtype dt,
                                   cudaStream_t st);
swin_status swin_gelu_quantize_fp8_cuda(uint8_t *q, const void *x, size_t n, float inv_scale, swin_dtype dt,
                                        cudaStream_t st);
/* y[i] = dt(e4m3(f(x[i]) * (1 / scale)) * scale), f = GELU when gelu, else identity; y != x */
swin_status swin_qdq_fp8_cuda(void *y, const void *x, size_t n, float scale, int gelu, swin_dtype dt,
                              cudaStream_t st);
/* fp32 weights w [N, K] -> q [N, K] E4M3 and ws [N] (per output channel, src/fp8.h); deq (dt
 * [N, K], may be NULL) = q * ws */
swin_status swin_fp8_weights_cuda(uint8_t *q, float *ws, void *deq, const float *w, int N, int K, swin_dtype dt,
                                  cudaStream_t st);
/* amax[n] = max(amax[n], max over m of |x[m, n]|), x [M, N] in dt (per output channel; a NaN wins) */
swin_status swin_col_amax_cuda(float *amax, const void *x, int M, int N, swin_dtype dt, cudaStream_t st);
/* FP8's qkv GEMM with E4M3 outputs of per-channel scales deq [n] (src/fp8.h): its column scales
 * cs[i] = wsx[i] / deq[i] and fp16 bias bq[i] = b[i] / deq[i] (b fp16 or NULL: 0) */
swin_status swin_fp8_fold_out_cuda(float *cs, void *bq, const float *wsx, const void *b, const float *deq, int n,
                                   cudaStream_t st);
/* dst[i] = src[i] * s, or s where src is NULL (fill), i < n */
swin_status swin_scale_vec_cuda(float *dst, const float *src, float s, int n, cudaStream_t st);

/* ---- image preprocessing (kernels/preprocess.cu): RGB8 images of any sizes -> the model input
 * out [n, 3, S, S] fp32, bit-identical to swin_preprocess_image (src/image/preprocess.c).
 * Every image comes with a record (below) made on the host from its swin_resize_plan
 * (src/image/resize.h), and the plan's coefficient blocks packed into one int32 array, so the GPU
 * applies exactly the CPU's fixed-point weights. Pass 1 writes the RGB8 intermediate of images
 * that have one into tmp; pass 2 does the second resize pass (or the nearest lookup, or a copy),
 * the crop/pad (0 outside the resized image), the normalisation and the CHW layout.
 * Records hold byte / element offsets, not pointers, so a caller whose pixels are already on the
 * device (a GPU decoder) packs them the same way: src is any device buffer. */
typedef enum { SWIN_PRE_NEAREST = 0, SWIN_PRE_H_FIRST = 1, SWIN_PRE_V_FIRST = 2 } swin_pre_mode;

typedef struct {
    long long src;            /* byte offset in src of the image's RGB8 pixels [h, w, 3] */
    long long tmp;            /* byte offset in tmp of its intermediate (swin_pre_tmp_pixels * 3 bytes) */
    long long coef_h, coef_v; /* int32 offsets in coef of the plan's h and v axis blocks
                               * ([first | count | k], swin_resize_axis.len values; unused: 0) */
    int w, h;                 /* source size */
    int wx0, wy0;             /* output pixel (x, y) is resized pixel (wx0 + x, wy0 + y) */
    int ix0, ix1, iy0, iy1;   /* the visible part of the window (resized coordinates) */
    int mode;                 /* swin_pre_mode: nearest, or the filters' pass order */
    int need_h, need_v;       /* filters: the pass along that axis runs (else a copy) */
    int r0, r1, c0, c1;       /* filters: the intermediate's source rows (H_FIRST) / columns (V_FIRST) */
    int ksize_h, ksize_v;     /* filters: row stride of each axis's weights */
} swin_pre_image;

typedef struct {
    int n, size;                  /* images; output side S */
    swin_preprocess_style style;  /* SWIN_PRE_TIMM or SWIN_PRE_HF: how u8 becomes [0, 1] */
    float mean[3], std[3];
    const swin_pre_image *img;    /* host [n] */
    const int32_t *coef;          /* host [n_coef] (may be NULL when n_coef is 0) */
    size_t n_coef;
} swin_pre_batch;

#ifdef __CUDACC__
#define SWIN_PRE_HD __host__ __device__
#else
#define SWIN_PRE_HD
#endif

/* Pixels of an image's intermediate: the horizontal pass of rows [r0, r1) (H_FIRST with need_h),
 * or the vertical pass of columns [c0, c1) (V_FIRST); 0 when there is none (the second pass then
 * reads the source itself). */
static inline SWIN_PRE_HD long long swin_pre_tmp_pixels(const swin_pre_image *r) {
    long long nx = r->ix1 - r->ix0, ny = r->iy1 - r->iy0;
    if (nx <= 0 || ny <= 0) return 0;
    if (r->mode == SWIN_PRE_H_FIRST && r->need_h) return (long long)(r->r1 - r->r0) * nx;
    if (r->mode == SWIN_PRE_V_FIRST) return ny * (r->c1 - r->c0);
    return 0;
}

/* Layout of the device copy of the plan ("meta"): n records at 0, the coefficients at
 * swin_pre_meta_coef_offset(n); swin_pre_meta_bytes in all. A host copy in the same layout is
 * uploaded in one transfer. */
static inline size_t swin_pre_meta_coef_offset(int n) {
    return ((size_t)n * sizeof(swin_pre_image) + 255u) & ~(size_t)255u;
}
static inline size_t swin_pre_meta_bytes(int n, size_t n_coef) {
    return swin_pre_meta_coef_offset(n) + n_coef * sizeof(int32_t);
}

/* out (device) [b->n, 3, S, S] <- the images in src (device, src_bytes), through tmp (device,
 * tmp_bytes; NULL / 0 when no image needs an intermediate). meta: device scratch of at least
 * swin_pre_meta_bytes(b->n, b->n_coef) bytes, 16-byte aligned (cudaMalloc's are); the op copies b->img and b->coef
 * there on st (asynchronously when they are in page-locked memory: leave them unchanged until st
 * has passed this op). Every record is checked against the buffer sizes and every tap against its
 * image, so a bad plan is refused (SWIN_ERR_ARGUMENT) instead of read out of bounds. 1 <= n <= 65536,
 * 1 <= S <= 16384. Intermediates of different images must not overlap. */
swin_status swin_preprocess_cuda(float *out, const uint8_t *src, size_t src_bytes, uint8_t *tmp,
                                 size_t tmp_bytes, void *meta, size_t meta_bytes,
                                 const swin_pre_batch *b, cudaStream_t st);

/* ---- the split JPEG decode's GPU half (kernels/jpeg_exact.cu; the arithmetic of
 * src/image/jpeg_exact.h): for each of the n images described by img_host[k] (jpeg.h
 * swin_jpeg_record_at), its coefficients in coef (device, coef_elems int16) become its RGB8
 * pixels [h][w][3] in dst (device, dst_bytes), through its sample planes in planes (device,
 * plane_bytes), exactly as libjpeg decodes them. img_dev: device room for n records, which the op
 * copies there on st (asynchronously when img_host is page-locked: leave it unchanged until st
 * has passed the op). Every record is checked against the buffer sizes (SWIN_ERR_ARGUMENT); the
 * images' planes and pixels must not overlap. 1 <= n <= 65535. */
swin_status swin_jpeg_exact_cuda(uint8_t *dst, size_t dst_bytes, const int16_t *coef, size_t coef_elems,
                                 uint8_t *planes, size_t plane_bytes, const swin_jx_image *img_host,
                                 swin_jx_image *img_dev, int n, cudaStream_t st);

/* ---- entropy decoding of baseline JPEGs (kernels/jpeg_huff.cu; the parallel decoder of
 * src/image/jpeg_par.h): image k of n, described by img_host[k] (jpeg.h swin_jpeg_read_scan, its
 * data staged by swin_jp_stage: img.data, img.data_len and, with restart markers, img.rst and
 * img.n_rst moved to the staged bytes in the batch's buffer (img.rst 4-byte aligned), its table
 * index into tables; or a part of it, swin_jp_split), is decoded into its
 * coefficients in coef (device, coef_elems int16, zeroed by the op first); status[k] (device)
 * receives SWIN_JH_OK or why the image is left to libjpeg. bytes (n_bytes) and tables (n_tables)
 * are device memory; img_dev: device room for n records, copied there on st (asynchronously
 * when img_host is page-locked: leave it unchanged until st has passed the op). Every record is
 * checked against the buffers and the decoder's limits (SWIN_ERR_ARGUMENT); the images'
 * coefficients must not overlap. 1 <= n <= 65535. */
swin_status swin_jpeg_huff_cuda(int16_t *coef, size_t coef_elems, const uint8_t *bytes, size_t n_bytes,
                                const swin_jh_table *tables, int n_tables, const swin_jh_image *img_host,
                                swin_jh_image *img_dev, int *status, int n, cudaStream_t st);

#ifdef __cplusplus
}
#endif
#endif
