/* gemm_wgmma.cu - the tensor-core GEMM of gemm_mma.cu on Hopper's warpgroup MMA (wgmma), for
 * the MLP's fc1 with the exact GELU in its epilogue (the layer cuBLASLt cannot fuse: its GELU
 * epilogue is the tanh approximation, kernels/gemm.c). fp16 / bf16 operands, fp32 accumulation:
 *
 *   out [M, N] = act(in [M, K] @ w [N, K]^T + bias [N])     (act: none or GELU, in fp32)
 *
 * Built for sm_90a only (wgmma is an arch-specific feature of compute capability 9.0; CMake
 * compiles this folder with its own -gencode); elsewhere swin_gemm_wgmma_available() says no and
 * gemm_mma.cu keeps its mma.sync kernel.
 *
 * Kernel: a CTA of two warpgroups (256 threads) computes a 128 x 128 tile of out, each
 * warpgroup 64 rows with wgmma.m64n128k16 (64 fp32 accumulators a thread). k-tiles of 64
 * (128 bytes of a row) go through a 3-stage cp.async pipeline, every thread copying 16-byte
 * chunks; two CTAs fit an SM (97 KiB of shared memory each), so one's epilogue overlaps the
 * other's mainloop. Both operands are K-major, as wgmma reads them without transposes, stored
 * in the 128-byte swizzle: row r of a tile at byte 128 r, its 16-byte chunk c at chunk
 * c ^ (r % 8), 8-row atoms of 1024 bytes (tiles 1024-byte aligned). A shared-memory matrix
 * descriptor names the atom layout (start address, stride 1024 bytes between 8-row groups,
 * swizzle mode 128B); the k16 steps inside a k-tile advance its start address by 32 bytes (the
 * hardware applies the swizzle to the full address). Rows past M or N read the last row (they
 * only feed outputs that are not stored), chunks past K are zero-filled, so any M, and K, N
 * multiples of 8, run (Swin-T's K = 96 is one and a half k-tiles).
 * Ordering: cp.async writes shared memory through the generic proxy and wgmma reads it through
 * the async proxy, so every thread fences (fence.proxy.async) after its copies land and before
 * the barrier that publishes them; a k-tile's wgmmas complete (wait_group 0) before the
 * barrier after which its slot is refilled.
 * Epilogue: the accumulator of thread t holds, per 8-column group j, columns 8 j + 2 (t % 4)
 * + {0, 1} of rows 16 (warp % 4) + t / 4 (+ 8); bias and GELU in fp32, rounded once to 16 bits,
 * staged through shared memory (chunk index XORed with the row, conflict-free) and written as
 * whole 16-byte chunks, 256 contiguous bytes a row. The GELU is swin_gelu_erfc (common.cuh: the
 * erf GELU through an erfc with 1.2e-7 fractional error, 20 instructions against erff's 26).
 * Where the time goes (H200, ncu, Swin-T fc1 at batch 256): the kernel is bound by instruction
 * issue (71% of issue slots busy, DRAM 20%, two CTAs an SM by registers), the GELU being most of
 * the epilogue's instructions and the copies' address arithmetic most of the mainloop's; the
 * loader's set-up-once offsets and the erfc GELU took fc1 + GELU from 3.99 to 3.48 ms (cuBLASLt
 * fc1 + the GELU pass: 3.56). Next: TMA for the copies (no per-thread addresses), and fc2 from
 * the hidden kept on chip.
 * Test: tests/test_gpu_gemm.c (swin_gemm_wgmma_cuda directly, and through swin_gemm_mma_cuda).
 */
#include <limits.h>
#include <stdint.h>

#include "common.cuh"
#include "gemm.h"
#include "mma.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "gemm_wgmma.cu is built for sm_90a only (CMakeLists.txt)"
#endif

namespace {

constexpr int BM = 128, BN = 128, BK = 64, STAGES = 3, THREADS = 256;
constexpr int TILE_A = BM * BK, TILE_B = BN * BK;          /* 16-bit elements */
constexpr int STAGE_ELEMS = TILE_A + TILE_B;
constexpr size_t SMEM = (size_t)STAGES * STAGE_ELEMS * 2 + 1024;   /* + room to align to 1024 */

/* element offset of 16-byte chunk ch of row r in a 128-byte-swizzled tile */
__device__ __forceinline__ int swz(int r, int ch) { return (r * 8 + (ch ^ (r & 7))) * 8; }

/* element offset of column c (even) of row r in the epilogue's [BM][BN] staging tile */
__device__ __forceinline__ int swz_out(int r, int c) { return r * BN + ((((c >> 3) ^ (r & 7))) << 3) + (c & 7); }

/* 16-byte async copy global -> shared (a shared-window address); when !valid zero-filled, src not read */
__device__ __forceinline__ void cp_async16_s(uint32_t dst, const void *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(__cvta_generic_to_global(src)),
                 "r"(valid ? 16 : 0));
}

/* A thread's share of copying a k-tile of a K-contiguous matrix (rows r0 .. r0 + R) into shared
 * memory: 16-byte chunk column tid % 8 of rows tid / 8 + 32 j. The rows' offsets and the shared
 * offset are set up once, a k-tile adds k0: the per-copy address arithmetic, recomputed per
 * chunk, had been a quarter to a half of the kernel's instructions. Rows past the matrix read its
 * last row instead (they only feed output rows or columns that are not stored), so only the K
 * tail needs zero-filling; offsets are 32-bit (the launcher checks rows x K < 2^31). */
template <int R, typename T>
struct TileLoader {
    static constexpr int J = R / 32;
    const T *g;          /* column 8 (tid % 8) of row 0 */
    int off[J];          /* elements from g to row tid / 8 + 32 j (clamped) */
    uint32_t soff;       /* bytes from a tile's start to the thread's first chunk */
    int k8;              /* 8 (tid % 8): the chunk's first column within a k-tile */
    __device__ __forceinline__ void init(const T *base, int r0, int rows, int K, int tid) {
        const int r = tid >> 3;
        k8 = (tid & 7) * 8, g = base + k8, soff = (uint32_t)swz(r, tid & 7) * 2;
#pragma unroll
        for (int j = 0; j < J; j++) off[j] = min(r0 + r + 32 * j, rows - 1) * K;
    }
    __device__ __forceinline__ void load(uint32_t s, int k0, int K) const {
        const bool ok = k0 + k8 < K;
        const int kk = ok ? k0 : 0;
#pragma unroll
        for (int j = 0; j < J; j++)   /* row + 32 j: the same swizzle, 32 rows of 128 bytes further on */
            cp_async16_s(s + soff + j * 32 * BK * 2, g + off[j] + kk, ok);
    }
};

/* shared-memory matrix descriptor of the tile at shared address a: K-major, 128-byte swizzle,
 * 8-row groups 1024 bytes apart */
__device__ __forceinline__ uint64_t sw128_desc(uint32_t a) {
    return (uint64_t)((a & 0x3FFFF) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

#define WG_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                 "+f"(d[i + 6]), "+f"(d[i + 7])
#define WG_D64 WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56)
#define WG_REGS "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "            \
                "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "  \
                "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "  \
                "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define WG_MMA(TY)                                                                              \
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " WG_REGS            \
                 ", %64, %65, 1, 1, 1, 0, 0;\n"                                                 \
                 : WG_D64                                                                       \
                 : "l"(da), "l"(db))

/* d [64] += A (64 x 16, descriptor da) @ B (128 x 16, descriptor db)^T */
template <typename T> __device__ __forceinline__ void wgmma_64x128(float d[64], uint64_t da, uint64_t db);
template <> __device__ __forceinline__ void wgmma_64x128<__half>(float d[64], uint64_t da, uint64_t db) { WG_MMA("f16"); }
template <> __device__ __forceinline__ void wgmma_64x128<__nv_bfloat16>(float d[64], uint64_t da, uint64_t db) {
    WG_MMA("bf16");
}

template <typename T, bool GELU>
__global__ void __launch_bounds__(THREADS, 2)
gemm_wgmma_kernel(T *__restrict__ out, const T *__restrict__ in, const T *__restrict__ w, const T *__restrict__ bias,
                  int M, int K, int N) {
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
        const uint32_t sa = s0 + slot * STAGE_ELEMS * 2;
        la.load(sa, kt * BK, K);
        lb.load(sa + TILE_A * 2, kt * BK, K);
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
        const uint32_t sa = s0 + use * STAGE_ELEMS * 2;
        const uint64_t da = sw128_desc(sa + wg * 64 * BK * 2), db = sw128_desc(sa + TILE_A * 2);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < BK / 16; ks++) wgmma_64x128<T>(d, da + 2 * ks, db + 2 * ks);   /* + 32 bytes */
        wgmma_commit();
        wgmma_wait_all();
        use = use == STAGES - 1 ? 0 : use + 1, fill = fill == STAGES - 1 ? 0 : fill + 1;
    }
    cp_async_wait_all();
    __syncthreads();   /* every warpgroup is done with the pipeline's shared memory */

    /* epilogue: bias, GELU, round; into a [BM][BN] staging tile, chunk c of row r at c ^ (r % 8) */
    T *stage = reinterpret_cast<T *>(smem_raw + (s0 - smem_addr(smem_raw)));
    const int r_lo = wg * 64 + wq * 16 + (lane >> 2);
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        const int c = j * 8 + 2 * (lane & 3), col = n0 + c;
        float2 b = make_float2(0.0f, 0.0f);   /* the bias pair (4-byte aligned: swin_gemm_mma_supports) */
        if (bias && col < N) b = unpack2<T>(*reinterpret_cast<const uint32_t *>(bias + col));
        const float b0 = b.x, b1 = b.y;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = r_lo + h * 8;
            float v0 = d[4 * j + 2 * h] + b0, v1 = d[4 * j + 2 * h + 1] + b1;
            if (GELU) v0 = swin_gelu_erfc(v0), v1 = swin_gelu_erfc(v1);
            *reinterpret_cast<uint32_t *>(stage + swz_out(r, c)) = pack2<T>(v0, v1);
        }
    }
    __syncthreads();
    /* 16 chunks of 16 bytes a row; a warp writes two whole rows per step */
#pragma unroll
    for (int i = tid; i < BM * BN / 8; i += THREADS) {
        const int r = i >> 4, ch = i & 15, row = m0 + r, col = n0 + ch * 8;
        if (row >= M || col >= N) continue;
        *reinterpret_cast<uint4 *>(out + (size_t)row * N + col) =
            *reinterpret_cast<const uint4 *>(stage + r * BN + ((ch ^ (r & 7)) * 8));
    }
}


template <typename T, bool GELU>
swin_status launch(T *out, const T *in, const T *w, const T *bias, int M, int K, int N, cudaStream_t st) {
    /* above 48 KiB of dynamic shared memory needs the opt-in (the attribute is per device) */
    SWIN_CUDA_TRY(cudaFuncSetAttribute(gemm_wgmma_kernel<T, GELU>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)SMEM));
    dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));   /* along N fastest: A shared in L2 */
    gemm_wgmma_kernel<T, GELU><<<grid, THREADS, SMEM, st>>>(out, in, w, bias, M, K, N);
    SWIN_LAUNCH_CHECK("gemm_wgmma_kernel", st);
    return SWIN_OK;
}

} // namespace

/* 1 when the current GPU runs this file's kernels: compute capability 9.0 and a loadable image
 * (this file is built for sm_90a only); cached per device */
extern "C" int swin_gemm_wgmma_available(void) {
    static int known[64];   /* 0 unknown, 1 yes, 2 no; a race only repeats the query */
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return (void)cudaGetLastError(), 0;
    if (dev >= 0 && dev < 64 && known[dev]) return known[dev] == 1;
    int major = 0, minor = 0;
    int ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
             cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
             major == 9 && minor == 0;
    cudaFuncAttributes fa;
    if (ok && cudaFuncGetAttributes(&fa, gemm_wgmma_kernel<__half, true>) != cudaSuccess) ok = 0;
    (void)cudaGetLastError();   /* a missing image is an answer here, not an error for the next launch */
    if (dev >= 0 && dev < 64) known[dev] = ok ? 1 : 2;
    return ok;
}

extern "C" swin_status swin_gemm_wgmma_cuda(void *out, const void *in, const void *w, const void *bias, int M,
                                            int K, int N, swin_act act, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_gemm_wgmma_cuda";
    SWIN_TRY(swin_gemm_mma_check(op, out, in, w, bias, M, K, N, act, dt));
    if ((long long)M * K >= INT_MAX || (long long)N * K >= INT_MAX)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: M x K and N x K must be below 2^31 (M %d, K %d, N %d)", op, M, K, N);
    if (!swin_gemm_wgmma_available())
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs a GPU of compute capability 9.0 (wgmma, sm_90a)", op);
    const bool gelu = act == SWIN_ACT_GELU;
    if (dt == SWIN_DT_F16) {
        typedef __half H;
        return gelu ? launch<H, true>((H *)out, (const H *)in, (const H *)w, (const H *)bias, M, K, N, st)
                    : launch<H, false>((H *)out, (const H *)in, (const H *)w, (const H *)bias, M, K, N, st);
    }
    typedef __nv_bfloat16 B;
    return gelu ? launch<B, true>((B *)out, (const B *)in, (const B *)w, (const B *)bias, M, K, N, st)
                : launch<B, false>((B *)out, (const B *)in, (const B *)w, (const B *)bias, M, K, N, st);
}
