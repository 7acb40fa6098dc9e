/* common.cuh - shared by the .cu files in kernels/: error checks and dtype traits.
 *
 * SWIN_CUDA_TRY / SWIN_CUBLAS_TRY (check.h) for library calls;
 * SWIN_LAUNCH_CHECK(name)   after a launch: cudaGetLastError(), and a synchronise when
 *                           swin_cuda_debug_sync is set (SWIN_CUDA_SYNC=1) to pin async faults
 * load_f / store_f          read/write one element of the session dtype as float
 * swin_gelu_erf             nn.GELU's exact form in fp32, the one formula of every GELU kernel
 *                           (cheaper forms with stated error bounds for the fused fc1 epilogues:
 *                           swin_gelu_erfc, swin_gelu_erf16; swin_gelu_e4m3x2 for E4M3 outputs)
 * swin_tf32_rna             float -> its TF32 value (nearest, ties away) as a float, low 13 bits
 *                           clear: the head of a 3xTF32 split (gemm_x3.cu, attention_tf32.cuh)
 * swin_e4m3                 float -> E4M3 byte, src/fp8.h's e4m3() (every FP8 quantising kernel)
 * swin_e4m3_store           a pack of V floats times a scale -> V E4M3 bytes in one store
 * swin_quad_sum / _max      a value summed / maxed over the 4 lanes of a quad (lanes 4i..4i+3:
 *                           an mma accumulator row's lanes)
 * swin_device_sms           the current GPU's multiprocessor count
 * swin_pdl_begin            Programmatic Dependent Launch in a kernel (wait, then trigger);
 *                           swin_launch launches one (swin_launch_cluster: as clusters)
 * swin_device_once          a yes/no property of the current GPU, probed once per device
 */
#ifndef SWIN_COMMON_CUH
#define SWIN_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <utility>

#include "check.h"
#include "ops.h"

#define SWIN_LAUNCH_CHECK(name, stream)                                                        \
    do {                                                                                       \
        cudaError_t swin_e_ = cudaGetLastError();                                              \
        if (swin_e_ == cudaSuccess && swin_cuda_debug_sync) swin_e_ = cudaStreamSynchronize(stream); \
        if (swin_e_ != cudaSuccess)                                                            \
            return swin_fail(SWIN_ERR_CUDA, "kernel %s failed (%s:%d): %s", name, __FILE__,     \
                             __LINE__, cudaGetErrorString(swin_e_));                           \
    } while (0)

__device__ __forceinline__ float load_f(const float *p, size_t i) { return p[i]; }
__device__ __forceinline__ float load_f(const __half *p, size_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float load_f(const __nv_bfloat16 *p, size_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store_f(float *p, size_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store_f(__half *p, size_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void store_f(__nv_bfloat16 *p, size_t i, float v) { p[i] = __float2bfloat16_rn(v); }

/* the hardware conversion with __NV_SATFINITE: nearest even, +-448 at most, NaN stays NaN */
__device__ __forceinline__ unsigned char swin_e4m3(float v) {
    return (unsigned char)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}

/* E4M3 bytes of v[0 .. V) times inv at q: V 8 in one 8-byte store (q 8-byte aligned), 4 in one
 * 4-byte store (q 4-byte aligned), else byte by byte. Every kernel that writes E4M3 packs uses it
 * (row.cuh's row ops, fp8.cu's quantiser, the attention's proj input). */
template <int V>
__device__ __forceinline__ void swin_e4m3_store(unsigned char *q, const float (&v)[V], float inv) {
    unsigned o[V];
#pragma unroll
    for (int k = 0; k < V; k++) o[k] = swin_e4m3(v[k] * inv);
    if constexpr (V == 8) {
        *reinterpret_cast<uint2 *>(q) = make_uint2(o[0] | o[1] << 8 | o[2] << 16 | o[3] << 24,
                                                   o[4] | o[5] << 8 | o[6] << 16 | o[7] << 24);
    } else if constexpr (V == 4) {
        *reinterpret_cast<unsigned *>(q) = o[0] | o[1] << 8 | o[2] << 16 | o[3] << 24;
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) q[k] = (unsigned char)o[k];
    }
}

/* 0.5 x (1 + erf(x / sqrt 2)), computed in fp32 as PyTorch's fp16/bf16 kernels do */
__device__ __forceinline__ float swin_gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

/* The same GELU through erfc, for kernels where the GELU's arithmetic is on the critical path (the
 * fused fc1 epilogue): x < 0: x erfc(a) / 2, else x (1 - erfc(a) / 2), a = |x| / sqrt 2, with
 * Numerical Recipes' Chebyshev form erfc(a) = t exp(-a^2 + P(t)), t = 1 / (1 + a / 2), fractional
 * error < 1.2e-7 (P's coefficients below are theirs times log2 e, for ex2). Two special-function
 * instructions (rcp, ex2; flush-to-zero approximations, ~2^-22 relative) and ~17 other
 * instructions against erff's ~36; no cancellation in 1 + erf for x < 0. */
__device__ __forceinline__ float swin_rcp_approx(float x) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
/* x rounded to TF32 (cvt.rna: nearest, ties away) as a float with the low 13 bits clear, so that
 * x - the result is exact in fp32 */
__device__ __forceinline__ float swin_tf32_rna(float x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return __uint_as_float(r & 0xffffe000u);
}
__device__ __forceinline__ float swin_ex2_approx(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ float swin_gelu_erfc(float x) {
    const float a = fabsf(x) * 0.70710678118654752f, t = swin_rcp_approx(fmaf(0.5f, a, 1.0f));
    float p = 0.246517298f;
    p = fmaf(p, t, -1.18611495f), p = fmaf(p, t, 2.14747446f), p = fmaf(p, t, -1.63775315f);
    p = fmaf(p, t, 0.402321582f), p = fmaf(p, t, -0.26875686f), p = fmaf(p, t, 0.139630057f);
    p = fmaf(p, t, 0.539700616f), p = fmaf(p, t, 1.4427292f), p = fmaf(p, t, -1.82574822f);
    const float hq = 0.5f * t * swin_ex2_approx(fmaf(-a * 1.44269504f, a, p));   /* erfc(a) / 2 */
    return x * (x >= 0.0f ? 1.0f - hq : hq);
}

/* The GELU for kernels whose output is rounded to 16 bits or fewer (fp16, bf16, E4M3): Abramowitz &
 * Stegun 7.1.26, erfc(z) = t P(t) exp(-z^2), t = 1 / (1 + p z), P of degree 4, |error| <= 1.5e-7
 * absolute for all z >= 0 (a = |x| / sqrt 2 as above). The GELU's error is then at most 0.75e-7
 * |x| (plus the approximations' 2^-22 relative; measured 7.0e-8 |x|, and 2.2e-7 absolute at
 * most): for x >= 0 a relative 7.5e-8, 1/3000 of fp16's half step; for x < 0 under 1.7e-4
 * relative (fp16's half step: 2.4e-4) for outputs of magnitude above 1e-3 (x > -3.44), and at
 * most 2.2e-7 absolute on the smaller ones beyond.
 * 14 instructions against swin_gelu_erfc's 20; fp32 outputs (TF32) keep swin_gelu_erfc.
 * The sign's two cases stay a select: max(x, 0) - |x| hq (FMNMX, FFMA; one instruction fewer
 * an output in gemm_tma.cu's fp16 GELU kernel, 3,232 -> 3,096 by cuobjdump) gives NaN for
 * x = +inf (|x| times hq = 0), where PyTorch's GELU and this one give +inf (test_gpu_kernels,
 * "gelu form"). */
__device__ __forceinline__ float swin_gelu_erf16(float x) {
    const float t = swin_rcp_approx(fmaf(fabsf(x), 0.3275911f * 0.70710678118654752f, 1.0f));
    float p = 0.5f * 1.061405429f;
    p = fmaf(p, t, 0.5f * -1.453152027f), p = fmaf(p, t, 0.5f * 1.421413741f);
    p = fmaf(p, t, 0.5f * -0.284496736f), p = fmaf(p, t, 0.5f * 0.254829592f);
    const float hq = p * t * swin_ex2_approx(x * x * -0.72134752044448170f);   /* erfc(a) / 2; -log2(e) / 2 */
    return x * (x >= 0.0f ? 1.0f - hq : hq);
}

/* Two GELUs scaled to E4M3 (byte 0: v0's), for FP8's fused fc1 where the output keeps 3 mantissa
 * bits: e4m3(gelu(v) s) in f16x2 arithmetic, two outputs an instruction. v is rounded to fp16
 * (saturating), a = |v|, Phi(-a) = 2^P(min(a, 6)) with P of degree 4 fitted to log2 Phi(-a) on
 * [0, 6] (tools/gelu_fp8_fit.py: the coefficients, fp16; fit error 3.8e-3 in the exponent), and
 * gelu(v) = max(v, 0) - a Phi(-a) (no cancellation: for v >= 0 the subtracted part is at most half),
 * times s (fp16) and converted by the hardware (nearest even, saturating at 448). Past a = 6,
 * Phi(-a) < 1e-9 is 0 in fp16, so v = -inf gives 0 (swin_gelu_erf16: NaN); zeros come out as +0
 * where the exact GELU of a negative v gives -0 (the same zero to the GEMM that reads them).
 * What it costs against e4m3(exact gelu(v) s), the script's emulation (every step rounded to fp16,
 * ex2.approx.f16x2's error, 2^-9.9, at both signs): the error before the final rounding is at most
 * 0.30 of the E4M3 step there for s up to 2048 (0.11 at s = 1, 0.20 at s = 64), so every byte is one
 * of the two E4M3 values around the exact result; 0.9% (s = 1) to 2.2% (s = 2048) of them are
 * the other one of the two. Larger s take swin_gelu_erf16 (the launchers check: fp8_gelu_h2_ok).
 * On the H200 (tests/test_gpu_fp8.c test_fused_fc1_gelu, exact accumulators): 0.86% of the values
 * the other one at s = 1, 1.07% at s = 48, as emulated (0.87%, 1.15%; the fp32 GELU: 0.001%, 0.005%).
 * SASS (sm_90a): 13 instructions a pair (F2FP, 2 HMNMX2, 5 HFMA2, 2 MUFU.EX2.F16, PRMT, HMUL2, the
 * E4M3 F2FP) against about 17 an output with swin_gelu_erf16, its scale and two conversions. */
__device__ __forceinline__ uint16_t swin_gelu_e4m3x2(float v0, float v1, __half2 s) {
    uint32_t hv, e;
    asm("cvt.rn.satfinite.f16x2.f32 %0, %1, %2;" : "=r"(hv) : "f"(v1), "f"(v0));   /* v1 in the high half */
    const __half2 h = *reinterpret_cast<const __half2 *>(&hv);
    const __half2 a = __habs2(h), ac = __hmin2(a, __float2half2_rn(6.0f));
    __half2 p = __hfma2(__float2half2_rn(0.00149536133f), ac, __float2half2_rn(-0.0275878906f));
    p = __hfma2(p, ac, __float2half2_rn(-0.504394531f));
    p = __hfma2(p, ac, __float2half2_rn(-1.12207031f));
    p = __hfma2(p, ac, __float2half2_rn(-1.00292969f));
    asm("ex2.approx.f16x2 %0, %1;" : "=r"(e) : "r"(*reinterpret_cast<const uint32_t *>(&p)));
    const __half2 q = *reinterpret_cast<const __half2 *>(&e);   /* Phi(-a) */
    const __half2 o = __hmul2(__hfma2(__hneg2(a), q, __hmax2(h, __float2half2_rn(0.0f))), s);
    return (uint16_t)__nv_cvt_halfraw2_to_fp8x2(static_cast<__half2_raw>(o), __NV_SATFINITE, __NV_E4M3);
}

/* v over the quad of lanes that holds one row of an mma accumulator (lanes 4i .. 4i + 3) */
__device__ __forceinline__ float swin_quad_sum(float v) {
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}
__device__ __forceinline__ float swin_quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

static inline swin_status swin_device_sms(int *sms) {
    int dev = 0;
    SWIN_CUDA_TRY(cudaGetDevice(&dev));
    SWIN_CUDA_TRY(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
    return SWIN_OK;
}

// ---- Programmatic Dependent Launch (PDL, compute capability 9.0+)
// A kernel launched with PDL (swin_launch, when swin_pdl_enabled()) may start while the kernel
// before it in the stream is still running; it sees that kernel's writes only after
// griddepcontrol.wait, which returns once the previous grid has completed and flushed its memory.
// So every kernel of the forward calls swin_pdl_begin() (the wait, then the trigger) as its first
// statement, before any global read or write (a later kernel may overwrite what an earlier one
// still reads). Without PDL, or
// below sm_90, both calls are no-ops. Where the trigger sits: right after the wait, in every
// kernel. It lets the next kernel be launched once every CTA of this grid has triggered or exited,
// and CTAs not yet running have done neither, so triggering first thing cannot hand this grid's
// later waves' SM slots to the next kernel: its CTAs are placed as this grid's last wave drains
// (where they block in their own wait), which is the launch latency PDL hides. Correctness does
// not depend on the trigger's place: the dependent's wait still waits for this whole grid.
// Measured on the H200 (2026-11-26, build/swin bench -n 50, SWIN_PDL off against on): Swin-T
// fp16 batch 1 0.500 against 0.490 ms, batch 8 0.704 against 0.724 (slower), batch 256 10.70
// against 10.65; SwinV2-T fp16 batch 1 0.537 against 0.513, batch 8 0.804 against 0.789; Swin-T
// fp8 batch 1 0.570 against 0.548. PDL hides launch latency only, and being slower at Swin-T's
// batch 8 it stayed off by default then.
// On by default since (SWIN_PDL=0 turns it off): measured again on an H200 (2026-11-27, one
// binary, `swin bench`, SWIN_PDL=0 / 1 alternating, two rounds, ms), batch 1 faster everywhere
// but Swin-B 384, the rest within noise:
//   Swin-T fp16   batch 1 0.446 0.449 / 0.420 0.420   batch 8 0.653 0.665 / 0.662 0.656
//                 batch 64 2.422 2.449 / 2.483 2.436  batch 256 9.144 9.145 / 9.146 9.160
//   Swin-T bf16   batch 1 0.449 0.450 / 0.420 0.418   batch 8 0.653 0.653 / 0.655 0.670
//                 batch 256 8.901 8.837 / 8.804 8.821
//   Swin-T fp8    batch 1 0.489 0.488 / 0.460 0.461   batch 8 0.665 0.669 / 0.642 0.645
//                 batch 64 2.369 2.371 / 2.314 2.318  batch 256 8.071 8.101 / 8.013 8.037
//   Swin-T tf32   batch 1 0.578 0.603 / 0.575 0.604   batch 8 1.011 1.057 / 1.003 1.014
//                 batch 256 16.887 16.848 / 17.024 16.966
//   SwinV2-T fp16 batch 1 0.477 0.484 / 0.432 0.432   batch 8 0.739 0.763 / 0.709 0.705
//                 batch 64 3.194 3.211 / 3.192 3.183  batch 256 12.254 12.193 / 12.267 12.258
//   Swin-B 384 fp16 batch 1 1.116 1.111 / 1.117 1.105 batch 8 2.831 2.759 / 2.724 2.726
//                 batch 64 18.776 18.561 / 18.752 18.871
// Most of a forward's kernel-to-kernel edges are still full ones: the cuBLASLt GEMMs (qkv, proj,
// fc2) neither wait nor trigger, so PDL acts on our kernel pairs only (norm -> fc1 + GELU, ...).

__device__ __forceinline__ void swin_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void swin_pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
/* the first statement of every kernel of the forward: wait, then trigger (the placement above) */
__device__ __forceinline__ void swin_pdl_begin() {
    swin_pdl_wait();
    swin_pdl_trigger();
}

/* kern<<<grid, block, smem, st>>>(args...), through cudaLaunchKernelEx with programmatic stream
 * serialization where swin_pdl_enabled() (ops.h), and (swin_launch_cluster) as thread-block
 * clusters of `cluster` CTAs. Like <<<>>> they return nothing: a failure is left for
 * SWIN_LAUNCH_CHECK's cudaGetLastError(), which every runtime call's error reaches. */
template <typename... P, typename... A>
static inline void swin_launch_cluster(void (*kern)(P...), dim3 grid, dim3 block, size_t smem, dim3 cluster,
                                       cudaStream_t st, A &&...args) {
    cudaLaunchAttribute attr[2];
    unsigned n = 0;
    if (swin_pdl_enabled()) {
        attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster.x * cluster.y * cluster.z > 1) {
        attr[n].id = cudaLaunchAttributeClusterDimension;
        attr[n].val.clusterDim.x = cluster.x, attr[n].val.clusterDim.y = cluster.y;
        attr[n++].val.clusterDim.z = cluster.z;
    }
    if (!n) {
        kern<<<grid, block, smem, st>>>(std::forward<A>(args)...);
        return;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = attr;
    cfg.numAttrs = n;
    (void)cudaLaunchKernelEx(&cfg, kern, std::forward<A>(args)...);
}
template <typename... P, typename... A>
static inline void swin_launch(void (*kern)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                               A &&...args) {
    swin_launch_cluster(kern, grid, block, smem, dim3(1, 1, 1), st, std::forward<A>(args)...);
}

/* A yes/no property of the current device, probed once per device (probe(dev) -> 0 or 1) and kept
 * in known[] (0 unknown, 1 yes, 2 no; a race only repeats the probe). A failed query answers no,
 * and its error is cleared so that it is not reported by the next launch. */
template <class Probe>
static inline int swin_device_once(int (&known)[64], Probe probe) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return (void)cudaGetLastError(), 0;
    if (dev >= 0 && dev < 64 && known[dev]) return known[dev] == 1;
    const int ok = probe(dev) != 0;
    (void)cudaGetLastError();
    if (dev >= 0 && dev < 64) known[dev] = ok ? 1 : 2;
    return ok;
}

/* Dispatch a templated launcher on the runtime dtype: SWIN_DISPATCH(dt, T, expr using T). */
#define SWIN_DISPATCH(dt, T, ...)                                                              \
    do {                                                                                       \
        switch (dt) {                                                                          \
        case SWIN_DT_F32: { typedef float T; __VA_ARGS__; } break;                             \
        case SWIN_DT_F16: { typedef __half T; __VA_ARGS__; } break;                            \
        case SWIN_DT_BF16: { typedef __nv_bfloat16 T; __VA_ARGS__; } break;                    \
        default: return swin_fail(SWIN_ERR_ARGUMENT, "unknown dtype %d", (int)(dt));           \
        }                                                                                      \
    } while (0)

#endif
