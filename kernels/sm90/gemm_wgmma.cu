/* gemm_wgmma.cu - the tensor-core GEMM of gemm_mma.cu on Hopper's warpgroup MMA (wgmma), for
 * the MLP's fc1 with the exact GELU in its epilogue (the layer cuBLASLt cannot fuse: its GELU
 * epilogue is the tanh approximation, kernels/gemm.c). fp16 / bf16 operands, fp32 accumulation:
 *
 *   out [M, N] = act(in [M, K] @ w [N, K]^T + bias [N])     (act: none or GELU, in fp32)
 *
 * and FP8's fc1 with the GELU and fc2's input quantisation in its epilogue (E4M3 in and out):
 *
 *   out_q [M, N] = e4m3(gelu((in_q @ w_q^T) * col_scale [N] + bias [N]) * out_inv)
 *
 * which replaces cuBLASLt's FP8 fc1 (fp16 out) and a GELU + quantise pass. Its sums stay in the
 * tensor cores' FP8 accumulator for the whole K (no promotion to fp32 every k-tile as cuBLASLt
 * does): about 14 bits relative to the terms, 2^-10 of the E4M3 output's step
 * (tests/test_gpu_fp8.c bounds it).
 *
 * Built for sm_90a only (wgmma is an arch-specific feature of compute capability 9.0; CMake
 * compiles this folder with its own -gencode); elsewhere swin_gemm_wgmma_available() says no and
 * gemm_mma.cu keeps its mma.sync kernel.
 *
 * Kernel: a CTA of two warpgroups (256 threads) computes a 128 x 128 tile of out, each
 * warpgroup 64 rows with wgmma.m64n128k16 (k32 for E4M3; 64 fp32 accumulators a thread).
 * k-tiles of 128 bytes of a row (64 16-bit or 128 E4M3 values) go through a 3-stage cp.async
 * pipeline, every thread copying 16-byte chunks; two CTAs fit an SM (97 KiB of shared memory
 * each), so one's epilogue overlaps the other's mainloop. Both operands are K-major, as wgmma reads them without transposes, stored
 * in the 128-byte swizzle: row r of a tile at byte 128 r, its 16-byte chunk c at chunk
 * c ^ (r % 8), 8-row atoms of 1024 bytes (tiles 1024-byte aligned). A shared-memory matrix
 * descriptor names the atom layout (start address, stride 1024 bytes between 8-row groups,
 * swizzle mode 128B); the 32-byte k steps inside a k-tile advance its start address by 32
 * bytes (the hardware applies the swizzle to the full address). Rows past M or N read the last
 * row (they only feed outputs that are not stored), chunks past K are zero-filled, so any M, and
 * K, N multiples of 8 (16 for E4M3), run (Swin-T's K = 96 is one and a half 16-bit k-tiles).
 * Ordering: cp.async writes shared memory through the generic proxy and wgmma reads it through
 * the async proxy, so every thread fences (fence.proxy.async) after its copies land and before
 * the barrier that publishes them; a k-tile's wgmmas complete (wait_group 0) before the
 * barrier after which its slot is refilled.
 * Epilogue: the accumulator of thread t holds, per 8-column group j, columns 8 j + 2 (t % 4)
 * + {0, 1} of rows 16 (warp % 4) + t / 4 (+ 8); scale, bias and GELU in fp32, rounded once to
 * the output type, staged through shared memory (chunk index XORed with the row, conflict-free)
 * and written as whole 16-byte chunks, 256 (E4M3: 128) contiguous bytes a row. The GELU of
 * 16-bit and E4M3 outputs is swin_gelu_erf16 (common.cuh: Abramowitz & Stegun's erfc, error at
 * most 0.75e-7 |x|, 14 instructions), of fp32 (TF32) outputs swin_gelu_erfc (1.2e-7 fractional,
 * 20 instructions; erff: 26).
 * Where the time goes (H200, ncu, Swin-T fc1 at batch 256, stage 1: 34 instructions an output
 * element with swin_gelu_erfc): the kernel is bound by instruction issue (70% of issue slots
 * busy, DRAM 20%, two CTAs an SM by registers), the GELU being most of the epilogue's
 * instructions and the copies' address arithmetic most of the mainloop's; the loader's
 * set-up-once offsets and the erfc GELU took fc1 + GELU from 3.99 to 3.48 ms (cuBLASLt fc1 + the
 * GELU pass: 3.56), swin_gelu_erf16 to 2.80. Since then the issue is no longer the bound: a GELU
 * of 4 instructions fewer (a logistic of a fitted odd polynomial, error 3e-7 |x|) in place of
 * swin_gelu_erf16 left fc1 + GELU unchanged (H200, Swin-T fp16 batch 256, --breakdown: 2.776
 * against 2.758 ms; end to end 10.482 against 10.485 ms) and was dropped. ncu now (stage 1, fp16,
 * batch 256): 566 us, SM throughput 62%, DRAM 27% (1.31 TB/s), 25% occupancy (two CTAs of 8
 * warps an SM, by registers and shared memory): latency-bound, the epilogue of one CTA and the
 * 1.5 k-tiles of the other not hiding each other. That persistent kernel, its copies and stores
 * through TMA and one tile's epilogue overlapping the next tile's MMAs, is gemm_tma.cu, which
 * the entries below call for 16-bit, TF32 and FP8 outputs of 2 x SMs tiles or more (its header;
 * this kernel stays for smaller outputs and SWIN_GEMM_TMA=0); the MLP as one kernel is
 * mlp_wgmma.cu (not faster yet: its header).
 * Fused against unfused (swin bench's mlp fused / mlp unfus / ratio columns: unfused time over
 * fused). Measured on the H200 (2026-11-26, build/swin bench --precision fp16 --batch 8,64,256
 * -n 30): Swin-T fp16 1.00x at batch 8, 1.07x at 64, 1.08x at 256 (10.67 against 11.48 ms);
 * bf16 1.05x at 256. Per stage at batch 256 (--breakdown, all blocks of a stage), fused fc1 +
 * GELU: stage 0 (K 96, N 384) 0.94 ms, stage 1 (K 192) 0.54, stage 2 (K 384) 1.07, stage 3
 * (K 768) 0.26 (with swin_gelu_erfc before: 1.19, 0.66, 1.32, 0.31), against cuBLASLt's fc1
 * plus the GELU pass: 0.46 + 0.82, 0.26 + 0.42, 0.66 + 0.64, 0.18 + 0.12.
 * TF32 variant, measured on the H200 (2026-11-26, SWIN_TF32_FUSED_MLP=1 and =0 build/swin bench
 * --precision tf32 --batch 256 -n 30): Swin-T tf32 at batch 256 14,455 against 13,582 img/s
 * (docs/PERFORMANCE.md's MLP column then: 1.05x).
 * FP8 fc1 + GELU + fc2's quantisation (swin_gemm_wgmma_fp8_gelu_cuda) against cuBLASLt's FP8 fc1
 * and the GELU + quantise pass (SWIN_FP8_FUSED_MLP=0), measured on the H200 (2026-11-26, Swin-T
 * fp8; no command recorded beyond SWIN_FP8_FUSED_MLP=0 against the default and --breakdown): batch
 * 256 fc1 + GELU + quantisation 2.51 ms against 1.68 + 2.01 (breakdown), end to end 10.20 against
 * 11.37 ms, 2.98 against 3.32 at batch 64, 0.78 against 0.84 at 8. Its GELU has since run in
 * f16x2 arithmetic (FP8_GELU_H2; gemm_sm90.cuh, at fp8_gelu_h2_ok: why, and what it measured).
 * Test: tests/test_gpu_gemm.c (swin_gemm_wgmma_cuda directly, and through swin_linear_cuda),
 * tests/test_gpu_fp8.c (swin_gemm_wgmma_fp8_gelu_cuda against the host).
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "common.cuh"
#include "gemm.h"
#include "sm90/gemm_sm90.cuh"
#include "sm90/gemm_tma.h"
#include "sm90/tma_map.h"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "gemm_wgmma.cu is built for sm_90a only (CMakeLists.txt)"
#endif

namespace {

using namespace sm90;

/* Tiles in bytes: a k-tile row is 128 bytes whatever the element (64 16-bit, 128 E4M3 values) */
constexpr int BM = 128, BN = 128, ROW = 128, STAGES = 3, THREADS = 256;
constexpr int TILE_A = BM * ROW, TILE_B = BN * ROW, STAGE_BYTES = TILE_A + TILE_B;
constexpr size_t SMEM = (size_t)STAGES * STAGE_BYTES + 1024;   /* + room to align to 1024 */

/* byte offset of byte b (of 16-byte chunk b / 16) of row r in the epilogue's staging tile (rows of
 * RB bytes, the chunk index XORed with r % 8) */
template <int RB>
__device__ __forceinline__ int swz_out(int r, int b) { return r * RB + ((((b >> 4) ^ (r & 7))) << 4) + (b & 15); }

template <class E, int EPI>
__global__ void __launch_bounds__(THREADS, 2)
gemm_wgmma_kernel(void *__restrict__ out, const typename E::T *__restrict__ in, const typename E::T *__restrict__ w,
                  Epi ep, int M, int K, int N) {
    swin_pdl_begin();
    typedef typename E::T T;
    constexpr int BK = ROW / E::ESZ;                        /* elements of K a k-tile */
    constexpr int OSZ = e4m3_out<EPI>() ? 1 : E::ESZ, OROW = BN * OSZ;   /* output bytes an element, a tile row */
    extern __shared__ unsigned char smem_raw[];
    /* the pipeline's stages from a 1024-byte aligned shared address on (the swizzle's atoms) */
    const uint32_t s0 = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, wq = (tid >> 5) & 3;
    const int n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
    const int KT = (K + BK - 1) / BK;

    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] = 0.0f;

    TileLoader<BM, T> la;
    TileLoader<BN, T> lb;
    la.init(in, m0, M, K, tid), lb.init(w, n0, N, K, tid);
    auto load_stage = [&](int slot, int kt) {
        const uint32_t sa = s0 + slot * STAGE_BYTES;
        la.load(sa, kt * BK, K);
        lb.load(sa + TILE_A, kt * BK, K);
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < KT) load_stage(s, s);
        cp_async_commit();   /* empty groups keep the count that cp_async_wait relies on */
    }
    int use = 0, fill = STAGES - 1;   /* the slots of k-tiles kt and kt + STAGES - 1 */
    for (int kt = 0; kt < KT; kt++) {
        cp_async_wait<STAGES - 2>();
        fence_proxy_async();
        __syncthreads();   /* stage kt landed for every thread; slot (kt - 1) % STAGES is free */
        if (kt + STAGES - 1 < KT) load_stage(fill, kt + STAGES - 1);
        cp_async_commit();
        const uint32_t sa = s0 + use * STAGE_BYTES;
        const uint64_t da = sw128_desc(sa + wg * 64 * ROW), db = sw128_desc(sa + TILE_A);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < ROW / 32; ks++) wgmma_64x128<E>(d, da + 2 * ks, db + 2 * ks);   /* + 32 bytes */
        wgmma_commit();
        wgmma_wait_all();
        use = use == STAGES - 1 ? 0 : use + 1, fill = fill == STAGES - 1 ? 0 : fill + 1;
    }
    cp_async_wait_all();
    __syncthreads();   /* every warpgroup is done with the pipeline's shared memory */

    /* epilogue: into a [BM][OROW bytes] staging tile, chunk c of row r at c ^ (r % 8) */
    static_assert(BM * OROW <= STAGES * STAGE_BYTES, "the staging tile fits the pipeline's shared memory");
    unsigned char *stage = smem_raw + (s0 - smem_addr(smem_raw));
    const int r_lo = wg * 64 + wq * 16 + (lane >> 2);
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        const int c = j * 8 + 2 * (lane & 3), col = n0 + c;
        float2 b, cs;
        epi_coeffs<E, EPI>(ep, col, N, b, cs);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = r_lo + h * 8;
            epi_store<E, EPI>(stage + swz_out<OROW>(r, OSZ * c), d[4 * j + 2 * h], d[4 * j + 2 * h + 1], b, cs, ep);
        }
    }
    __syncthreads();
    /* whole 16-byte chunks, OROW / 16 a row; a warp writes whole rows per step */
    constexpr int RCH = OROW / 16, CCOL = 16 / OSZ;   /* chunks a row, columns a chunk */
#pragma unroll
    for (int i = tid; i < BM * RCH; i += THREADS) {
        const int r = i / RCH, ch = i % RCH, row = m0 + r, col = n0 + ch * CCOL;
        if (row >= M || col >= N) continue;
        *reinterpret_cast<uint4 *>((unsigned char *)out + ((size_t)row * N + col) * OSZ) =
            *reinterpret_cast<const uint4 *>(stage + r * OROW + ((ch ^ (r & 7)) << 4));
    }
}

template <class E, int EPI>
swin_status launch(void *out, const void *in, const void *w, Epi ep, int M, int K, int N, cudaStream_t st) {
    typedef typename E::T T;
    /* above 48 KiB of dynamic shared memory needs the opt-in (the attribute is per device) */
    SWIN_CUDA_TRY(cudaFuncSetAttribute(gemm_wgmma_kernel<E, EPI>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)SMEM));
    dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));   /* along N fastest: A shared in L2 */
    swin_launch(gemm_wgmma_kernel<E, EPI>, grid, THREADS, SMEM, st, out, (const T *)in, (const T *)w, ep, M, K, N);
    SWIN_LAUNCH_CHECK("gemm_wgmma_kernel", st);
    return SWIN_OK;
}

} // namespace

/* 1 when the current GPU runs this file's kernels: compute capability 9.0 and a loadable image
 * (this file is built for sm_90a only); cached per device */
extern "C" int swin_gemm_wgmma_available(void) {
    static int known[64];
    return swin_device_once(known, [](int dev) {
        int major = 0, minor = 0;
        cudaFuncAttributes fa;
        return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
               cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
               minor == 0 && cudaFuncGetAttributes(&fa, gemm_wgmma_kernel<F16, GELU>) == cudaSuccess;
    });
}

extern "C" int swin_gemm_wgmma_supports(swin_dtype dt, int M, int K, int N, const void *out, const void *in,
                                        const void *w, const void *bias) {
    const uintptr_t pair = dt == SWIN_DT_F32 ? 8u : 4u;   /* the epilogue's bias loads */
    return (dt == SWIN_DT_F16 || dt == SWIN_DT_BF16 || dt == SWIN_DT_F32) && M > 0 && K > 0 && N > 0 && K % 8 == 0 &&
           N % 8 == 0 && (long long)M * K < INT_MAX && (long long)N * K < INT_MAX &&   /* 32-bit loader offsets */
           !(((uintptr_t)out | (uintptr_t)in | (uintptr_t)w) & 15u) && !((uintptr_t)bias & (pair - 1));
}

extern "C" swin_status swin_gemm_wgmma_cuda(void *out, const void *in, const void *w, const void *bias, int M,
                                            int K, int N, swin_act act, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_gemm_wgmma_cuda";
    SWIN_TRY(swin_gemm_mma_check(op,
                                 "fp16, bf16 or fp32 (TF32), M, K, N > 0 with K and N multiples of 8, M x K and N x K "
                                 "below 2^31, 16-byte aligned out, in and w, a bias aligned to a pair of elements",
                                 swin_gemm_wgmma_supports(dt, M, K, N, out, in, w, bias), out, in, w, act, dt, M, K,
                                 N));
    if (!swin_gemm_wgmma_available())
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs a GPU of compute capability 9.0 (wgmma, sm_90a)", op);
    if (swin_gemm_tma_wanted(M, N)) return swin_gemm_tma_cuda(out, in, w, bias, M, K, N, act, dt, st);
    const Epi ep = {bias, NULL, 1.0f};
    const bool gelu = act == SWIN_ACT_GELU;
    if (dt == SWIN_DT_F16)
        return gelu ? launch<F16, GELU>(out, in, w, ep, M, K, N, st) : launch<F16, PLAIN>(out, in, w, ep, M, K, N, st);
    if (dt == SWIN_DT_BF16)
        return gelu ? launch<BF16, GELU>(out, in, w, ep, M, K, N, st) : launch<BF16, PLAIN>(out, in, w, ep, M, K, N, st);
    return gelu ? launch<TF32, GELU>(out, in, w, ep, M, K, N, st) : launch<TF32, PLAIN>(out, in, w, ep, M, K, N, st);
}

/* what both linear entries (16-bit / TF32 and FP8) need beyond their operands' shapes and types:
 * a 16-byte aligned residual, out and the residual apart from the inputs, Hopper, and enough tiles */
static bool linear_apart(int M, int N, const void *out, const void *in, const void *w, const void *residual) {
    return !((uintptr_t)residual & 15u) && residual != in && residual != w && out != in && out != w &&
           swin_gemm_wgmma_available() && swin_gemm_tma_wanted(M, N);
}

extern "C" int swin_gemm_wgmma_linear_supports(swin_dtype dt, int M, int K, int N, const void *out, const void *in,
                                               const void *w, const void *bias, const void *residual) {
    return swin_gemm_wgmma_supports(dt, M, K, N, out, in, w, bias) && linear_apart(M, N, out, in, w, residual);
}

extern "C" swin_status swin_gemm_wgmma_linear_cuda(void *out, const void *in, const void *w, const void *bias,
                                                   const void *residual, int M, int K, int N, swin_dtype dt,
                                                   cudaStream_t st) {
    static const char op[] = "swin_gemm_wgmma_linear_cuda";
    if (!out || !in || !w) return swin_fail(SWIN_ERR_ARGUMENT, "%s: out, in and w must not be NULL", op);
    if (!swin_gemm_wgmma_linear_supports(dt, M, K, N, out, in, w, bias, residual))
        return swin_fail(SWIN_ERR_UNSUPPORTED,
                         "%s: needs a GPU of compute capability 9.0, fp16, bf16 or fp32 (TF32), K and N multiples "
                         "of 8, out, in, w and the residual 16-byte aligned, out and the residual apart from the "
                         "inputs, and an output of enough 128 x 128 tiles for the persistent kernel (M %d, K %d, N %d)",
                         op, M, K, N);
    return swin_gemm_tma_linear_cuda(out, in, w, bias, residual, M, K, N, dt, st);
}

extern "C" int swin_gemm_wgmma_linear_fp8_supports(int M, int K, int N, const void *out, const void *in_q,
                                                   const void *w_q, const float *col_scale, const void *bias,
                                                   const void *residual) {
    return M > 0 && K > 0 && N > 0 && K % 16 == 0 && N % 8 == 0 && (long long)M * K < INT_MAX &&
           (long long)M * N < INT_MAX && (long long)N * K < INT_MAX && col_scale &&
           !(((uintptr_t)out | (uintptr_t)in_q | (uintptr_t)w_q) & 15u) && !((uintptr_t)col_scale & 7u) &&
           !((uintptr_t)bias & 3u) && linear_apart(M, N, out, in_q, w_q, residual);
}

extern "C" swin_status swin_gemm_wgmma_linear_fp8_cuda(void *out, const uint8_t *in_q, const uint8_t *w_q,
                                                       const float *col_scale, const void *bias, const void *residual,
                                                       int M, int K, int N, cudaStream_t st) {
    static const char op[] = "swin_gemm_wgmma_linear_fp8_cuda";
    if (!out || !in_q || !w_q || !col_scale)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: out, in_q, w_q and col_scale must not be NULL", op);
    if (!swin_gemm_wgmma_linear_fp8_supports(M, K, N, out, in_q, w_q, col_scale, bias, residual))
        return swin_fail(SWIN_ERR_UNSUPPORTED,
                         "%s: needs a GPU of compute capability 9.0 with TMA, K a multiple of 16 and N of 8, M x K, "
                         "M x N and N x K below 2^31, out, in_q, w_q and the residual 16-byte aligned, col_scale 8, "
                         "bias 4, out and the residual apart from the inputs, and an output of enough 128 x 128 tiles "
                         "for the persistent kernel (M %d, K %d, N %d)", op, M, K, N);
    return swin_gemm_tma_linear_fp8_cuda(out, in_q, w_q, col_scale, bias, residual, M, K, N, st);
}

/* FP8 layers with E4M3 outputs: fc1 + GELU (gelu 1) or the qkv GEMM (gelu 0, FP8_OUT) */
static swin_status fp8_out(const char *op, int gelu, uint8_t *out_q, const uint8_t *in_q, const uint8_t *w_q,
                           const float *col_scale, const void *bias, float out_inv, int M, int K, int N,
                           cudaStream_t st) {
    if (!out_q || !in_q || !w_q || !col_scale)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: out_q, in_q, w_q and col_scale must not be NULL", op);
    if (M <= 0 || K <= 0 || N <= 0 || K % 16 || N % 16)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs M, K, N > 0, K and N multiples of 16 (M %d, K %d, N %d)",
                         op, M, K, N);
    if ((((uintptr_t)out_q | (uintptr_t)in_q | (uintptr_t)w_q) & 15u) || ((uintptr_t)col_scale & 7u) ||
        ((uintptr_t)bias & 3u))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: out_q, in_q, w_q 16-byte aligned, col_scale 8, bias 4", op);
    if ((const void *)out_q == (const void *)in_q || (const void *)out_q == (const void *)w_q)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: out aliases an input", op);
    if (!(out_inv > 0.0f) || !isfinite(out_inv))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: out_inv %g (expected finite > 0)", op, (double)out_inv);
    if ((long long)M * K >= INT_MAX || (long long)N * K >= INT_MAX)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: M x K and N x K must be below 2^31 (M %d, K %d, N %d)", op, M, K, N);
    if (!swin_gemm_wgmma_available())
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs a GPU of compute capability 9.0 (wgmma, sm_90a)", op);
    if (swin_gemm_tma_wanted(M, N))
        return swin_gemm_tma_fp8_out_cuda(out_q, in_q, w_q, col_scale, bias, out_inv, gelu, M, K, N, st);
    const Epi ep = {bias, col_scale, out_inv};
    if (!gelu) return launch<E4M3, FP8_OUT>(out_q, in_q, w_q, ep, M, K, N, st);
    return fp8_gelu_h2_ok(out_inv) ? launch<E4M3, FP8_GELU_H2>(out_q, in_q, w_q, ep, M, K, N, st)
                                   : launch<E4M3, FP8_GELU>(out_q, in_q, w_q, ep, M, K, N, st);
}

extern "C" swin_status swin_gemm_wgmma_fp8_gelu_cuda(uint8_t *out_q, const uint8_t *in_q, const uint8_t *w_q,
                                                    const float *col_scale, const void *bias, float out_inv, int M,
                                                    int K, int N, cudaStream_t st) {
    return fp8_out("swin_gemm_wgmma_fp8_gelu_cuda", 1, out_q, in_q, w_q, col_scale, bias, out_inv, M, K, N, st);
}

extern "C" swin_status swin_gemm_wgmma_fp8_out_cuda(uint8_t *out_q, const uint8_t *in_q, const uint8_t *w_q,
                                                   const float *col_scale, const void *bias, int M, int K, int N,
                                                   cudaStream_t st) {
    return fp8_out("swin_gemm_wgmma_fp8_out_cuda", 0, out_q, in_q, w_q, col_scale, bias, 1.0f, M, K, N, st);
}

extern "C" int swin_gemm_ln_fold_supports(swin_dtype dt, int C, int H) {
    return (dt == SWIN_DT_F16 || dt == SWIN_DT_BF16) && C > 0 && H > 0 && C % 8 == 0 && H % 8 == 0 &&
           (long long)H * C < INT_MAX && swin_gemm_wgmma_available() && swin_tma_available();
}

static int misaligned(const void *p, uintptr_t a) { return ((uintptr_t)p & (a - 1)) != 0; }

extern "C" swin_status swin_gemm_wgmma_proj_scatter_cuda(void *x, float *part, const void *win, const void *w,
                                                         const void *bias, const swin_dims *d, swin_dtype dt,
                                                         cudaStream_t st) {
    static const char op[] = "swin_gemm_wgmma_proj_scatter_cuda";
    if (!x || !part || !win || !w || !d) return swin_fail(SWIN_ERR_ARGUMENT, "%s: NULL argument (only bias may be NULL)", op);
    if (!swin_gemm_ln_fold_supports(dt, d->C, d->C))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs a GPU of compute capability 9.0 with TMA, fp16 or bf16 and C "
                         "a multiple of 8 (dtype %d, C %d)", op, (int)dt, d->C);
    if (misaligned(x, 16) || misaligned(win, 16) || misaligned(w, 16) || misaligned(bias, 4) || misaligned(part, 8))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: x, win and w must be 16-byte aligned, bias 4, part 8", op);
    if (x == win || x == w || (const void *)part == x || (const void *)part == win)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: x, part and the inputs must be different buffers", op);
    if ((long long)d->B * d->hp * d->wp * d->C >= INT_MAX)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: %d images of %dx%d tokens x C %d reach 2^31", op, d->B, d->hp,
                         d->wp, d->C);
    return swin_gemm_tma_proj_scatter_cuda(x, part, win, w, bias, d, dt, st);
}

extern "C" int swin_gemm_post_ln_supports(swin_dtype dt, int M, int K, int N) {
    return (dt == SWIN_DT_F16 || dt == SWIN_DT_BF16) && M > 0 && K > 0 && N > 0 && K % 8 == 0 && N % 8 == 0 &&
           N <= 128 && (long long)M * K < INT_MAX && (long long)M * N < INT_MAX && (long long)N * K < INT_MAX &&
           swin_gemm_wgmma_available() && swin_tma_available();
}

extern "C" int swin_gemm_post_ln_fp8_supports(int M, int K, int N) {
    return K % 16 == 0 && swin_gemm_post_ln_supports(SWIN_DT_F16, M, K, N);
}

/* the two post-norm entries' checks (fp8: E4M3 in and w with col_scale, fp16 x), then the kernel */
static swin_status post_ln_entry(const char *op, int fp8, void *x, const void *in, const void *w,
                                 const float *col_scale, const void *bias, const float *gamma, const float *beta,
                                 float eps, int M, int K, int N, swin_dtype dt, cudaStream_t st) {
    if (!x || !in || !w || (fp8 && !col_scale) || !gamma || !beta)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: NULL argument (only bias may be NULL)", op);
    if (!(fp8 ? swin_gemm_post_ln_fp8_supports(M, K, N) : swin_gemm_post_ln_supports(dt, M, K, N)))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs a GPU of compute capability 9.0 with TMA, %s, N <= 128, M > 0, "
                         "M x K and M x N below 2^31 (dtype %d, M %d, K %d, N %d)", op,
                         fp8 ? "K a multiple of 16, N of 8" : "fp16 or bf16, K and N multiples of 8", (int)dt, M, K, N);
    if (!(eps > 0.0f) || !isfinite(eps)) return swin_fail(SWIN_ERR_ARGUMENT, "%s: eps %g (expected finite > 0)", op, (double)eps);
    if (misaligned(x, 16) || misaligned(in, 16) || misaligned(w, 16) || misaligned(bias, 4) || misaligned(gamma, 8) ||
        misaligned(beta, 8) || misaligned(col_scale, 8))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: x, in and w must be 16-byte aligned, bias 4, gamma, beta (and "
                         "col_scale) 8", op);
    if (x == in || x == w) return swin_fail(SWIN_ERR_ARGUMENT, "%s: x must not alias in or w", op);
    if (fp8)
        return swin_gemm_tma_post_ln_fp8_cuda(x, static_cast<const uint8_t *>(in), static_cast<const uint8_t *>(w),
                                              col_scale, bias, gamma, beta, eps, M, K, N, st);
    return swin_gemm_tma_post_ln_cuda(x, in, w, bias, gamma, beta, eps, M, K, N, dt, st);
}

extern "C" swin_status swin_gemm_wgmma_post_ln_cuda(void *x, const void *in, const void *w, const void *bias,
                                                    const float *gamma, const float *beta, float eps, int M, int K,
                                                    int N, swin_dtype dt, cudaStream_t st) {
    return post_ln_entry("swin_gemm_wgmma_post_ln_cuda", 0, x, in, w, NULL, bias, gamma, beta, eps, M, K, N, dt, st);
}

extern "C" swin_status swin_gemm_wgmma_post_ln_fp8_cuda(void *x, const uint8_t *in_q, const uint8_t *w_q,
                                                        const float *col_scale, const void *bias, const float *gamma,
                                                        const float *beta, float eps, int M, int K, int N,
                                                        cudaStream_t st) {
    return post_ln_entry("swin_gemm_wgmma_post_ln_fp8_cuda", 1, x, in_q, w_q, col_scale, bias, gamma, beta, eps, M, K,
                         N, SWIN_DT_F16, st);
}

extern "C" swin_status swin_gemm_wgmma_ln_gelu_cuda(void *out, const void *x, const float *part, const void *w_fold,
                                                    const float *colsum, const float *b_fold, int T, int C, int H,
                                                    float eps, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_gemm_wgmma_ln_gelu_cuda";
    if (!out || !x || !part || !w_fold || !colsum || !b_fold)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: NULL argument", op);
    if (!swin_gemm_ln_fold_supports(dt, C, H))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs a GPU of compute capability 9.0 with TMA, fp16 or bf16, C and "
                         "H multiples of 8 (dtype %d, C %d, H %d)", op, (int)dt, C, H);
    if (T <= 0 || (long long)T * C >= INT_MAX || (long long)T * H >= INT_MAX)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: T %d must be positive and T x C, T x H below 2^31", op, T);
    if (!(eps > 0.0f) || !isfinite(eps)) return swin_fail(SWIN_ERR_ARGUMENT, "%s: eps %g (expected finite > 0)", op, (double)eps);
    if (misaligned(out, 16) || misaligned(x, 16) || misaligned(w_fold, 16) || misaligned(part, 8) ||
        misaligned(colsum, 8) || misaligned(b_fold, 8))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: out, x and w_fold must be 16-byte aligned, part, colsum, b_fold 8", op);
    if (out == x || out == w_fold || out == (const void *)part)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: out must not alias x, w_fold or part", op);
    return swin_gemm_tma_ln_gelu_cuda(out, x, part, w_fold, colsum, b_fold, T, C, H, eps, dt, st);
}
