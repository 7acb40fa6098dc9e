/* mlp_wgmma.cu - the transformer block's MLP as one kernel on Hopper (wgmma), the 4C hidden kept
 * on chip:
 *
 *   out [M, C] = gelu(in [M, C] @ w1 [H, C]^T + b1 [H]) @ w2 [C, H]^T + b2 [C] (+ res [M, C])
 *
 * fp16 / bf16, fp32 accumulation, the hidden rounded to the data type after the erf GELU
 * (swin_gelu_erf16, common.cuh, as gemm_wgmma.cu's fc1 stores it), bias and residual added in
 * fp32 and rounded once. It replaces fc1 + GELU (gemm_wgmma.cu) and fc2 (cuBLASLt): the hidden's
 * round trip through memory (4C values a token written and read back) and fc2's own launch are
 * gone.
 *
 * Kernel: a CTA of two warpgroups takes 128 tokens (64 rows each) and walks the hidden in chunks
 * of HC features. Per chunk h, two steps over the same shared memory:
 *   fc1: acc1 [64 x HC] = x rows @ w1[h]^T       wgmma.m64nHCk16, the token tile resident
 *        -> + b1, GELU, rounded -> the warpgroup's hidden chunk in shared memory (swizzled as
 *        a wgmma operand)
 *   fc2: acc2 [64 x C] += hidden chunk @ w2[:, h]^T    wgmma.m64nCk16, acc2 in registers for the
 *        whole walk (C / 2 floats a thread)
 * The weight chunks (w1[h]: HC rows x C; w2[:, h]: C rows x HC) go through a ring of slots:
 * while one step computes, the next two steps' chunks are copied (cp.async, every thread). All tiles
 * use the 128-byte swizzle (wgmma.cuh); C not a multiple of 64 leaves the last panel's tail
 * zero-filled (and skipped by the k steps). Rows past M read the last row and are not stored.
 * C is a template parameter (96, 128, 192: acc2 fits the registers beside acc1). Per width
 * (Shape): C 96 takes chunks of 64 so that two CTAs share an SM (97 KiB of shared memory, 128
 * registers); C 128 and 192 chunks of 128, one CTA an SM (164 and 225 KiB); three weight slots.
 * Measured (H200, Swin-T fp16 batch 256, --breakdown, both blocks of a stage): stage 1 (C 96)
 * 1.37 ms against 0.94 + 0.46 for fc1 + GELU and fc2 as two GEMMs; stage 2 (C 192) 1.22 against
 * 0.54 + 0.25. So the engine takes it only when asked (SWIN_MLP_ONE_KERNEL, src/cuda/engine.c).
 * Why: the GELU (14 instructions an element, 4C a token) is the largest cost at these widths and
 * is bound by instruction latency and issue; the two-GEMM fc1 runs it with 16 warps an SM, this
 * kernel at C 192 with 8 (one CTA: acc2 is 96 floats a thread), and within a CTA its phases
 * (copy wait, fc1, GELU, fc2) do not overlap (at C 96, two CTAs an SM, it breaks even). Next: warp-specialised producer (TMA) and two consumer
 * warpgroups alternating GELU and wgmma (FlashAttention-3's ping-pong), or the hidden chunk's
 * GELU spread over more warps.
 * Since then: swin_mlp_wgmma_cuda hands H = 4 C to mlp_tma.cu's persistent TMA kernel (its GELU
 * overlapping its MMAs; its header has the measurements) unless SWIN_MLP_TMA=0; this kernel keeps
 * the other H and that switch, so that the two are measured in one run.
 * Test: tests/test_gpu_mlp.c (against the host, and against fc1 + GELU then fc2; this kernel in
 * test_gpu_mlp_cpasync); the full-size models of tools/gpu_check.sh through the engine
 * (SWIN_MLP_ONE_KERNEL=2).
 */
#include <limits.h>
#include <stdint.h>

#include "common.cuh"
#include "gemm.h"
#include "sm90/mlp_tma.h"
#include "sm90/tma_map.h"
#include "sm90/wgmma.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "mlp_wgmma.cu is built for sm_90a only (CMakeLists.txt)"
#endif

namespace {

constexpr int BM = 128, THREADS = 256, HC_MAX = 128;

/* the kernel for width C: HC hidden features a chunk, weight slots, CTAs an SM, and its shared
 * memory in bytes. C 96: chunks of 64 (acc1 32 floats) so that two CTAs share an SM (one's GELU
 * beside the other's tensor work and copies); C 128, 192: chunks of 128, one CTA an SM. */
template <int C> struct Shape {
    static constexpr int HC = C == 96 ? 64 : 128, SLOTS = 3, MINB = C == 96 ? 2 : 1;
    static constexpr int KP = (C + 63) / 64;          /* 128-byte panels of a C-wide row */
    static constexpr int X = KP * BM * 128;           /* the token tile */
    static constexpr int W1 = KP * HC * 128;          /* w1[h]: HC rows of C */
    static constexpr int W2 = (HC / 64) * C * 128;    /* w2[:, h]: C rows of HC */
    static constexpr int SLOT = ((W1 > W2 ? W1 : W2) + 1023) / 1024 * 1024;
    static constexpr int HID = (HC / 64) * 64 * 128;  /* a warpgroup's hidden chunk: 64 rows of HC */
    static constexpr size_t SMEM = (size_t)X + SLOTS * SLOT + 2 * HID + 1024;   /* + room to align */
};

/* Copy rows r0 .. r0 + R (clamped to rows - 1) by elements c0 .. c0 + 64 P of a row-major matrix
 * (ld elements a row) into P swizzled panels of R rows at shared address s, panel p at s + 128 R
 * p; elements from c0 + cols on are zero-filled. Consecutive threads take consecutive 16-byte
 * chunks of a row. */
template <typename T, int R, int P>
__device__ __forceinline__ void load_panels(uint32_t s, const T *g, int r0, int rows, int ld, int c0, int cols,
                                            int tid) {
    static_assert((R * P * 8) % THREADS == 0, "whole rounds of chunks");
#pragma unroll 2
    for (int i = tid; i < R * P * 8; i += THREADS) {
        const int r = i / (P * 8), p = (i / 8) % P, ch = i % 8, c = p * 64 + ch * 8;
        const bool ok = c < cols;
        const T *src = g + (size_t)min(r0 + r, rows - 1) * ld + c0 + (ok ? c : 0);
        cp_async16_s(s + p * R * 128 + swz(r, ch), src, ok);
    }
}

template <typename T, int C>
__global__ void __launch_bounds__(THREADS, Shape<C>::MINB)
mlp_wgmma_kernel(T *out, const T *__restrict__ in, const T *__restrict__ w1, const T *__restrict__ b1,
                 const T *__restrict__ w2, const T *__restrict__ b2, const T *res, int M, int H) {
    swin_pdl_begin();
    typedef Shape<C> S;
    constexpr int HC = S::HC, SLOTS = S::SLOTS;
    extern __shared__ unsigned char smem_raw[];
    const uint32_t s0 = (smem_addr(smem_raw) + 1023u) & ~1023u;   /* the swizzle's 1024-byte atoms */
    const uint32_t sx = s0, slots = s0 + S::X;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, wq = (tid >> 5) & 3;
    const int m0 = blockIdx.x * BM, steps = 2 * (H / HC);
    const uint32_t hid = slots + SLOTS * S::SLOT + wg * S::HID;   /* this warpgroup's hidden chunk */

    /* step t: w1[t / 2] (t even) or w2[:, t / 2] (t odd) into slot t % SLOTS */
    auto load_step = [&](int t) {
        const uint32_t s = slots + (t % SLOTS) * S::SLOT;
        if (!(t & 1)) load_panels<T, HC, S::KP>(s, w1, (t >> 1) * HC, H, C, 0, C, tid);
        else load_panels<T, C, HC / 64>(s, w2, 0, C, H, (t >> 1) * HC, HC, tid);
    };
    /* the token tile and steps 0 .. SLOTS - 2, one commit group each (the tile with step 0) */
    load_panels<T, BM, S::KP>(sx, in, m0, M, C, 0, C, tid);
#pragma unroll
    for (int t = 0; t < SLOTS - 1; t++) {
        if (t < steps) load_step(t);
        cp_async_commit();   /* empty groups keep the count cp_async_wait relies on */
    }

    float acc1[HC / 2], acc2[C / 2];
#pragma unroll
    for (int i = 0; i < HC / 2; i++) acc1[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < C / 2; i++) acc2[i] = 0.0f;
    for (int t = 0; t < steps; t++) {
        cp_async_wait<SLOTS - 2>();
        fence_proxy_async();
        __syncthreads();   /* step t's chunk (and the token tile) landed for every thread, the
                              hidden chunk written; step t - 1's slot and its readers are done */
        if (t + SLOTS - 1 < steps) load_step(t + SLOTS - 1);
        cp_async_commit();
        const uint32_t s = slots + (t % SLOTS) * S::SLOT;
        const int h = t >> 1;
        wgmma_fence();
        if (!(t & 1)) {
            /* fc1: the warpgroup's 64 tokens x the chunk's 128 features, K = C */
#pragma unroll
            for (int p = 0; p < S::KP; p++)
#pragma unroll
                for (int ks = 0; ks < 4; ks++)
                    if (p * 64 + ks * 16 < C)
                        wgmma_ss<T, HC>(acc1, sw128_desc(sx + (p * BM + wg * 64) * 128) + 2 * ks,
                                        sw128_desc(s + p * HC * 128) + 2 * ks, p | ks);
            wgmma_commit();
            wgmma_wait_all();
            /* + b1, GELU, rounded: row 16 wq + lane / 4 (+ 8), columns 8 j + 2 (lane % 4) + {0, 1};
             * column group j is chunk j % 8 of panel j / 8 */
#pragma unroll
            for (int j = 0; j < HC / 8; j++) {
                const int c = 8 * j + 2 * (lane & 3);
                const float2 b = b1 ? unpack2<T>(ldg_pair(b1 + h * HC + c)) : make_float2(0.0f, 0.0f);
#pragma unroll
                for (int hh = 0; hh < 2; hh++) {
                    const int r = wq * 16 + (lane >> 2) + 8 * hh;
                    const float v0 = swin_gelu_erf16(acc1[4 * j + 2 * hh] + b.x);
                    const float v1 = swin_gelu_erf16(acc1[4 * j + 2 * hh + 1] + b.y);
                    st_shared_u32(hid + (j / 8) * 64 * 128 + swz(r, j % 8) + 4 * (lane & 3), pack2<T>(v0, v1));
                }
            }
            fence_proxy_async();   /* the writes, for the next step's wgmma (after its barrier) */
        } else {
            /* fc2: acc2 += hidden chunk (64 x 128) @ w2[:, h]^T (C x 128) */
#pragma unroll
            for (int p = 0; p < HC / 64; p++)
#pragma unroll
                for (int ks = 0; ks < 4; ks++)
                    wgmma_ss<T, C>(acc2, sw128_desc(hid + p * 64 * 128) + 2 * ks,
                                   sw128_desc(s + p * C * 128) + 2 * ks, h | p | ks);
            wgmma_commit();
            wgmma_wait_all();
        }
    }

    /* out = acc2 + b2 (+ res), rounded once */
    store_rows<T, C>(out, acc2, b2, res, m0 + wg * 64 + wq * 16 + (lane >> 2), M, lane);
}

template <typename T, int C>
swin_status launch(void *out, const void *in, const void *w1, const void *b1, const void *w2, const void *b2,
                   const void *res, int M, int H, cudaStream_t st) {
    const size_t smem = Shape<C>::SMEM;
    SWIN_CUDA_TRY(cudaFuncSetAttribute(mlp_wgmma_kernel<T, C>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const unsigned grid = (unsigned)((M + BM - 1) / BM);
    swin_launch(mlp_wgmma_kernel<T, C>, grid, THREADS, smem, st, (T *)out, (const T *)in, (const T *)w1,
                (const T *)b1, (const T *)w2, (const T *)b2, (const T *)res, M, H);
    SWIN_LAUNCH_CHECK("mlp_wgmma_kernel", st);
    return SWIN_OK;
}

template <typename T>
swin_status launch_c(void *out, const void *in, const void *w1, const void *b1, const void *w2, const void *b2,
                     const void *res, int M, int C, int H, cudaStream_t st) {
    switch (C) {
    case 96: return launch<T, 96>(out, in, w1, b1, w2, b2, res, M, H, st);
    case 128: return launch<T, 128>(out, in, w1, b1, w2, b2, res, M, H, st);
    default: return launch<T, 192>(out, in, w1, b1, w2, b2, res, M, H, st);
    }
}

/* SWIN_MLP_TMA=0: this file's kernel instead of mlp_tma.cu's (also where the driver encodes no
 * tensor maps), so that the two are measured in one run */
bool tma_on(void) {
    static const bool on = swin_env_on("SWIN_MLP_TMA", 1) && swin_tma_available();
    return on;
}

} // namespace

extern "C" int swin_mlp_wgmma_supports(swin_dtype dt, int M, int C, int H, const void *out, const void *in,
                                       const void *w1, const void *b1, const void *w2, const void *b2,
                                       const void *res) {
    return (dt == SWIN_DT_F16 || dt == SWIN_DT_BF16) && (C == 96 || C == 128 || C == 192) && M > 0 && H > 0 &&
           H % HC_MAX == 0 && (long long)M * C < INT_MAX && (long long)H * C < INT_MAX &&
           !(((uintptr_t)in | (uintptr_t)w1 | (uintptr_t)w2) & 15u) &&
           !(((uintptr_t)out | (uintptr_t)b1 | (uintptr_t)b2 | (uintptr_t)res) & 3u);
}

extern "C" swin_status swin_mlp_wgmma_cuda(void *out, const void *in, const void *w1, const void *b1, const void *w2,
                                           const void *b2, const void *res, int M, int C, int H, swin_dtype dt,
                                           cudaStream_t st) {
    static const char op[] = "swin_mlp_wgmma_cuda";
    if (!out || !in || !w1 || !w2) return swin_fail(SWIN_ERR_ARGUMENT, "%s: out, in, w1 and w2 must not be NULL", op);
    if (out == in || out == w1 || out == w2 || out == b1 || out == b2)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: out aliases an input other than the residual", op);
    if (!swin_mlp_wgmma_supports(dt, M, C, H, out, in, w1, b1, w2, b2, res))
        return swin_fail(SWIN_ERR_UNSUPPORTED,
                         "%s: needs fp16 or bf16, C 96, 128 or 192, H a multiple of %d, M x C and H x C below "
                         "2^31, in, w1, w2 16-byte aligned, out, biases and residual 4-byte aligned "
                         "(dtype %d, M %d, C %d, H %d)",
                         op, HC_MAX, (int)dt, M, C, H);
    if (!swin_gemm_wgmma_available())
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs a GPU of compute capability 9.0 (wgmma, sm_90a)", op);
    if (tma_on() && swin_mlp_tma_supports(M, C, H)) return swin_mlp_tma_cuda(out, in, w1, b1, w2, b2, res, M, C, H, dt, st);
    if (dt == SWIN_DT_F16) return launch_c<__half>(out, in, w1, b1, w2, b2, res, M, C, H, st);
    return launch_c<__nv_bfloat16>(out, in, w1, b1, w2, b2, res, M, C, H, st);
}
