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
