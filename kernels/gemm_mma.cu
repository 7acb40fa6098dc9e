/* gemm_mma.cu - our own tensor-core GEMM, for the linear layers whose epilogue cuBLASLt cannot
 * fuse: the MLP's fc1 with the exact (erf) GELU of nn.GELU (cuBLASLt's GELU epilogue is the tanh
 * approximation, kernels/gemm.c). fp16 / bf16 operands, fp32 accumulation:
 *
 *   out [M, N] = act(in [M, K] @ w [N, K]^T + bias [N])     (act: none or GELU, in fp32)
 *
 * It removes the separate GELU pass (kernels/act.cu) and the hidden's extra round trip through
 * memory that it costs: the accumulator gets the bias and the GELU in registers and is rounded to
 * 16 bits once (the unfused path rounds the pre-activation to 16 bits, then the GELU's output).
 *
 * Kernel: mma.sync m16n8k16 (fp32 accumulate), operands through a STAGES-deep cp.async pipeline
 * in shared memory, fragments with ldmatrix. Both operands are K-contiguous (PyTorch's [N, K]
 * weights are what mma's "col" B wants), so no transposes. A CTA computes a BM x BN tile, each
 * of its warps WM x WN, over k-tiles of BK: 64 (3 stages) when K is a multiple of 64, else 32
 * (4 stages; Swin-T's first stage has K = 96). A k-tile row is BK / 8 chunks of 16 bytes,
 * stored with the chunk index XORed by a function of the row ((row / 2) % 4 for 4 chunks,
 * row % 8 for 8) so that the eight rows an ldmatrix reads hit eight different 16-byte bank
 * groups. Rows past M and k chunks past K are zero-filled by cp.async, so any M and any
 * K % 8 == 0 run; N % 8 == 0 (whole 8-column mma tiles, stored as 16-bit pairs).
 * Two tile shapes: 128 x 128 with eight 64 x 32 warps for large problems, 64 x 64 with four
 * 32 x 32 warps when the large tiles would not fill the GPU (batch 1: M is 49 to 3136 rows).
 * The grid runs along N fastest, so CTAs that run together share their A rows in L2.
 * Status: correct as tested (below; every verify fixture with `--mlp fused` before the 64-wide
 * k-tiles, test_gpu_gemm and racecheck after) but slower than cuBLASLt + the GELU pass at
 * large batches, so `--mlp auto` uses it only beside the wgmma kernel (kernels/sm90/
 * gemm_wgmma.cu), which takes the large tiles on Hopper; `--mlp fused` forces it elsewhere. Measured on an H100, Swin-T fp16: end to end 1.02x at batch 1 and
 * 0.94x at batch 256 (13.3 against 12.5 ms). Per stage at batch 256, this kernel's fc1 + GELU
 * against cuBLASLt's fc1 plus the GELU pass: K 96 1.53 against 1.45 ms, K 192 0.88 / 0.73,
 * K 384 1.82 / 1.31, K 768 0.48 / 0.30: near parity where the layer is bound by memory, further
 * behind the larger K is, so the mainloop (mma.sync, 2 CTAs of 8 warps per SM) is what loses to
 * cuBLASLt's Hopper kernels, not the GELU epilogue (k-tiles of 64 instead of 32 took K 384 from
 * 2.34 to 1.82 ms). On an H200 (SWIN_GEMM_WGMMA=0) 0.91x at batch 256; the wgmma kernel 1.04x.
 * Test: tests/test_gpu_gemm.c (against the CPU linear layer, both tile shapes, edge tiles).
 */
#include "gemm.h"
#include "mma.cuh"
#include "row.cuh"

namespace {

template <int BM_, int BN_, int WM_, int WN_, int BK_, int STAGES_, int MIN_CTAS_>
struct Shape {
    static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, BK = BK_, STAGES = STAGES_;
    static constexpr int CH = BK / 8;                    // 16-byte chunks per k-tile row
    static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
    static constexpr int THREADS = WARPS_M * WARPS_N * 32;
    static constexpr int MT = WM / 16, NT = WN / 8;      // mma tiles per warp
    static constexpr int MIN_CTAS = MIN_CTAS_;
    static constexpr int STAGE_ELEMS = (BM + BN) * BK;   // 16-bit elements per stage
    static constexpr size_t SMEM = (size_t)STAGES * STAGE_ELEMS * 2;
    static_assert(NT % 2 == 0, "B fragments come in pairs of n8 tiles (ldmatrix x4)");
    static_assert(CH == 4 || CH == 8, "k-tiles of 32 or 64");
};
typedef Shape<128, 128, 64, 32, 32, 4, 2> Large32;   // 64 KiB of shared memory
typedef Shape<128, 128, 64, 32, 64, 3, 2> Large64;   // 96 KiB
typedef Shape<64, 64, 32, 32, 32, 4, 4> Small32;     // 32 KiB
typedef Shape<64, 64, 32, 32, 64, 3, 4> Small64;     // 48 KiB

/* element offset of 16-byte chunk ch of tile row r, CH chunks a row (swizzled, see above) */
template <int CH>
__device__ __forceinline__ int swz(int r, int ch) {
    return (r * CH + (ch ^ (CH == 4 ? (r >> 1) & 3 : r & 7))) * 8;
}

/* rows [0, R) of a k-tile of a K-contiguous matrix (rows r0.., columns k0..) into shared memory */
template <int R, int CH, int THREADS, typename T>
__device__ __forceinline__ void load_tile(T *s, const T *g, int r0, int rows, int k0, int K, int tid) {
#pragma unroll
    for (int j = 0; j < (R * CH + THREADS - 1) / THREADS; j++) {
        const int i = tid + j * THREADS;
        if (R * CH % THREADS != 0 && i >= R * CH) break;
        const int r = i / CH, ch = i % CH, gr = r0 + r, gk = k0 + ch * 8;
        const bool ok = gr < rows && gk < K;
        cp_async16(s + swz<CH>(r, ch), ok ? g + (size_t)gr * K + gk : g, ok);
    }
}

template <class S, typename T, bool GELU>
__global__ void __launch_bounds__(S::THREADS, S::MIN_CTAS)
gemm_mma_kernel(T *__restrict__ out, const T *__restrict__ in, const T *__restrict__ w, const T *__restrict__ bias,
                int M, int K, int N) {
    swin_pdl_begin();
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T *smem = reinterpret_cast<T *>(smem_raw);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int n0 = blockIdx.x * S::BN, m0 = blockIdx.y * S::BM;
    const int wm0 = (warp / S::WARPS_N) * S::WM, wn0 = (warp % S::WARPS_N) * S::WN;
    constexpr int BK = S::BK, CH = S::CH, STAGES = S::STAGES;
    const int KT = (K + BK - 1) / BK;

    float acc[S::MT][S::NT][4];
#pragma unroll
    for (int i = 0; i < S::MT; i++)
#pragma unroll
        for (int j = 0; j < S::NT; j++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[i][j][c] = 0.0f;

    auto load_stage = [&](int slot, int kt) {
        T *sa = smem + slot * S::STAGE_ELEMS, *sb = sa + S::BM * BK;
        load_tile<S::BM, CH, S::THREADS>(sa, in, m0, M, kt * BK, K, tid);
        load_tile<S::BN, CH, S::THREADS>(sb, w, n0, N, kt * BK, K, tid);
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < KT) load_stage(s, s);
        cp_async_commit();   /* empty groups keep the count that cp_async_wait relies on */
    }
    for (int kt = 0; kt < KT; kt++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();   /* stage kt landed for every thread; slot (kt - 1) % STAGES is free */
        const int nk = kt + STAGES - 1;
        if (nk < KT) load_stage(nk % STAGES, nk);
        cp_async_commit();
        const T *sa = smem + (kt % STAGES) * S::STAGE_ELEMS, *sb = sa + S::BM * BK;
#pragma unroll
        for (int ks = 0; ks < BK / 16; ks++) {
            uint32_t a[S::MT][4], b[S::NT][2];
#pragma unroll
            for (int i = 0; i < S::MT; i++)
                ldsm_x4(a[i], sa + swz<CH>(wm0 + i * 16 + (lane & 15), ks * 2 + (lane >> 4)));
#pragma unroll
            for (int j = 0; j < S::NT; j += 2) {
                uint32_t r[4];
                ldsm_x4(r, sb + swz<CH>(wn0 + j * 8 + (lane & 7) + ((lane >> 4) << 3), ks * 2 + ((lane >> 3) & 1)));
                b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < S::MT; i++)
#pragma unroll
                for (int j = 0; j < S::NT; j++) mma16816<T>(acc[i][j], a[i], b[j][0], b[j][1]);
        }
    }
    cp_async_wait_all();

    /* epilogue: c0, c1 at (row lane / 4, columns 2 (lane % 4) + 0, 1), c2, c3 eight rows below */
#pragma unroll
    for (int j = 0; j < S::NT; j++) {
        const int col = n0 + wn0 + j * 8 + 2 * (lane & 3);
        if (col >= N) continue;
        const float b0 = bias ? load_f(bias, col) : 0.0f, b1 = bias ? load_f(bias, col + 1) : 0.0f;
#pragma unroll
        for (int i = 0; i < S::MT; i++) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = m0 + wm0 + i * 16 + (lane >> 2) + h * 8;
                if (row >= M) continue;
                float v0 = acc[i][j][2 * h] + b0, v1 = acc[i][j][2 * h + 1] + b1;
                if (GELU) v0 = swin_gelu_erf(v0), v1 = swin_gelu_erf(v1);
                *reinterpret_cast<uint32_t *>(out + (size_t)row * N + col) = pack2<T>(v0, v1);
            }
        }
    }
}

template <class S, typename T, bool GELU>
swin_status launch_shape(T *out, const T *in, const T *w, const T *bias, int M, int K, int N, cudaStream_t st) {
    /* above 48 KiB of dynamic shared memory needs the opt-in (per launch, as attention.cu does:
     * the attribute is per device) */
    if (S::SMEM > 48 * 1024)
        SWIN_CUDA_TRY(cudaFuncSetAttribute(gemm_mma_kernel<S, T, GELU>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)S::SMEM));
    dim3 grid((unsigned)((N + S::BN - 1) / S::BN), (unsigned)((M + S::BM - 1) / S::BM));
    swin_launch(gemm_mma_kernel<S, T, GELU>, grid, S::THREADS, S::SMEM, st, out, in, w, bias, M, K, N);
    SWIN_LAUNCH_CHECK("gemm_mma_kernel", st);
    return SWIN_OK;
}

template <typename T, bool GELU>
swin_status launch(T *out, const T *in, const T *w, const T *bias, int M, int K, int N, cudaStream_t st) {
    const long long large = (long long)((M + 127) / 128) * ((N + 127) / 128);
    const bool k64 = K % 64 == 0;
    int sms = 0;
    SWIN_TRY(swin_device_sms(&sms));
    if (large >= sms)
        return k64 ? launch_shape<Large64, T, GELU>(out, in, w, bias, M, K, N, st)
                   : launch_shape<Large32, T, GELU>(out, in, w, bias, M, K, N, st);
    return k64 ? launch_shape<Small64, T, GELU>(out, in, w, bias, M, K, N, st)
               : launch_shape<Small32, T, GELU>(out, in, w, bias, M, K, N, st);
}

template <typename T>
swin_status launch_act(void *out, const void *in, const void *w, const void *bias, int M, int K, int N, swin_act act,
                       cudaStream_t st) {
    return act == SWIN_ACT_GELU ? launch<T, true>((T *)out, (const T *)in, (const T *)w, (const T *)bias, M, K, N, st)
                                : launch<T, false>((T *)out, (const T *)in, (const T *)w, (const T *)bias, M, K, N, st);
}

} // namespace

extern "C" int swin_gemm_mma_supports(swin_dtype dt, int M, int K, int N, const void *out, const void *in,
                                      const void *w, const void *bias) {
    return (dt == SWIN_DT_F16 || dt == SWIN_DT_BF16) && M > 0 && K > 0 && N > 0 && K % 8 == 0 && N % 8 == 0 &&
           swin_aligned16(out) && swin_aligned16(in) && swin_aligned16(w) && (!bias || ((uintptr_t)bias & 3u) == 0);
}

extern "C" swin_status swin_gemm_mma_check(const char *op, const char *needs, int supported, const void *out,
                                           const void *in, const void *w, swin_act act, swin_dtype dt, int M, int K,
                                           int N) {
    if (!out || !in || !w) return swin_fail(SWIN_ERR_ARGUMENT, "%s: out, in and w must not be NULL", op);
    if (act != SWIN_ACT_NONE && act != SWIN_ACT_GELU)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: unknown activation %d", op, (int)act);
    if (!supported)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs %s (got dtype %d, M %d, K %d, N %d)", op, needs, (int)dt, M, K,
                         N);
    if (out == in || out == w) return swin_fail(SWIN_ERR_ARGUMENT, "%s: out aliases an input", op);
    return SWIN_OK;
}

extern "C" swin_status swin_gemm_mma_cuda(void *out, const void *in, const void *w, const void *bias, int M, int K,
                                          int N, swin_act act, swin_dtype dt, cudaStream_t st) {
    SWIN_TRY(swin_gemm_mma_check("swin_gemm_mma_cuda",
                                 "fp16 or bf16, M, K, N > 0 with K and N multiples of 8, and 16-byte aligned out, in "
                                 "and w", swin_gemm_mma_supports(dt, M, K, N, out, in, w, bias), out, in, w, act, dt,
                                 M, K, N));
    return dt == SWIN_DT_F16 ? launch_act<__half>(out, in, w, bias, M, K, N, act, st)
                             : launch_act<__nv_bfloat16>(out, in, w, bias, M, K, N, act, st);
}
