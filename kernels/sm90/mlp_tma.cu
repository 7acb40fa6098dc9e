/* mlp_tma.cu - mlp_wgmma.cu's one-kernel MLP (the 4C hidden kept on chip) as a persistent,
 * warp-specialised kernel fed by the Tensor Memory Accelerator, with each warpgroup's GELU
 * overlapping its own MMAs:
 *
 *   out [M, C] = gelu(in [M, C] @ w1 [H, C]^T + b1 [H]) @ w2 [C, H]^T + b2 [C] (+ res [M, C])
 *
 * fp16 / bf16, fp32 accumulation, the hidden rounded to the data type after the erf GELU
 * (swin_gelu_erf16, as the two-GEMM fc1 stores it), bias and residual added in fp32 and rounded
 * once. The same contract as mlp_wgmma.cu (swin_mlp_wgmma_cuda, which calls this kernel unless
 * SWIN_MLP_TMA=0).
 *
 * Why: mlp_wgmma.cu runs, per hidden chunk, copy wait, fc1, GELU and fc2 one after the other
 * behind a CTA barrier; its GELU (14 instructions an element, 4C a token) did not overlap the
 * tensor cores, and its threads spent instructions on the copies' addresses.
 *
 * Kernel: one CTA an SM, persistent over tiles of BM = 128 tokens (blockIdx.x, + gridDim.x, ...),
 * for H = 4 C (the chunk loop is unrolled: a rolled one made ptxas serialise the MMAs, C7514):
 *   the producer (the last warp, one thread): per tile, the token tile (KP panels of 128 rows x
 *     128 bytes; K past C reads as zeros) into its buffer once the previous tile's last fc1 has
 *     read it (x_empty), then the weight chunks in the order the consumers use them: w1[0],
 *     w1[1], w2[0], w1[2], w2[1], ..., w2[NH - 1] (w1[h]: rows h HC .. of w1, KP panels; w2[h]:
 *     columns h HC .. of w2, one panel of C rows), each into the next slot of its ring (S1 and
 *     S2 slots, "full" and "empty" mbarriers).
 *   two consumer warpgroups, rows 0..63 and 64..127 of the tile, the same weight chunks. For
 *     hidden chunk h (HC = 64 features), with acc1 double-buffered (a0, a1) and acc2 [64 x C] in
 *     registers for the whole walk:
 *       issue fc1(h + 1) into the other acc1            (wgmma, async; none for the last chunk)
 *       wait until fc1(h) is done (fc2(h - 1) and fc1(h + 1) may still run: wait_group 2, 1 for
 *         the first and the last chunk)
 *       release w1[h], w2[h - 2] (and the token tile after the last fc1)
 *       + b1, GELU, rounded -> hidden buffer h % 2 (fc2(h - 2), its last reader, is done)
 *       warpgroup barrier; issue fc2(h): acc2 += hidden (64 x HC) @ w2[h]^T (async)
 *     so the GELU of chunk h runs while the tensor cores do fc2(h - 1) and fc1(h + 1).
 *     b1's pairs for the next chunk are loaded during each step; the residual's rows are
 *     prefetched into L2 at the tile's start. Then acc2 + b2 (+ res) is stored straight from the
 *     registers (as mlp_wgmma.cu does), while the producer already loads the next tile.
 * Registers: a producer warpgroup (one working thread) so that setmaxnreg can move its registers
 * to the consumers (24 and 240 a thread; ptxas allocates 168 for 384 threads at launch).
 * Shared memory (the 128-byte swizzled K-major layout of wgmma.cuh): token tile KP x 16 KiB, S1
 * w1 slots of KP x 8 KiB, S2 w2 slots of C x 128 bytes, 2 x 2 hidden buffers of 8 KiB: C 96 149
 * KiB, 128 161 KiB, 192 225 KiB. Accumulators: acc2 C / 2 + 2 x 32 a thread (C 192: 160).
 * Ordering: TMA writes and wgmma reads are async-proxy operations ordered by the mbarriers; the
 * hidden is written by the generic proxy, so each thread fences (fence.proxy.async) before the
 * warpgroup barrier after which fc2 reads it. An empty ring slot is announced by one thread of
 * each consumer warp (4 x 2 arrivals) after its wgmma groups reading the slot are done.
 * Measured (H200, Swin-T fp16 batch 256, `swin bench --breakdown`, ms for both blocks of a stage;
 * SWIN_MLP_ONE_KERNEL=1 against fc1 + GELU (gemm_tma.cu) then fc2 + residual (cuBLASLt)): stage 1
 * (C 96) 1.394 against 0.765 + 0.459, stage 2 (C 192) 1.101 against 0.453 + 0.253;
 * mlp_wgmma.cu's kernel in the same session 1.424 and 1.268. End to end 25,490 / 25,183 img/s
 * (two GEMMs / this kernel), SwinV2-T 19,382 / 19,539, Swin-B 384 (C 128 in stage 1) 3,367 /
 * 3,345. So it is correct but not faster yet, and the engine keeps it opt-in. ncu (stage 1, the
 * first version): 40% of the issue slots used, 2.25 warps a scheduler of which 0.56 eligible;
 * long-scoreboard stalls 40% of the cycles. Loading b1 a step ahead and prefetching the residual
 * into L2 gave 1.440 -> 1.394 and 1.160 -> 1.101 ms, but ncu then still showed 2.14 of 5.5 cycles
 * an issue in long-scoreboard stalls (the two-GEMM fc1 on the same layer: 0.65 of 6.2, 68% of the
 * issue slots, 4.2 warps a scheduler): the SASS showed the epilogue's residual loads each waiting
 * behind the previous pair's store (res may be out, so the compiler kept their order), 24 round
 * trips a thread a tile at C 96. store_rows (wgmma.cuh) now issues every load first (and the
 * prefetch covers every line of the rows): stage 1 1.165 against 0.759 + 0.460 (two GEMMs, same
 * run), stage 2 1.028 against 0.451 + 0.253; end to end Swin-T 25,525 / 25,272 img/s, SwinV2-T
 * 19,317 / 19,343, Swin-B 384 3,341 / 3,365 (two GEMMs / this kernel, H200, the same day). What is
 * left is the GELU (14 instructions an element, 4C a token) on 8 warps an SM: the two-GEMM fc1
 * runs it on 16. Three consumer warpgroups (192-token tiles) spilled hundreds of bytes at 160
 * registers a thread; C 192 spills about 100 bytes with two.
 * Test: tests/test_gpu_mlp.c (this kernel by default; test_gpu_mlp_cpasync runs mlp_wgmma.cu's);
 * tools/gpu_check.sh runs the full-size models with SWIN_MLP_ONE_KERNEL=2.
 */
#include <stdint.h>

#include <type_traits>

#include "common.cuh"
#include "sm90/mlp_tma.h"
#include "sm90/tma_map.h"
#include "sm90/wgmma.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "mlp_tma.cu is built for sm_90a only (CMakeLists.txt)"
#endif

namespace {

/* W consumer warpgroups of 64 token rows (three, 192-token tiles at 160 registers a thread,
 * spilled hundreds of bytes at C 96 and 128, and C 192 has no shared memory for them); registers a
 * thread after setmaxnreg: the producer warpgroup's 24, the consumers' 240 */
constexpr int HC = 64, S1 = 3, S2 = 3, W = 2, BM = 64 * W, THREADS = (W + 1) * 128;
constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;
static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * W <= 64512, "the register file (one CTA an SM)");

/* the kernel of width C */
template <int C> struct Shape {
    static constexpr int NH = 4 * C / HC;         /* hidden chunks: H = 4 C */
    static_assert(NH % 2 == 0, "chunks in pairs (the acc1 buffers alternate)");
    static constexpr int KP = (C + 63) / 64;      /* 128-byte panels of a C-wide row */
    static constexpr int X = KP * BM * 128;       /* the token tile */
    static constexpr int W1 = KP * HC * 128;      /* w1[h]: HC rows of C */
    static constexpr int W2 = C * 128;            /* w2[h]: C rows of HC (one panel) */
    static constexpr int HID = 64 * 128;          /* a warpgroup's hidden buffer: 64 rows of HC */
    static constexpr int BARS = 2 + 2 * S1 + 2 * S2;
    static constexpr size_t SMEM = (size_t)X + S1 * W1 + S2 * W2 + W * 2 * HID + BARS * 8 + 1024;
    static_assert(SMEM <= 227 * 1024, "shared memory of one CTA");
    static_assert(W2 % 1024 == 0, "slots keep the swizzle's 1024-byte atoms aligned");
};

template <typename T, int C>
__global__ void __launch_bounds__(THREADS, 1)
mlp_tma_kernel(const __grid_constant__ CUtensorMap map_in, const __grid_constant__ CUtensorMap map_w1,
               const __grid_constant__ CUtensorMap map_w2, T *out, const T *__restrict__ b1, const T *__restrict__ b2,
               const T *res, int M) {
    typedef Shape<C> S;
    constexpr int NH = S::NH;
    extern __shared__ unsigned char smem_raw[];
    const uint32_t s0 = (smem_addr(smem_raw) + 1023u) & ~1023u;   /* the swizzle's atoms: 1024-byte aligned */
    const uint32_t sx = s0, sw1 = sx + S::X, sw2 = sw1 + S1 * S::W1, shid = sw2 + S2 * S::W2;
    const uint32_t x_full = shid + W * 2 * S::HID, x_empty = x_full + 8;
    const uint32_t w1_full = x_empty + 8, w1_empty = w1_full + 8 * S1, w2_full = w1_empty + 8 * S1,
                   w2_empty = w2_full + 8 * S2;
    const int tid = threadIdx.x, wg = tid >> 7, tiles = (M + BM - 1) / BM;
    if (tid == 0) {
        mbar_init(x_full, 1), mbar_init(x_empty, 4 * W);
        for (int s = 0; s < S1; s++) mbar_init(w1_full + 8 * s, 1), mbar_init(w1_empty + 8 * s, 4 * W);
        for (int s = 0; s < S2; s++) mbar_init(w2_full + 8 * s, 1), mbar_init(w2_empty + 8 * s, 4 * W);
        mbar_fence_init();
    }
    __syncthreads();
    swin_pdl_begin();

    if (wg == W) {   // ---- the producer
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid != W * 128) return;
        tma_prefetch_map(&map_in), tma_prefetch_map(&map_w1), tma_prefetch_map(&map_w2);
        unsigned e1 = 0, e2 = 0;   /* ring entries so far */
        auto load_w1 = [&](int h) {
            const uint32_t s = e1 % S1, dst = sw1 + s * S::W1;
            mbar_wait(w1_empty + 8 * s, ((e1 / S1) & 1) ^ 1);
            mbar_expect_tx(w1_full + 8 * s, S::W1);
#pragma unroll
            for (int p = 0; p < S::KP; p++) tma_load_2d(dst + p * HC * 128, &map_w1, p * 64, h * HC, w1_full + 8 * s);
            e1++;
        };
        auto load_w2 = [&](int h) {
            const uint32_t s = e2 % S2;
            mbar_wait(w2_empty + 8 * s, ((e2 / S2) & 1) ^ 1);
            mbar_expect_tx(w2_full + 8 * s, S::W2);
            tma_load_2d(sw2 + s * S::W2, &map_w2, h * HC, 0, w2_full + 8 * s);
            e2++;
        };
        unsigned ex = 0;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x, ex++) {
            mbar_wait(x_empty, (ex & 1) ^ 1);
            mbar_expect_tx(x_full, S::X);
#pragma unroll
            for (int p = 0; p < S::KP; p++) tma_load_2d(sx + p * BM * 128, &map_in, p * 64, t * BM, x_full);
            load_w1(0);
            for (int h = 0; h < NH; h++) {
                if (h + 1 < NH) load_w1(h + 1);
                load_w2(h);
            }
        }
        return;
    }

    // ---- a consumer warpgroup: rows 64 wg .. 64 wg + 63 of each tile
    setmaxnreg_inc<CONSUMER_REGS>();
    const int lane = tid & 31, wq = (tid >> 5) & 3;
    const uint32_t xa = sx + wg * 64 * 128, hid0 = shid + wg * 2 * S::HID;
    unsigned e1 = 0, e2 = 0, ex = 0;   /* ring entries of the tiles before this one */

    /* fc1 of the chunk in w1 entry e: a [64 x HC] = token rows @ w1 chunk^T, one commit group */
    auto fc1 = [&](float *a, unsigned e) {
        const uint32_t s = e % S1, w = sw1 + s * S::W1;
        mbar_wait(w1_full + 8 * s, (e / S1) & 1);
        wgmma_fence();
#pragma unroll
        for (int p = 0; p < S::KP; p++)
#pragma unroll
            for (int ks = 0; ks < 4; ks++)
                if (p * 64 + ks * 16 < C)
                    wgmma_ss<T, HC>(a, sw128_desc(xa + p * BM * 128) + 2 * ks, sw128_desc(w + p * HC * 128) + 2 * ks,
                                    p | ks);
        wgmma_commit();
    };
    float a0[HC / 2], a1[HC / 2], acc2[C / 2];
    /* b1's pairs of the chunk the next GELU takes, loaded a step ahead (loads right before their
     * use stalled the warps: ncu, long scoreboard 40% of the stalls) */
    uint32_t bq[HC / 8];
    auto load_b1 = [&](int h) {
#pragma unroll
        for (int j = 0; j < HC / 8; j++)
            bq[j] = b1 ? ldg_pair(b1 + h * HC + 8 * j + 2 * (lane & 3)) : 0u;
    };
    /* hidden chunk h: cur holds fc1(h) (in flight), nxt receives fc1(h + 1). The wait counts the
     * groups after fc1(h): fc2(h - 1) unless FIRST, fc1(h + 1) unless LAST (no empty groups: ptxas
     * would not count them, and serialise the MMAs) */
    auto step = [&](float *cur, float *nxt, int h, auto first, auto last) {
        if constexpr (!decltype(last)::value) fc1(nxt, e1 + h + 1);
        wgmma_wait<(decltype(first)::value ? 0 : 1) + (decltype(last)::value ? 0 : 1)>();
        if (lane == 0) {
            mbar_arrive(w1_empty + 8 * ((e1 + h) % S1));
            if (h >= 2) mbar_arrive(w2_empty + 8 * ((e2 + h - 2) % S2));
            if constexpr (decltype(last)::value) mbar_arrive(x_empty);   /* the tile's last fc1 is done */
        }
        /* + b1, GELU, rounded: row 16 wq + lane / 4 (+ 8), columns 8 j + 2 (lane % 4) + {0, 1} */
        const uint32_t hb = hid0 + (h & 1) * S::HID;
#pragma unroll
        for (int j = 0; j < HC / 8; j++) {
            const float2 b = unpack2<T>(bq[j]);
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                const int r = wq * 16 + (lane >> 2) + 8 * hh;
                const float v0 = swin_gelu_erf16(cur[4 * j + 2 * hh] + b.x);
                const float v1 = swin_gelu_erf16(cur[4 * j + 2 * hh + 1] + b.y);
                st_shared_u32(hb + swz(r, j) + 4 * (lane & 3), pack2<T>(v0, v1));
            }
        }
        if constexpr (!decltype(last)::value) load_b1(h + 1);
        fence_proxy_async();   /* the hidden, for fc2's wgmma after the barrier */
        named_sync(1 + wg, 128);
        const unsigned f = e2 + h, s = f % S2;
        mbar_wait(w2_full + 8 * s, (f / S2) & 1);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ks++)
            wgmma_ss<T, C>(acc2, sw128_desc(hb) + 2 * ks, sw128_desc(sw2 + s * S::W2) + 2 * ks, h | ks);
        wgmma_commit();
    };
    const std::true_type yes;
    const std::false_type no;

    for (int t = blockIdx.x; t < tiles; t += gridDim.x, ex++) {
        const int m0 = t * BM + wg * 64;   /* this warpgroup's first row */
        load_b1(0);
        if (res && m0 < M) {   /* the residual's rows into L2 now, so that the epilogue's loads do not wait
                                  for DRAM: the 128-byte lines of the warpgroup's rows (one block) */
            const uintptr_t lo = reinterpret_cast<uintptr_t>(res + (size_t)m0 * C),
                            hi = reinterpret_cast<uintptr_t>(res + (size_t)min(m0 + 64, M) * C);
            for (uintptr_t a = (lo & ~(uintptr_t)127) + (tid & 127) * 128; a < hi; a += 128 * 128)
                prefetch_l2(reinterpret_cast<const void *>(a));
        }
        mbar_wait(x_full, ex & 1);
        fc1(a0, e1);
        step(a0, a1, 0, yes, no);   /* NH is even: chunk h's fc1 result is in a(h % 2) */
#pragma unroll   /* a loop of chunks left rolled makes ptxas serialise the MMAs (C7514) */
        for (int h = 1; h < NH - 1; h += 2) {
            step(a1, a0, h, no, no);
            step(a0, a1, h + 1, no, no);
        }
        step(a1, a0, NH - 1, no, yes);
        wgmma_wait<0>();
        if (lane == 0) {
            mbar_arrive(w2_empty + 8 * ((e2 + NH - 2) % S2));
            mbar_arrive(w2_empty + 8 * ((e2 + NH - 1) % S2));
        }
        e1 += NH, e2 += NH;

        /* out = acc2 + b2 (+ res), rounded once */
        store_rows<T, C>(out, acc2, b2, res, m0 + wq * 16 + (lane >> 2), M, lane);
    }
}

template <typename T, int C>
swin_status launch(const char *op, void *out, const void *in, const void *w1, const void *b1, const void *w2,
                   const void *b2, const void *res, int M, int H, cudaStream_t st) {
    typedef Shape<C> S;
    CUtensorMap map_in, map_w1, map_w2;
    SWIN_TRY(swin_tma_map_2d(&map_in, op, "in", in, M, C, 2, BM));
    SWIN_TRY(swin_tma_map_2d(&map_w1, op, "w1", w1, H, C, 2, HC));
    SWIN_TRY(swin_tma_map_2d(&map_w2, op, "w2", w2, C, H, 2, C));
    int sms = 0;
    SWIN_TRY(swin_device_sms(&sms));
    const int tiles = (M + BM - 1) / BM;
    auto kernel = mlp_tma_kernel<T, C>;
    SWIN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)S::SMEM));
    swin_launch(kernel, dim3(tiles < sms ? tiles : sms), dim3(THREADS), S::SMEM, st, map_in, map_w1, map_w2, (T *)out,
                (const T *)b1, (const T *)b2, (const T *)res, M);
    SWIN_LAUNCH_CHECK("mlp_tma_kernel", st);
    return SWIN_OK;
}

template <typename T>
swin_status launch_c(const char *op, void *out, const void *in, const void *w1, const void *b1, const void *w2,
                     const void *b2, const void *res, int M, int C, int H, cudaStream_t st) {
    switch (C) {
    case 96: return launch<T, 96>(op, out, in, w1, b1, w2, b2, res, M, H, st);
    case 128: return launch<T, 128>(op, out, in, w1, b1, w2, b2, res, M, H, st);
    default: return launch<T, 192>(op, out, in, w1, b1, w2, b2, res, M, H, st);
    }
}

} // namespace

extern "C" int swin_mlp_tma_supports(int M, int C, int H) {
    return (C == 96 || C == 128 || C == 192) && H == 4 * C && M > 0;
}

extern "C" swin_status swin_mlp_tma_cuda(void *out, const void *in, const void *w1, const void *b1, const void *w2,
                                         const void *b2, const void *res, int M, int C, int H, swin_dtype dt,
                                         cudaStream_t st) {
    static const char op[] = "swin_mlp_tma_cuda";
    if (!swin_mlp_tma_supports(M, C, H))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs C 96, 128 or 192 and H = 4 C (M %d, C %d, H %d)", op, M, C, H);
    if (dt == SWIN_DT_F16) return launch_c<__half>(op, out, in, w1, b1, w2, b2, res, M, C, H, st);
    if (dt == SWIN_DT_BF16) return launch_c<__nv_bfloat16>(op, out, in, w1, b1, w2, b2, res, M, C, H, st);
    return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: fp16 or bf16 only (dtype %d)", op, (int)dt);
}
