/* fp8.h - FP8 (E4M3) quantisation shared by the CPU emulation and the CUDA engine (src/fp8.c).
 *
 * What runs in FP8 (SWIN_FP8): the GEMM of every "site", i.e. every linear layer of the blocks
 * (attn.qkv, attn.proj, mlp.fc1, mlp.fc2) and of the patch merges (downsample.reduction); and,
 * when the scales carry them, attention's q, k and v (the qkv site's output) are stored in E4M3
 * with a scale per output channel. The patch embedding, the head, the attention math, LayerNorm,
 * softmax and the residual stream stay 16-bit on the GPU (fp32 in the CPU emulation).
 *
 * The arithmetic of one site, the same on both sides (the GPU's 16-bit input x is widened to
 * fp32 first; the CPU's is fp32 already):
 *   weights   ws[n] = max_k |w[n,k]| / 448 (1 when the row is all zero), per output channel;
 *             wq[n,k] = e4m3(w[n,k] * (1 / ws[n]))                       (once, at load)
 *   input     s = the site's calibrated scale (scales file); xq[m,k] = e4m3(x[m,k] * (1 / s))
 *   output    y[m,n] = (sum_k xq[m,k] * wq[n,k]) * s * ws[n] + b[n] (+ residual)
 *   q, k, v   qkv sites with channel scales > 0 (in blocks of swin_fp8_qkv_e4m3_block's geometry):
 *             so[n] = swin_fp8_qkv_scales(the file's scales), yq[m,n] = e4m3(y[m,n] * (1 / so[n])),
 *             and attention reads e4m3_to_float(yq[m,n]) * so[n] (the CPU emulation, in fp32).
 *             k and v: so[n] = swin_fp8_qkv_scale(the file's scale); q: so[c] = f[h] / so[k of c],
 *             with one factor f a head, so that every product of a q and a k channel carries the
 *             same f[h]: the GPU multiplies the raw E4M3 q and k bytes on FP8 tensor cores and the
 *             sum by f[h] (kernels/attention_head.cuh), and dequantises v to fp16 (value times
 *             its fp16 scale, rounded once)
 * with e4m3() rounding to nearest even and saturating to +-448 (CUDA's __NV_SATFINITE; NaN
 * stays NaN), 1 / s, 1 / ws[n] and 1 / so[n] computed in fp32, and the sum accumulated in fp32.
 * so[n] = margin * amax_out[n] / 448 (1 for an amax of 0) as for the input scales, amax_out[n]
 * the largest |y[m,n]| of the calibration images over every row, padding windows' included.
 * A qkv site without channel scales (all 0: a version 1 scales file) keeps q, k, v 16-bit.
 *
 * Why per channel and from calibration (a study, 2026-11-29, before the code: the CPU emulation
 * with an E4M3 round trip of the qkv output, scales from the batch's own max |value|, against
 * each fixture's float64 reference, swin verify --precision fp8 on the 21 fixtures, relative
 * error with it / without it): per output channel geometric mean 0.96, range 0.60 to 1.40, worst
 * fixture 0.138 (0.175 without); per (q/k/v, head) 0.995, 0.69 to 1.33, but ref_hf_v2_pre_f16
 * 0.175 -> 0.228, over fp8's 0.22; one scale per q, k and v 1.00, 0.76 to 1.56; per channel from
 * the weights' bound (s 448 ws[n] sum_k |wq[n,k]| + |b[n]|, no calibration) 1.05, up to 2.14
 * (ref_hf_v2_pad 0.066 -> 0.141). So per-channel scales from calibration keep fp8's accuracy;
 * coarser ones cost it on some SwinV2 fixtures. Why at all: the q, k, v copy is written by the
 * qkv GEMM and read by the attention kernel (in fp16 on Swin-T fp8 at batch 256 about 1.2 ms
 * each, mostly memory traffic that E4M3 halves).
 *
 * Scale and amax arrays (scales file, calibration, the engine) hold swin_fp8_scale_count(m)
 * floats: the sites' input entries [0, sites) in site order, then each qkv site's N = 3 dim
 * output-channel entries at its out_off, qkv sites in site order.
 *
 * Sites are numbered in forward order: per stage, the merge's reduction (stages > 0), then per
 * block qkv, proj, fc1, fc2. Their names follow timm's modules, whatever layout the checkpoint
 * came in: "layers.S.downsample.reduction", "layers.S.blocks.B.attn.qkv", ".attn.proj",
 * ".mlp.fc1", ".mlp.fc2".
 */
#ifndef SWIN_FP8_H
#define SWIN_FP8_H

#include <stddef.h>
#include <stdint.h>

#include "layers.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SWIN_E4M3_MAX 448.0f

typedef enum { SWIN_SITE_REDUCTION = 0, SWIN_SITE_QKV, SWIN_SITE_PROJ, SWIN_SITE_FC1, SWIN_SITE_FC2 } swin_site_kind;

typedef struct {
    swin_site_kind kind;
    int stage, block;            /* block -1 for a reduction */
    const swin_linear_w *w;      /* the model's weights [N, K] */
    int K, N;                    /* in and out features */
    int out_off;                 /* QKV: its first output-channel entry in a scale / amax array; else -1 */
} swin_fp8_site;

/* x rounded to the nearest E4M3 value (ties to even), saturated to +-448, as
 * __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); NaN gives 0x7F. */
uint8_t swin_e4m3_from_float(float x);
float swin_e4m3_to_float(uint8_t v);

/* Number of sites of m; fills out[0 .. count) when out != NULL. */
int swin_fp8_sites(const swin_model *m, swin_fp8_site *out);
/* Entries of a scale or amax array: the sites, plus the output channels of every qkv site. */
int swin_fp8_scale_count(const swin_model *m);
/* Where a qkv site with channel scales stores q, k, v in E4M3: V1 blocks of head_dim 32, windows
 * of 49 to 64 tokens (7x7, 8x8) and C a multiple of 16 (the geometry of the CUDA engine's attention
 * kernel for E4M3 input, kernels/attention_head.cuh), unless SWIN_FP8_QKV=0 in the environment
 * (read once: q, k, v stay 16-bit everywhere, for comparison in one run). The CPU emulation
 * follows the same rule, so that it computes what the GPU does; the engine needs Hopper besides
 * (its E4M3-out GEMM), and elsewhere keeps them 16-bit.
 * Why V1 only: SwinV2's cosine attention multiplies cos(q, k) by its logit scale (up to 100),
 * which magnifies q's and k's rounding. The CPU emulation, swin verify --precision fp8 on the 21
 * fixtures with the default calibration (2026-11-29), relative error with E4M3 q, k, v / without,
 * on the fixtures with blocks of this geometry: V1 ref_timm_v1_bf16 0.78, ref_hf_v1_v5names
 * 0.91, ref_timm_old_v1_ape 0.92, ref_hf_v1_w7 0.94, ref_timm_v1_c96 1.20 (geometric mean 0.94);
 * V2 ref_timm_v2_pre 1.07, ref_timm_v2_w8 1.15, ref_hf_v2_pre_f16 1.36 (0.175 -> 0.238, over
 * fp8's 0.2165), ref_timm_v2_c96 1.48 (1.26). */
/* A q, k, v channel scale as both sides use it: so clamped to [2^-14, 65504] and rounded to fp16
 * (nearest even), because the GPU's attention kernel dequantises in fp16 (an E4M3 value times an
 * fp16 scale, one HMUL2, exact up to the product's rounding to fp16). The clamp costs nothing:
 * a channel whose scale would be below 2^-14 has |values| < 448 2^-14 and still lands in
 * E4M3's normal range down to 2^-20. */
float swin_fp8_qkv_scale(float so);
/* A qkv site's q, k, v scales as both sides use them, out[3C] from the scales file's so[3C] (C
 * channels each, heads of hd channels): k and v swin_fp8_qkv_scale(so); q, for a head h,
 *   f[h] = max over its channels c of so[c] * out[C + c], clamped to [2^-100, 2^100]
 *   out[c] = f[h] / out[C + c]
 * in fp32. Why: attention's scores are sums over c of q[c] k[c]; with q's channel c quantised as
 * q[c] k-scale[c] / f[h] (a value of at most the calibrated max |q[c]| k-scale[c] / f[h], so at most
 * 448 / margin: f[h] is that product's largest so over the head), each product of bytes carries the
 * one factor f[h], which the GPU applies once to the sum of byte products (an FP8 MMA) instead of
 * dequantising q and k per channel. E4M3 keeps its 3 mantissa bits from 448 down to 2^-6, so the
 * head's smaller channels lose no precision to the shared f until they are 2^14 below its largest
 * (and then add < 2^-14 of the largest products). The GPU reads f[h] back as out[c] out[C + c]
 * for the head's first channel c. out may be so (in place).
 * Accuracy against per-channel q scales (the CPU emulation, swin verify --precision fp8 --device
 * cpu on the 21 fixtures, default calibration, 2026-11-29): the 16 without a block of this geometry
 * unchanged; the 5 V1 ones new / old 0.85 (ref_timm_v1_bf16, 0.078 -> 0.066) to 1.34
 * (ref_hf_v1_v5names, 0.044 -> 0.059), geometric mean 1.06, where 16-bit q, k, v (SWIN_FP8_QKV=0)
 * move the same fixtures as far either way (ref_hf_v1_v5names 0.056; ref_timm_v1_c96 0.015, against
 * 0.018 old and 0.020 new): within the noise of random weights and two-image batches. */
void swin_fp8_qkv_scales(const float *so, int C, int hd, float *out);
int swin_fp8_qkv_e4m3_block(const swin_dims *d);
/* "layers.1.blocks.0.mlp.fc2" into buf. */
void swin_fp8_site_name(const swin_fp8_site *s, char *buf, size_t size);

/* Per-output-channel weight quantisation of one site: wq [N, K] (E4M3 bytes) and ws [N]. */
void swin_fp8_quantize_weights(const swin_linear_w *w, int N, int K, uint8_t *wq, float *ws);

/* ---- scales files (JSON, format in the README: "FP8 scales file"); scale and amax arrays have
 * swin_fp8_scale_count(m) entries.
 * read: scale[] from path (version 1 or 2); every site of m must be there, by name, with a finite
 * scale > 0; a qkv site's "out_scale" (version 2, optional) N finite numbers > 0, its channel
 * entries 0 when absent (and in a version 1 file); anything else is SWIN_ERR_FORMAT naming the
 * file and the site. */
swin_status swin_fp8_scales_read(const swin_model *m, const char *path, float *scale);
/* write (version 2): scale[i] = margin * amax[i] / 448 (an amax of 0, a site or channel that saw
 * only zeros, gives 1), with the amax, the margin and the calibration source ("images DIR" /
 * "random") recorded. A non-finite amax is refused (SWIN_ERR_VALUE naming the site, and the
 * channel for a qkv output entry). */
swin_status swin_fp8_scales_write(const swin_model *m, const char *path, const float *amax, float margin,
                                  const char *source, int images);
/* The scales the file would hold, without writing it (session default calibration); element-wise
 * over n entries. */
void swin_fp8_scales_from_amax(int n, const float *amax, float margin, float *scale);

#ifdef __cplusplus
}
#endif
#endif
