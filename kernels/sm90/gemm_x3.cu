/* gemm_x3.cu - fp32 linear layers on Hopper's TF32 tensor cores with fp32 accuracy ("3xTF32"):
 *
 *   out [M, N] = act(in [M, K] @ w [N, K]^T + bias [N]) (+ residual [M, N], may be out itself)
 *
 * fp32 data, act none or the exact (erff) GELU (not with a residual). Each operand value x is
 * split in shared memory into a TF32 head h = rna_tf32(x) and a TF32 tail l = rna_tf32(x - h)
 * (x - h is exact in fp32), and each product is summed as a_l b_h + a_h b_l + a_h b_h on the
 * TF32 tensor cores into fp32 accumulators; the dropped a_l b_l and the tail's rounding leave at
 * most 3 x 2^-22 |a b| a product (TF32 keeps 11 significant bits: |x - h| <= 2^-11 |x|, and l
 * is x - h to 2^-11 of itself), about the error of the fp32 sum over K itself (K 2^-24 at
 * worst), at three TF32 GEMMs' cost on tensor cores whose TF32 rate is several times the fp32
 * SIMT rate. Measured (H200, 2026-11-27): test_gpu_gemm's cases against a double reference at
 * most 4.0e-7 of max|ref| (K up to 1536); `swin verify --precision fp32` on a full-size random
 * Swin-T (tools/random_model.py, make_reference.py --batch 4) 3.6e-7 relative, cuBLASLt's SGEMM
 * 2.1e-7; the fixtures at most 1.3e-6 and 1.5e-6 in two runs (SGEMM 1.0e-6).
 *
 * Kernel: a CTA of two warpgroups computes a 64 x 128 tile (each warpgroup 64 x 64 with
 * wgmma.m64n64k8: 32 accumulators a thread, and 32 for the running total); k-tiles of 32 fp32
 * values go through two cp.async stages, every thread copying 16-byte chunks into the 128-byte
 * swizzle (TileLoader, gemm_sm90.cuh: rows past M or N read the last row, chunks past K are
 * zero-filled), and one pair of tail tiles. Once its copies of a k-tile have landed, each thread
 * splits the chunks it copied (heads in place, tails at the same offsets in the tail tiles),
 * fences for the async proxy, and after a barrier the warpgroups run 12 wgmmas a k-tile (3
 * products x 4 k steps) into zeroed accumulators, which are then added to the running total in
 * fp32 (round to nearest): the tensor cores' own fp32 accumulation truncates, and summed over a
 * whole long K in them the outputs had errors of 1e-5 of their largest (K 1536; 128 x 128 tiles
 * that accumulated all of K in the tensor cores), against 1e-6 and less for cuBLAS's SGEMM. A
 * second barrier after the MMAs keeps the next k-tile's split off the tail tiles until both
 * warpgroups have read them. Shared memory 73 KiB, 114 registers: two CTAs an SM. Epilogue:
 * each thread writes its column pairs (bias, GELU, residual in fp32) straight to global memory,
 * 8-byte stores. inf: a head that is not finite keeps a zero tail (inf - inf would be NaN).
 *
 * Selection (kernels/gemm.c): a SWIN_FP32 handle on a compute capability 9.0 GPU times this
 * kernel against cuBLASLt's fp32 GEMM (CUBLAS_COMPUTE_32F) on each shape's first call and runs
 * the faster where swin_gemm_x3_supports says yes; SWIN_FP32_GEMM=sgemm in the environment (read
 * once) keeps cuBLASLt everywhere, for comparison in one run.
 * Measured on the H200 (2026-11-27, same binary and run, build/swin bench --precision fp32 -n 10,
 * two runs each, median ms, default (tuned) / SWIN_FP32_GEMM=sgemm):
 *
 *   Swin-T     batch 1     1.03  1.01   /  1.00  1.03     (the tuning keeps cuBLASLt there)
 *              batch 8     2.76  2.77   /  2.99  3.00
 *              batch 64   15.90 15.92   / 18.46 18.46
 *              batch 256  59.27 59.32   / 67.93 67.90     (4,316 against 3,769 img/s)
 *   SwinV2-T   batch 256  77.68         / 86.48           (-n 5)
 *   Swin-B 384 batch 64  143.43         / 169.61          (-n 3)
 *
 * Swin-T at batch 256, --breakdown (un-captured forward, -n 5): the linear layers 43.2 ms of
 * 59.6 (qkv 10.8, proj 3.8, fc1 + GELU 12.8, fc2 + residual 13.9) against SGEMM's 52.0 of 68.4;
 * the fp32 attention (SIMT) 10.8 ms either way, now the next largest part (since then on the TF32
 * tensor cores as 3xTF32 too, 4.1 ms: kernels/attention.cu, launch_tf32). An earlier version
 * of this kernel (128 x 128 tiles, two warpgroups of m64n128, all of K summed in the tensor
 * cores) took the linear layers to 31.9 ms of 48.5 (47.2 ms captured, 5,427 img/s), but its
 * errors reached 9.9e-6 of max|ref| at K 1536: the 64 x 128 tiles that leave registers for the
 * running total cost that speed (59.3 against 47.2 ms). Tried next (the same day, same run): 128 x
 * 128 tiles with the running total (m64n128, 170 registers, one CTA of 8 warps an SM, three
 * stages and two pairs of tail tiles, each k-tile's split done while the previous k-tile's MMAs
 * run): Swin-T fp32 batch 8 / 64 / 256 2.85 / 16.31 / 59.02 ms against this kernel's 2.73 /
 * 15.91 / 59.28 (SGEMM 2.94 / 18.45 / 67.84), the same errors; not kept. So neither the tile
 * shape nor the split's place is the bound now. Not measured yet, the next suspects: both
 * operands of every wgmma come from shared memory (TF32 operands are twice fp16's bytes for half
 * its MMA rate, and each tile is read three times), which A in registers (wgmma's RS form, the
 * split done in registers) would halve; the weights could be split once at load.
 * Test: tests/test_gpu_gemm.c (fp32 through swin_linear_cuda, the tolerance 1e-5 of max |ref|,
 * the fp32 probe, and this kernel directly on partial tiles against a double reference).
 */
#include <limits.h>
#include <stdint.h>

#include "common.cuh"
#include "gemm.h"
#include "sm90/gemm_sm90.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "gemm_x3.cu is built for sm_90a only (CMakeLists.txt)"
#endif

namespace {

using namespace sm90;

/* a CTA's tile: 64 rows of in x 128 rows of w (each warpgroup 64 of the 128 output columns) */
constexpr int BM = 64, BN = 128, ROW = 128, BK = ROW / 4, STAGES = 2, THREADS = 256;
constexpr int TILE_A = BM * ROW, TILE_B = BN * ROW, STAGE_BYTES = TILE_A + TILE_B;
constexpr size_t SMEM = (size_t)STAGES * STAGE_BYTES + STAGE_BYTES + 1024;   /* + the tails, + alignment */
static_assert(STAGE_BYTES % 1024 == 0 && TILE_A % 1024 == 0, "tiles on the swizzle's 1024-byte atoms");

/* a 16-byte chunk at shared address a: heads back in place, tails at a + to_tail */
__device__ __forceinline__ void split_chunk(uint32_t a, uint32_t to_tail) {
    float v[4], h[4], l[4];
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "r"(a));
#pragma unroll
    for (int i = 0; i < 4; i++) {
        h[i] = swin_tf32_rna(v[i]);
        l[i] = isfinite(h[i]) ? swin_tf32_rna(v[i] - h[i]) : 0.0f;
    }
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "f"(h[0]), "f"(h[1]), "f"(h[2]), "f"(h[3])
                 : "memory");
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(a + to_tail), "f"(l[0]), "f"(l[1]), "f"(l[2]),
                 "f"(l[3])
                 : "memory");
}

/* d [64 x 64] += A (64 rows x 8 fp32 of K, descriptor da) @ B (64 rows x 8, db)^T in TF32 */
__device__ __forceinline__ void wgmma_64x64_tf32(float d[32], uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " WG_REGS32 ", %32, %33, 1, 1, 1;\n"
                 : WG_D32
                 : "l"(da), "l"(db));
}

template <bool GELU>
__global__ void __launch_bounds__(THREADS, 2)
gemm_x3_kernel(float *out, const float *__restrict__ in, const float *__restrict__ w, const float *__restrict__ bias,
               const float *res, int M, int K, int N) {
    swin_pdl_begin();
    extern __shared__ unsigned char smem_raw[];
    const uint32_t s0 = (smem_addr(smem_raw) + 1023u) & ~1023u;   /* the swizzle's atoms: 1024-byte aligned */
    const uint32_t tails = s0 + STAGES * STAGE_BYTES;             /* A's tail tile, then B's */
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, wq = (tid >> 5) & 3;
    const int n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
    const int KT = (K + BK - 1) / BK;

    float d[32], t[32];   /* this k-tile's sums (the tensor cores'), and the running total */
#pragma unroll
    for (int i = 0; i < 32; i++) d[i] = t[i] = 0.0f;

    TileLoader<BM, float> la;
    TileLoader<BN, float> lb;
    la.init(in, m0, M, K, tid), lb.init(w, n0, N, K, tid);
    la.load(s0, 0, K), lb.load(s0 + TILE_A, 0, K);
    cp_async_commit();
    for (int kt = 0; kt < KT; kt++) {
        const uint32_t sa = s0 + (kt % STAGES) * STAGE_BYTES;
        cp_async_wait<0>();   /* this thread's copies of k-tile kt have landed */
#pragma unroll
        for (int j = 0; j < BM / 32; j++) split_chunk(sa + la.soff + j * 32 * ROW, tails - sa);   /* its chunks */
#pragma unroll
        for (int j = 0; j < BN / 32; j++) split_chunk(sa + TILE_A + lb.soff + j * 32 * ROW, tails - sa);
        fence_proxy_async();
        __syncthreads();   /* every split of k-tile kt is in place */
        if (kt + 1 < KT) {   /* the other stage was read by k-tile kt - 1's MMAs, done (barrier below) */
            const uint32_t sn = s0 + ((kt + 1) % STAGES) * STAGE_BYTES;
            la.load(sn, (kt + 1) * BK, K), lb.load(sn + TILE_A, (kt + 1) * BK, K);
        }
        cp_async_commit();
        const uint64_t ah = sw128_desc(sa), bh = sw128_desc(sa + TILE_A + wg * 64 * ROW);
        const uint64_t al = sw128_desc(tails), bl = sw128_desc(tails + TILE_A + wg * 64 * ROW);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < ROW / 32; ks++) {   /* 8 fp32 values of K a step: descriptors + 32 bytes */
            wgmma_64x64_tf32(d, al + 2 * ks, bh + 2 * ks);
            wgmma_64x64_tf32(d, ah + 2 * ks, bl + 2 * ks);
            wgmma_64x64_tf32(d, ah + 2 * ks, bh + 2 * ks);
        }
        wgmma_commit();
        wgmma_wait_all();
        /* the k-tile's sum into the total, rounded to nearest: the tensor cores' own accumulation
         * truncates, and over a long K its error grew to 1e-5 of the outputs (test_gpu_gemm) */
#pragma unroll
        for (int i = 0; i < 32; i++) t[i] += d[i], d[i] = 0.0f;
        __syncthreads();   /* both warpgroups are done with the tails and with stage kt */
    }

    /* epilogue: rows r0 (+ 8), columns c0 + 8 j + {0, 1} */
    const int r0 = m0 + wq * 16 + (lane >> 2), c0 = n0 + wg * 64 + 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const int col = c0 + 8 * j;
        if (col >= N) continue;   /* N even: col + 1 < N too */
        const float2 b = bias ? *reinterpret_cast<const float2 *>(bias + col) : make_float2(0.0f, 0.0f);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = r0 + 8 * h;
            if (row >= M) continue;
            float v0 = t[4 * j + 2 * h] + b.x, v1 = t[4 * j + 2 * h + 1] + b.y;
            if (GELU) v0 = swin_gelu_erf(v0), v1 = swin_gelu_erf(v1);
            float2 *o = reinterpret_cast<float2 *>(out + (size_t)row * N + col);
            if (res) {
                const float2 q = *reinterpret_cast<const float2 *>(res + (size_t)row * N + col);
                v0 += q.x, v1 += q.y;
            }
            *o = make_float2(v0, v1);
        }
    }
}

} // namespace

extern "C" int swin_gemm_x3_supports(int M, int K, int N, const void *out, const void *in, const void *w,
                                     const void *bias, const void *residual, swin_act act) {
    return M > 0 && K > 0 && N > 0 && K % 4 == 0 && N % 2 == 0 && (long long)M * K < INT_MAX &&
           (long long)N * K < INT_MAX && (act == SWIN_ACT_NONE || (act == SWIN_ACT_GELU && !residual)) && out && in &&
           w && !(((uintptr_t)in | (uintptr_t)w) & 15u) && !(((uintptr_t)out | (uintptr_t)bias | (uintptr_t)residual) & 7u) &&
           out != in && out != w && residual != in && residual != w && swin_gemm_wgmma_available();
}

extern "C" swin_status swin_gemm_x3_cuda(float *out, const float *in, const float *w, const float *bias,
                                         const float *residual, int M, int K, int N, swin_act act, cudaStream_t st) {
    static const char op[] = "swin_gemm_x3_cuda";
    if (!swin_gemm_x3_supports(M, K, N, out, in, w, bias, residual, act))
        return swin_fail(SWIN_ERR_UNSUPPORTED,
                         "%s: needs a GPU of compute capability 9.0, M, K, N > 0 with K a multiple of 4 and N even, M x "
                         "K and N x K below 2^31, in and w 16-byte aligned, out, bias and the residual 8-byte aligned, "
                         "out and the residual apart from the inputs, no residual with GELU (M %d, K %d, N %d, act %d)",
                         op, M, K, N, (int)act);
    auto kernel = act == SWIN_ACT_GELU ? gemm_x3_kernel<true> : gemm_x3_kernel<false>;
    SWIN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));
    dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));   /* along N fastest: A shared in L2 */
    swin_launch(kernel, grid, THREADS, SMEM, st, out, in, w, bias, residual, M, K, N);
    SWIN_LAUNCH_CHECK("gemm_x3_kernel", st);
    return SWIN_OK;
}
