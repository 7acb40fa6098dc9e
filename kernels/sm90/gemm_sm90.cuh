/* gemm_sm90.cuh - what the two wgmma GEMM kernels share (gemm_wgmma.cu: cp.async, every thread
 * copies; gemm_tma.cu: persistent, a TMA producer warp and two consumer warpgroups):
 *
 *   F16, BF16, E4M3, TF32   the operand types (element, bytes an element)
 *   wgmma_64x128<E>         d [64 x 128] += A (64 rows x 32 bytes of K) @ B (128 rows x 32 bytes)^T
 *   wgmma_64x128_p<E>       the same, or d = A B^T where acc is 0 (d unread: no zeroing needed)
 *   Epi, PLAIN/GELU/FP8_GELU/RESID  the epilogue: + bias (16-bit: then the erf GELU, or + the
 *                           residual staged at the output's place: RESID, gemm_tma.cu only);
 *                           E4M3 PLAIN / RESID: fp16 out, scale per column, bias (gemm_tma.cu);
 *                           FP8: scale per column, bias, GELU, times out_inv, to E4M3 (the GELU
 *                           in fp32, or in f16x2: FP8_GELU_H2, fp8_gelu_h2_ok);
 *                           SCATTER / LN_GELU (gemm_tma.cu only): proj written back to the image
 *                           with the residual, and fc1 on the LayerNorm folded into it;
 *                           POST_LN (gemm_tma.cu only): x += LN(acc + bias), V2's post-norm
 *   epi_coeffs / epi_pair / epi_store  a thread's column pair: its bias and scale; its values
 *                           in fp32; its output value(s) written at a byte address of the staging tile
 *   TileLoader<R, T>        a thread's cp.async share of a k-tile of R rows (gemm_wgmma.cu, gemm_x3.cu)
 *
 * The operand tiles are K-major with the 128-byte swizzle (wgmma.cuh); a k-tile row is 128 bytes
 * whatever the element (64 16-bit, 128 E4M3, 32 fp32 values).
 */
#ifndef SWIN_GEMM_SM90_CUH
#define SWIN_GEMM_SM90_CUH

#include <type_traits>

#include "common.cuh"
#include "sm90/wgmma.cuh"

namespace sm90 {

struct F16 { typedef __half T; static constexpr int ESZ = 2; };
struct BF16 { typedef __nv_bfloat16 T; static constexpr int ESZ = 2; };
struct E4M3 { typedef uint8_t T; static constexpr int ESZ = 1; };
struct TF32 { typedef float T; static constexpr int ESZ = 4; };   /* fp32 storage, TF32 math */

/* The epilogue: PLAIN / GELU (16-bit out: + bias[n], then the GELU); FP8_GELU (E4M3 out:
 * e4m3(gelu(acc * col_scale[n] + bias[n]) * out_inv), bias fp16; FP8_GELU_H2 the same with
 * the GELU and the scaling in f16x2, swin_gelu_e4m3x2 in common.cuh); RESID (16-bit out: + bias[n]
 * + the residual, which the caller has staged at the output's own address); SCATTER (16-bit:
 * + bias[n] + the residual, stored by gemm_tma.cu's scatter epilogue itself); LN_GELU (16-bit out:
 * acc already normalised by the caller, then + bias[n] (fp32) and the GELU; col_scale: fp32
 * column sums, which the caller uses, not epi_store); POST_LN (16-bit out: the residual staged
 * as RESID's, + LN(acc + bias[n]) over the tile's row, gemm_tma_fold.cuh post_ln_stats; with E4M3
 * operands fp16 out and LN(acc * col_scale[n] + bias[n]), bias fp16, as FP8_GELU's). PLAIN and
 * RESID on E4M3 operands (gemm_tma.cu only): fp16 out, acc * col_scale[n] + bias[n] (+ the
 * residual), bias fp16: an FP8 site's linear layer as cuBLASLt's with row scales of 1 */
enum { PLAIN = 0, GELU = 1, FP8_GELU = 2, RESID = 3, SCATTER = 4, LN_GELU = 5, POST_LN = 6, FP8_GELU_H2 = 7, FP8_OUT = 8 };
template <int EPI> constexpr bool fp8_gelu() { return EPI == FP8_GELU || EPI == FP8_GELU_H2; }
/* E4M3 out: the fused fc1, or FP8_OUT (FP8_GELU's arithmetic without the GELU: the qkv GEMM
 * writing attention's q, k, v in E4M3, its per-channel output scales folded into col_scale and
 * bias by the caller, out_inv 1) */
template <int EPI> constexpr bool e4m3_out() { return fp8_gelu<EPI>() || EPI == FP8_OUT; }
struct Epi {
    const void *bias;
    const float *col_scale;
    float out_inv;
};
/* output bytes an element, and its type (E4M3 operands: E4M3 out for the fused fc1, else fp16) */
template <class E, int EPI> constexpr bool f16_out() { return E::ESZ == 1 && !e4m3_out<EPI>(); }
template <class E, int EPI> constexpr int out_size() {
    return e4m3_out<EPI>() ? 1 : f16_out<E, EPI>() ? 2 : E::ESZ;
}
template <class E, int EPI>
using OutT = typename std::conditional<f16_out<E, EPI>(), __half, typename E::T>::type;

/* FP8's fc1 takes FP8_GELU_H2 where swin_gelu_e4m3x2's error stays within 0.3 of an E4M3 step
 * (an output scale in [2^-14, 2048]: common.cuh) unless SWIN_FP8_GELU_H2=0 (read once: an inline
 * function's static is one for the program), which keeps FP8_GELU's fp32 GELU so that the two are
 * measured in one run. Both launchers ask (gemm_wgmma.cu's cp.async kernel, gemm_tma.cu's).
 * Why: the fp32 GELU's epilogue bound the kernel (its header); SASS of the TMA kernel's E4M3
 * epilogue, per output: about 18.5 instructions with it (6 FFMA, 6 FMUL, 2 MUFU, ...), 8 with
 * f16x2 (the kernel 3,568 -> 2,168 instructions). Measured (H200, 2026-11-29, tools/bench_ab.py
 * SWIN_FP8_GELU_H2=0 "" -- --precision fp8 --breakdown, two rounds, best medians, =0 / default):
 * Swin-T batch 8 0.644 / 0.619 ms, 64 2.286 / 2.158, 256 7.753 / 7.266 (fc1 + GELU + quantise
 * 1.877 / 1.335 ms from --breakdown); SwinV2-T batch 64 2.890 / 2.715, 256 10.217 / 9.625. */
inline bool fp8_gelu_h2_ok(float out_inv) {
    static const bool on = swin_env_on("SWIN_FP8_GELU_H2", 1);
    return on && out_inv >= 0x1p-14f && out_inv <= 2048.0f;
}

/* 16-bit operands take transpose flags (0: K-major), E4M3 and TF32 ones are K-major only */
#define WG_MMA(SHAPE_TYPES, TAIL)                                                               \
    asm volatile("wgmma.mma_async.sync.aligned." SHAPE_TYPES " " WG_REGS64 ", %64, %65, 1, 1, 1" TAIL ";\n" \
                 : WG_D64                                                                       \
                 : "l"(da), "l"(db))

/* d [64] += A (64 rows x 32 bytes of K, descriptor da) @ B (128 rows x 32 bytes, db)^T */
template <class E> __device__ __forceinline__ void wgmma_64x128(float d[64], uint64_t da, uint64_t db);
template <> __device__ __forceinline__ void wgmma_64x128<F16>(float d[64], uint64_t da, uint64_t db) {
    WG_MMA("m64n128k16.f32.f16.f16", ", 0, 0");
}
template <> __device__ __forceinline__ void wgmma_64x128<BF16>(float d[64], uint64_t da, uint64_t db) {
    WG_MMA("m64n128k16.f32.bf16.bf16", ", 0, 0");
}
template <> __device__ __forceinline__ void wgmma_64x128<E4M3>(float d[64], uint64_t da, uint64_t db) {
    WG_MMA("m64n128k32.f32.e4m3.e4m3", "");
}
template <> __device__ __forceinline__ void wgmma_64x128<TF32>(float d[64], uint64_t da, uint64_t db) {
    WG_MMA("m64n128k8.f32.tf32.tf32", "");   /* K-major only; the operands' low 13 mantissa bits unread */
}
#undef WG_MMA

/* The same with wgmma's scale-d as a run-time predicate: d = A B^T when acc is 0 (d's values
 * unread: the accumulators need no zeroing before a tile's first MMA), d += A B^T otherwise */
#define WG_MMA_P(SHAPE_TYPES, TAIL)                                                              \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                   \
                 "wgmma.mma_async.sync.aligned." SHAPE_TYPES " " WG_REGS64 ", %64, %65, p, 1, 1" TAIL ";\n}\n" \
                 : WG_D64                                                                       \
                 : "l"(da), "l"(db), "r"(acc))
template <class E> __device__ __forceinline__ void wgmma_64x128_p(float d[64], uint64_t da, uint64_t db, int acc);
template <> __device__ __forceinline__ void wgmma_64x128_p<F16>(float d[64], uint64_t da, uint64_t db, int acc) {
    WG_MMA_P("m64n128k16.f32.f16.f16", ", 0, 0");
}
template <> __device__ __forceinline__ void wgmma_64x128_p<BF16>(float d[64], uint64_t da, uint64_t db, int acc) {
    WG_MMA_P("m64n128k16.f32.bf16.bf16", ", 0, 0");
}
template <> __device__ __forceinline__ void wgmma_64x128_p<E4M3>(float d[64], uint64_t da, uint64_t db, int acc) {
    WG_MMA_P("m64n128k32.f32.e4m3.e4m3", "");
}
template <> __device__ __forceinline__ void wgmma_64x128_p<TF32>(float d[64], uint64_t da, uint64_t db, int acc) {
    WG_MMA_P("m64n128k8.f32.tf32.tf32", "");
}
#undef WG_MMA_P

/* the bias (b) and column scale (cs) of output columns col, col + 1 (zero and one past N) */
template <class E, int EPI>
__device__ __forceinline__ void epi_coeffs(const Epi &ep, int col, int N, float2 &b, float2 &cs) {
    typedef typename E::T T;
    b = make_float2(0.0f, 0.0f), cs = make_float2(1.0f, 1.0f);   /* pairs: 4/8-byte aligned */
    if (col >= N) return;
    if constexpr (E::ESZ == 1) {   /* E4M3 operands: fp16 bias, fp32 column scales */
        if (ep.bias) b = unpack2<__half>(*reinterpret_cast<const uint32_t *>((const __half *)ep.bias + col));
        cs = *reinterpret_cast<const float2 *>(ep.col_scale + col);
    } else if constexpr (EPI == LN_GELU) {   /* fp32 bias and column sums */
        b = *reinterpret_cast<const float2 *>((const float *)ep.bias + col);
        cs = *reinterpret_cast<const float2 *>(ep.col_scale + col);
    } else if constexpr (E::ESZ == 4) {
        if (ep.bias) b = *reinterpret_cast<const float2 *>((const float *)ep.bias + col);
    } else if (ep.bias) {
        b = unpack2<T>(*reinterpret_cast<const uint32_t *>((const T *)ep.bias + col));
    }
}

/* the values of accumulators a0, a1 (columns col, col + 1) before any residual: scale, bias,
 * GELU, in fp32 */
template <class E, int EPI>
__device__ __forceinline__ float2 epi_pair(float a0, float a1, float2 b, float2 cs) {
    constexpr bool gelu = EPI == GELU || EPI == FP8_GELU || EPI == LN_GELU;
    float v0 = fmaf(a0, cs.x, b.x), v1 = fmaf(a1, cs.y, b.y);
    if (gelu && E::ESZ == 4) v0 = swin_gelu_erfc(v0), v1 = swin_gelu_erfc(v1);   /* fp32 out */
    else if (gelu) v0 = swin_gelu_erf16(v0), v1 = swin_gelu_erf16(v1);
    return make_float2(v0, v1);
}

/* the outputs of accumulators a0, a1 (columns col, col + 1) at p: epi_pair, plus the residual
 * read from p in fp32 (RESID), rounded once to the output type (2, 4 or 8 bytes) */
template <class E, int EPI>
__device__ __forceinline__ void epi_store(unsigned char *p, float a0, float a1, float2 b, float2 cs, const Epi &ep) {
    typedef OutT<E, EPI> T;
    if constexpr (EPI == FP8_GELU_H2) {   /* the GELU and the scaling in f16x2 (swin_gelu_e4m3x2) */
        *reinterpret_cast<uint16_t *>(p) = swin_gelu_e4m3x2(fmaf(a0, cs.x, b.x), fmaf(a1, cs.y, b.y),
                                                            __float2half2_rn(ep.out_inv));
    } else {
        const float2 v = epi_pair<E, EPI>(a0, a1, b, cs);
        float v0 = v.x, v1 = v.y;
        if constexpr (EPI == RESID) {
            static_assert(out_size<E, EPI>() == 2 || out_size<E, EPI>() == 4, "RESID: 16-bit or fp32 outputs");
            float2 r;
            if constexpr (out_size<E, EPI>() == 4) r = *reinterpret_cast<const float2 *>(p);
            else r = unpack2<T>(*reinterpret_cast<const uint32_t *>(p));
            v0 += r.x, v1 += r.y;
        }
        if constexpr (EPI == FP8_GELU || EPI == FP8_OUT)
            *reinterpret_cast<uint16_t *>(p) = (uint16_t)(swin_e4m3(v0 * ep.out_inv) | (swin_e4m3(v1 * ep.out_inv) << 8));
        else if constexpr (out_size<E, EPI>() == 4)
            *reinterpret_cast<float2 *>(p) = make_float2(v0, v1);
        else
            *reinterpret_cast<uint32_t *>(p) = pack2<T>(v0, v1);
    }
}

/* A thread's share of copying a k-tile of a K-contiguous matrix (rows r0 .. r0 + R) into shared
 * memory: 16-byte chunk column tid % 8 of rows tid / 8 + 32 j. The rows' offsets and the shared
 * offset are set up once, a k-tile adds k0: the per-copy address arithmetic, recomputed per
 * chunk, had been a quarter to a half of the kernel's instructions. Rows past the matrix read its
 * last row instead (they only feed output rows or columns that are not stored), so only the K
 * tail needs zero-filling; offsets are 32-bit (the launcher checks rows x K < 2^31). */
template <int R, typename T>
struct TileLoader {
    static constexpr int J = R / 32, CE = 16 / (int)sizeof(T);   /* elements a chunk */
    const T *g;          /* the thread's chunk column of row 0 */
    int off[J];          /* elements from g to row tid / 8 + 32 j (clamped) */
    uint32_t soff;       /* bytes from a tile's start to the thread's first chunk */
    int kc;              /* the chunk's first column within a k-tile */
    __device__ __forceinline__ void init(const T *base, int r0, int rows, int K, int tid) {
        const int r = tid >> 3;
        kc = (tid & 7) * CE, g = base + kc, soff = swz(r, tid & 7);
#pragma unroll
        for (int j = 0; j < J; j++) off[j] = min(r0 + r + 32 * j, rows - 1) * K;
    }
    __device__ __forceinline__ void load(uint32_t s, int k0, int K) const {
        const bool ok = k0 + kc < K;
        const int kk = ok ? k0 : 0;
#pragma unroll
        for (int j = 0; j < J; j++)   /* row + 32 j: the same swizzle, 32 rows of 128 bytes further on */
            cp_async16_s(s + soff + j * 32 * 128, g + off[j] + kk, ok);
    }
};

} // namespace sm90

#endif
