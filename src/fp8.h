/* fp8.h - FP8 (E4M3) quantisation shared by the CPU emulation and the CUDA engine (src/fp8.c).
 *
 * What runs in FP8 (SWIN_FP8): the GEMM of every "site", i.e. every linear layer of the blocks
 * (attn.qkv, attn.proj, mlp.fc1, mlp.fc2) and of the patch merges (downsample.reduction). The
 * patch embedding, the head, attention, LayerNorm, softmax and the residual stream stay 16-bit
 * on the GPU (fp32 in the CPU emulation).
 *
 * The arithmetic of one site, the same on both sides (the GPU's 16-bit input x is widened to
 * fp32 first; the CPU's is fp32 already):
 *   weights   ws[n] = max_k |w[n,k]| / 448 (1 when the row is all zero), per output channel;
 *             wq[n,k] = e4m3(w[n,k] * (1 / ws[n]))                       (once, at load)
 *   input     s = the site's calibrated scale (scales file); xq[m,k] = e4m3(x[m,k] * (1 / s))
 *   output    y[m,n] = (sum_k xq[m,k] * wq[n,k]) * s * ws[n] + b[n] (+ residual)
 * with e4m3() rounding to nearest even and saturating to +-448 (CUDA's __NV_SATFINITE; NaN
 * stays NaN), 1 / s and 1 / ws[n] computed in fp32, and the sum accumulated in fp32.
 *
 * Not FP8 yet, measured as a study (2026-11-29, not in the code): attention's q, k and v, whose
 * fp16 copy is written by the qkv GEMM and read by the attention kernel (on Swin-T fp8 at batch
 * 256 about 1.2 ms each, mostly memory traffic that E4M3 would halve). This emulation with an E4M3
 * round trip of the qkv output before the attention, scales from the batch's own max |value|,
 * against each fixture's float64 reference (swin verify --precision fp8, the 21 fixtures,
 * relative error with it / without it): per output channel geometric mean 0.96, range 0.60 to
 * 1.40, worst fixture 0.138 (0.175 without); per (q/k/v, head) 0.995, 0.69 to 1.33, but
 * ref_hf_v2_pre_f16 0.175 -> 0.228, over fp8's 0.22; one scale per q, k and v 1.00, 0.76 to
 * 1.56; per channel from the weights' bound (s 448 ws[n] sum_k |wq[n,k]| + |b[n]|, no
 * calibration) 1.05, up to 2.14 (ref_hf_v2_pad 0.066 -> 0.141). So per-channel scales from
 * calibration keep fp8's accuracy; coarser ones cost it on some SwinV2 fixtures.
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
} swin_fp8_site;

/* x rounded to the nearest E4M3 value (ties to even), saturated to +-448, as
 * __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); NaN gives 0x7F. */
uint8_t swin_e4m3_from_float(float x);
float swin_e4m3_to_float(uint8_t v);

/* Number of sites of m; fills out[0 .. count) when out != NULL. */
int swin_fp8_sites(const swin_model *m, swin_fp8_site *out);
/* "layers.1.blocks.0.mlp.fc2" into buf. */
void swin_fp8_site_name(const swin_fp8_site *s, char *buf, size_t size);

/* Per-output-channel weight quantisation of one site: wq [N, K] (E4M3 bytes) and ws [N]. */
void swin_fp8_quantize_weights(const swin_linear_w *w, int N, int K, uint8_t *wq, float *ws);

/* ---- scales files (JSON, format in the README: "FP8 scales file")
 * read: scale[n] (n = swin_fp8_sites(m)) from path; every site of m must be there, by name,
 * with a finite scale > 0; anything else is SWIN_ERR_FORMAT naming the file and the site. */
swin_status swin_fp8_scales_read(const swin_model *m, const char *path, float *scale);
/* write: scale[i] = margin * amax[i] / 448 (an amax of 0, a site that saw only zeros, gives 1),
 * with the amax, the margin and the calibration source ("images DIR" / "random") recorded.
 * A non-finite amax is refused (SWIN_ERR_VALUE naming the site). */
swin_status swin_fp8_scales_write(const swin_model *m, const char *path, const float *amax, float margin,
                                  const char *source, int images);
/* The scales the file would hold, without writing it (session default calibration). */
void swin_fp8_scales_from_amax(int n, const float *amax, float margin, float *scale);

#ifdef __cplusplus
}
#endif
#endif
