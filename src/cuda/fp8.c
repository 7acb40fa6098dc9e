/* fp8.c - the CUDA engine's FP8 sites (src/fp8.h for the arithmetic, engine.h for the API):
 * input quantisation and the GEMM of a site, the input scales, the calibration amax.
 *
 * A site whose K and N are multiples of 16 runs on cuBLASLt's FP8 tensor cores
 * (swin_linear_fp8_cuda): E4M3 weights with their per-channel scale vector wsx = ws * s (the
 * input scale s folded in), E4M3 input with its rows unscaled (in_scale NULL: cuBLASLt reads
 * e->ones, given to the handle at setup; on Hopper the persistent TMA kernel takes a shape where
 * it is faster, kernels/gemm.c). Any other site
 * (the small test models' 8-channel stages) runs a 16-bit GEMM on the same E4M3 values: weights
 * q * ws and input e4m3(x / s) * s rounded to fp16, which differs from the FP8 GEMM by fp16's
 * rounding of those products (2^-11 relative), far inside E4M3's own error.
 * Scales are baked into captured graphs (kernel arguments), so setting them drops the graphs.
 * Test: tests/test_gpu_engine.c (fp8 against the CPU emulation), tests/cli_gpu_verify.sh.
 * Measured on an H200 (recorded 2026-11-24): digits held-out 355/360 in fp8 with scales
 * calibrated on the GPU (swin calibrate --device cuda --precision fp16), as in fp32.
 * Speed, Swin-T fp8 against fp16 in the same run (the H200 perf run of 2026-11-26 08:32,
 * tools/perf.sh; the current run is docs/PERFORMANCE.md's "FP8 against fp16" section): 0.88x at
 * batch 1, 0.93x at 8, 1.00x at 64, 1.10x at batch 256 (26,006 against 23,692 img/s; SwinV2-T
 * 1.10x). The GEMMs alone (breakdown, fc1's GELU included in both) are 1.34x at batch 256.
 * Swin-B 384 (the run of 08:48): 1.14x at batch 64, 1.18x at 256 (3,491 against 2,959 img/s;
 * GEMMs 1.36x).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "fp8.h"

swin_status swin_engine_fp8_device_check(int index) {
    struct cudaDeviceProp p;
    SWIN_CUDA_TRY(cudaGetDeviceProperties(&p, index));
    if (p.major * 10 + p.minor < 89)
        return swin_fail(SWIN_ERR_UNSUPPORTED,
                         "cuda:%d (%s) is compute capability %d.%d, which has no FP8 tensor cores: --precision "
                         "fp8 needs 8.9 or newer (Ada, Hopper, Blackwell); use fp16 or bf16 here, or fp8 on "
                         "--device cpu (an emulation)", index, p.name, p.major, p.minor);
    return SWIN_OK;
}

swin_status swin_engine_quantize(swin_engine *e, const void *in, const swin_dlin *w, int M, int gelu) {
    float s = e->scale[w->site];
    size_t n = (size_t)M * w->K;
    if (!swin_dlin_fp8_gemm(w)) return swin_qdq_fp8_cuda(e->q8, in, n, s, gelu, e->dt, e->stream);
    if (gelu) return swin_gelu_quantize_fp8_cuda((uint8_t *)e->q8, in, n, 1.0f / s, e->dt, e->stream);
    return swin_quantize_fp8_cuda((uint8_t *)e->q8, in, n, 1.0f / s, e->dt, e->stream);
}

swin_status swin_engine_lin_q(swin_engine *e, void *out, const swin_dlin *w, const void *residual, int M) {
    if (!swin_dlin_fp8_gemm(w))
        return swin_linear_cuda(out, e->q8, w->deq, w->b, residual, M, w->K, w->N, SWIN_ACT_NONE, e->gemm, e->stream);
    return swin_linear_fp8_cuda(out, (const uint8_t *)e->q8, NULL, w->q, w->wsx, w->b, residual, M, w->K, w->N,
                                e->gemm, e->stream);
}

/* qkv site w's output scales so [N] (e->scale's, which outlives the copy): all > 0 (q, k, v in
 * E4M3: so becomes the scales as both sides use them, fp8.h swin_fp8_qkv_scales, and the folded
 * vectors are made from them on the device), or all 0 (16 bits); anything else is refused */
static swin_status set_out_scales(swin_engine *e, swin_dlin *w, float *so) {
    int pos = 0;
    for (int n = 0; n < w->N; n++) {
        if (!(isfinite(so[n]) && so[n] >= 0.0f))
            return swin_fail(SWIN_ERR_ARGUMENT, "FP8 site %d: output channel %d scale %g (expected a finite number "
                             ">= 0)", w->site, n, (double)so[n]);
        pos += so[n] > 0.0f;
    }
    if (pos != 0 && pos != w->N)
        return swin_fail(SWIN_ERR_ARGUMENT, "FP8 site %d: %d of its %d output scales are 0 (all or none)", w->site,
                         w->N - pos, w->N);
    w->q8_out = pos == w->N;
    if (!w->q8_out) return SWIN_OK;
    swin_fp8_qkv_scales(so, w->N / 3, w->out_hd, so);
    SWIN_CUDA_TRY(cudaMemcpyAsync(w->oq_deq, so, (size_t)w->N * sizeof(float), cudaMemcpyHostToDevice, e->stream));
    return swin_fp8_fold_out_cuda(w->oq_cs, w->oq_b, w->wsx, w->b, w->oq_deq, w->N, e->stream);
}

swin_status swin_engine_set_fp8_scales(swin_engine *e, const float *scale, int n) {
    if (!e || !scale) return swin_fail(SWIN_ERR_ARGUMENT, "swin_engine_set_fp8_scales: NULL argument");
    if (!e->fp8) return swin_fail(SWIN_ERR_ARGUMENT, "FP8 scales given to a %s session", swin_precision_str(e->opt.precision));
    if (n != e->n_sites + e->n_out_ch)
        return swin_fail(SWIN_ERR_ARGUMENT, "%d FP8 scales for a model with %d (%d FP8 sites, %d qkv output channels)",
                         n, e->n_sites + e->n_out_ch, e->n_sites, e->n_out_ch);
    for (int i = 0; i < e->n_sites; i++)
        if (!(isfinite(scale[i]) && scale[i] > 0.0f))
            return swin_fail(SWIN_ERR_ARGUMENT, "FP8 site %d: scale %g (expected a finite number > 0)", i,
                             (double)scale[i]);
    if (!e->scale && !(e->scale = malloc((size_t)(n ? n : 1) * sizeof *e->scale)))
        return swin_fail(SWIN_ERR_MEMORY, "out of memory");
    memcpy(e->scale, scale, (size_t)n * sizeof *scale);
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    for (int i = 0; i < e->n_sites; i++) {
        swin_dlin *w = e->sites[i];
        SWIN_TRY(swin_scale_vec_cuda(w->wsx, w->ws, scale[i], w->N, e->stream));
        if (w->out_rel >= 0) SWIN_TRY(set_out_scales(e, w, e->scale + e->n_sites + w->out_rel));
    }
    SWIN_CUDA_TRY(cudaStreamSynchronize(e->stream));
    for (int b = 0; b <= e->opt.max_batch; b++)   /* captured with the old scales */
        if (e->graphs[b]) {
            cudaGraphExecDestroy(e->graphs[b]);
            e->graphs[b] = NULL;
        }
    return SWIN_OK;
}

swin_status swin_engine_amax(swin_engine *e, float *amax, int n) {
    if (!e || !amax) return swin_fail(SWIN_ERR_ARGUMENT, "swin_engine_amax: NULL argument");
    if (n != e->n_sites + e->n_out_ch)
        return swin_fail(SWIN_ERR_ARGUMENT, "amax of %d entries asked for a model with %d (%d FP8 sites, %d qkv output "
                         "channels)", n, e->n_sites + e->n_out_ch, e->n_sites, e->n_out_ch);
    if (n == 0) return SWIN_OK;
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    SWIN_CUDA_TRY(cudaMemcpyAsync(amax, e->amax, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost, e->stream));
    SWIN_CUDA_TRY(cudaStreamSynchronize(e->stream));
    return SWIN_OK;
}
