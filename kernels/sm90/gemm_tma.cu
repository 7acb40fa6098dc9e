/* gemm_tma.cu - gemm_wgmma.cu's GEMM (fc1 with the exact GELU in its epilogue, 16-bit, TF32 or
 * FP8) as a persistent, warp-specialised kernel fed by the Tensor Memory Accelerator (TMA):
 *
 *   out [M, N] = act(in [M, K] @ w [N, K]^T + bias [N])     fp16 / bf16 / fp32 as TF32 (act: none, GELU)
 *   out_q [M, N] = e4m3(gelu((in_q @ w_q^T) * col_scale [N] + bias [N]) * out_inv)   E4M3
 *   out_q [M, N] = e4m3((in_q @ w_q^T) * col_scale [N] + bias [N])   E4M3 (FP8_OUT: FP8's qkv GEMM
 *                                                   writing q, k, v, its output scales folded in)
 *   out [M, N] = in @ w^T + bias + residual [M, N] (may be out)   fp16 / bf16 / TF32 (RESID)
 *   out [M, N] = (in_q @ w_q^T) * col_scale [N] + bias (+ residual)   E4M3 in, fp16 out (PLAIN, RESID:
 *                                                                  FP8 sites, kernels/gemm.c)
 *   x [M, N] += LN(in @ w^T (* col_scale) + bias), N <= 128          fp16 / bf16 / E4M3 in (POST_LN,
 *                                                                  gemm_tma_fold.cuh)
 *
 * Why: gemm_wgmma.cu's CTA copies its k-tiles itself (cp.async, every thread, address arithmetic
 * a large share of its instructions) and runs copy wait, MMAs and epilogue in turn; at fc1's
 * shapes (K 96 to 768: a few k-tiles, then an epilogue of a GELU per output) the epilogue of one
 * CTA and the loads of the other did not hide each other (its header: latency-bound, 25%
 * occupancy). Here the epilogue of one tile overlaps the loads and MMAs of the next.
 *
 * Kernel: one CTA an SM (persistent: it walks tiles blockIdx.x, + gridDim.x, ...), two teams of
 * WPT warpgroups (WPT 2 by default, 1 with SWIN_GEMM_TMA=1) and a producer warp:
 *   the producer (the last warp, one thread). For each of the CTA's tiles, for each k-tile, it
 *     waits for a free slot of a STAGES-deep ring (the slot's "empty" mbarrier), announces the
 *     bytes on the slot's "full" mbarrier and issues two TMA loads: 128 rows of in and 128 rows of
 *     w, 128 bytes of K each, into the 128-byte swizzled layout wgmma reads (the tensor maps say
 *     SWIZZLE_128B; rows past M or N and K past the end read as zero).
 *   the teams alternate tiles (the CTA's tiles 0, 2, 4, ... and 1, 3, 5, ...): while one runs its
 *     MMAs the other runs its epilogue. A team computes a 128 x 128 tile, each warpgroup 128 / WPT
 *     rows of it (wgmma.m64n128 per 64 rows and 32-byte k step: 64 fp32 accumulators a thread
 *     with WPT 2, 128 with WPT 1); each warpgroup's warps release each slot (4 WPT arrivals)
 *     once the MMAs that read it have completed (wait_group 1 keeps one k-tile's MMAs in flight).
 *     A last k-tile whose data end in its first half (K = 96 in 16 bits) runs only that half's
 *     MMAs (TAIL2: Swin-T's stage-1 fc1 0.760 -> 0.732 ms at batch 256 on an H100;
 *     SWIN_GEMM_TMA_TAIL=0 runs them all, on the zeros TMA fills past K, for comparison).
 *     A team's k-tiles are the ring's entries j KT .. j KT + KT - 1 for its j-th tile, so the slot
 *     and phase follow from j. The teams' k-loops take turns (an mbarrier each: "your turn"),
 *     which also keeps every wait on a ring slot within one phase of the slot's state (mbarrier
 *     waits name a phase by its parity).
 *   Epilogue, per warpgroup: bias, scale, GELU in fp32 (epi_store, gemm_sm90.cuh), written into
 *     its own staging rows in the 128-byte swizzled layout of the output's tensor map (boxes of
 *     128 / WPT rows x 128 bytes; conflict-free 4-byte stores: the 8 rows a warp writes land in 8
 *     different chunks), then one thread stores the boxes with TMA (parts past M or N are not
 *     written) and the next tile's MMAs start; its next epilogue waits until those stores have
 *     read the staging rows. RESID: at the start of each tile one thread of the warpgroup waits
 *     for those stores to have read the staging rows, then loads the residual's rows of the tile
 *     into them with TMA (an mbarrier a warpgroup, one phase a tile); the epilogue waits for it
 *     and each thread adds the residual at the place it writes its output (epi_store).
 * Shared memory: STAGES x 32 KiB of operands + 2 x 32 KiB of staging + the barriers (225 KiB);
 * fp32 (TF32) outputs of GELU and PLAIN epilogues: 5 x 32 KiB + 2 x 32 KiB, each tile's outputs
 * staged and stored in two halves of its columns, the second half waiting until the first half's
 * stores have read the staging rows (SPLIT 2; SWIN_GEMM_TMA_SPLIT=0 stages them whole in
 * 3 x 32 KiB + 2 x 64 KiB, as RESID does: stages(), out_tile()). Why: TF32 fc1 + GELU takes 4.89 ms of
 * Swin-T's 18.98 at batch 256 (--breakdown, H200, 2026-11-28) where cuBLASLt's fc2 of the same
 * FLOPs takes 3.30 (stage 2, K 384: 2.13 against 1.33), and a TF32 k-tile holds half the K of a
 * 16-bit one for the same MMA time, so 3 slots keep about half as much of the loads' latency
 * covered as the 16-bit ring's 5. Measured (H200, 2026-11-28, Swin-T tf32, swin bench -n 30, two
 * rounds, 0 then 1): batch 256 16.847 / 16.803 ms whole against 16.669 / 16.665 split, and 16.216
 * against 16.105 with --breakdown; batch 64 4.472 / 4.457 against 4.376 / 4.432: 1% every time, so
 * split is the default (test_gpu_gemm_tma_split0 runs the GEMM test whole).
 * Threads and registers: 544 (WPT 2), 65536 / 544 leaves 120 a thread (ptxas: 96); 288 (WPT 1),
 * 224 a thread (ptxas: 168).
 * Why two warpgroups a team: with one, the epilogue (a GELU of 14 instructions an output) ran on
 * 8 warps an SM and was latency-bound; two give 16 warps the same tile and shared memory.
 * Ordering: TMA writes and wgmma reads are both async-proxy operations ordered by the mbarriers;
 * the staging tile is written by the generic proxy, so each thread fences (fence.proxy.async)
 * before the warpgroup barrier after which the TMA store reads it.
 * Tensor maps are encoded on the host for each call (tma_map.h) and passed as __grid_constant__
 * parameters; a captured CUDA graph keeps them with the launch.
 * Selection: swin_gemm_wgmma_cuda and swin_gemm_wgmma_fp8_gelu_cuda (gemm_wgmma.cu) call this
 * kernel for outputs of at least two tiles a CTA (2 x SMs; fewer leave a team idle; on an H100
 * Swin-T at batch 8 was within noise with any threshold) unless the environment says
 * otherwise (read once): SWIN_GEMM_TMA=0 keeps the cp.async kernel, so that the two are measured
 * in one run, 1 takes one warpgroup a team (128 accumulators a thread; 2, two warpgroups of 64
 * rows each, the default), SWIN_GEMM_TMA_MIN_TILES=N moves the threshold (0: every shape, as
 * the tests run it). TF32 takes it too (fp32 data; the operands' low 13 mantissa bits unread,
 * as in the cp.async kernel): its outputs need twice the staging, so its ring has 3 slots.
 * Measured on the H200 (2026-11-27, same binary and run, two runs each, SWIN_GEMM_TMA=0 against
 * the default, build/swin bench --precision tf32 --iters 20): Swin-T batch 256 18.186 / 18.353
 * against 17.455 / 17.444 ms (13,949 to 14,676 img/s), batch 64 4.783 / 4.762 against 4.607 /
 * 4.644 ms, batch 8 unchanged (0.99 ms; its outputs are below the threshold); SwinV2-T batch 256
 * 22.879 against 21.802 ms; Swin-B 384 batch 64 35.120 against 34.383 ms; on another H200 later
 * that day, Swin-T batch 256 17.081 / 17.217 against 16.555 / 16.581 ms. --breakdown, Swin-T
 * batch 256: fc1 + GELU 5.222 against 4.577 ms, per stage 1.679 / 1.006 / 2.031 / 0.506 against
 * 1.163 / 0.837 / 2.003 / 0.574. Stage 2 (K 384, N 1536) runs at 177 TFLOP/s on either kernel,
 * where cuBLASLt's fc2 on the same stage gets 277: a TF32 k-tile is 32 values of K for 32 KiB,
 * half the MMAs of a 16-bit one, but halving w's share of that traffic did not help (the
 * clusters below). --verify of a random full-size Swin-T in tf32 against timm: 7.0e-4 both ways.
 * SWIN_GEMM_TMA_LINEAR=1 (below) in tf32: 18.834 / 18.676 ms, slower, as in 16 bits (qkv 2.84
 * against cuBLASLt's 2.66 ms, fc2 + residual 4.14 against 3.18).
 * The 16-bit and TF32 linear layers without GELU (qkv, proj, fc2 + residual, the reductions:
 * RESID or PLAIN) take it only with SWIN_GEMM_TMA_LINEAR=1 (kernels/gemm.c): on Swin's shapes
 * cuBLASLt is faster. The FP8 ones (E4M3 in, fp16 out) take it where it was faster than
 * cuBLASLt's FP8 GEMM on the shape's first call (SWIN_GEMM_TMA_FP8, kernels/gemm.c, which has
 * the measurements: 2% end to end at Swin-T's batch 64 and 256).
 * H100, Swin-T fp16 batch 256, --breakdown, ms for all blocks, cuBLASLt / this kernel:
 * qkv 1.445 / 1.612 (stage 1, K 96, N 288: 0.521 / 0.670, a third of each tile's columns past
 * N), proj 0.661 / 0.637, fc2 + residual 1.803 / 1.971 (stage 3, K 1536: 0.636 / 0.712, the
 * mainloop of one 128 x 128 tile at a time short of cuBLASLt's), end to end 24,160 / 23,320
 * img/s; SwinV2-T and Swin-B 384 alike.
 * Measured on the H200 (2026-11-26, same binary and same run, SWIN_GEMM_TMA=0 / 1 / 2 (default)
 * build/swin bench --precision fp16 --batch 1,8,64,256, Swin-B 384 with --arch
 * swin_base_patch4_window12_384; two runs each):
 *
 *   model, fp16                        cp.async (0)     TMA, 1 warpgroup  TMA, 2 warpgroups
 *                                                       a team (1)        a team (default)
 *   Swin-T batch 64, img/s             22,920 / 22,800  23,604 / 23,615   23,738 / 23,957
 *   Swin-T batch 256, img/s            24,892 / 24,862  25,759 / 25,898   25,869 / 25,863
 *   Swin-T batch 256, --breakdown
 *     total ms                         10.47            10.10             9.94
 *   Swin-B 384 batch 64, img/s         3,312 / 3,306    3,451 / 3,447     3,448 / 3,428
 *   Swin-B 384 batch 256, img/s        3,316 / 3,363    3,458 / 3,463     3,483 / 3,478
 *
 * In an earlier run of the same day (H200, cp.async against the one-warpgroup version): fc1 +
 * GELU over all blocks at batch 256, from --breakdown, took 2.96 -> 2.50 ms for Swin-T and
 * 25.0 -> 20.8 ms for Swin-B 384. ncu on Swin-T's first fc1 at batch 256 gave 572 -> 478 us and
 * 271.6M -> 199.0M warp instructions. FP8 Swin-T at batch 256 went from 26,830 to 27,211 img/s.
 * On an H100, batch 8 was within noise either way (Swin-T 0.69 to 0.72 ms, SwinV2-T 0.79 to
 * 0.82 ms in every setting), and batch 64 went from 3.04 to 2.88 ms.
 * Where the time goes now (H200, 2026-11-27, ncu --set full on Swin-T fp16 batch 256, ncu's
 * locked 1.33 GHz clock; --breakdown at full clock: fc1 + GELU 2.37 ms of 9.4 for all blocks):
 * stage-1 fc1 (M 802,816, K 96, N 384) 458 us, 214M warp instructions (22 an output element, of
 * which the epilogue's bias, GELU, pack and staging store are 17), issue slots 66% busy, 4.2
 * warps a scheduler of which 1.6 eligible (no eligible warp 32% of cycles), DRAM 34%; stage-3
 * fc1 (K 384, N 1536) 191 us, 27.8 instructions an output, issue slots 52% busy, DRAM 18%. So
 * the kernel is bound by the epilogue's instruction issue and latency at 17 warps an SM, not by
 * memory or the tensor cores: fewer epilogue instructions an output (the bias loaded once a tile,
 * the GELU's select as max(x, 0) - |x| hq) or more warps in the epilogue are the levers.
 * With uniform_on, the first MMAs' scale-d and stmatrix staging (below), the same stage-1 fc1
 * (H200, 2026-11-28, tools/ncu_profile.py --launch-skip 0 on swin bench --graphs off, 1.33 GHz):
 * 396 us, 201M warp instructions (20.8 an output), issue slots 72% busy, 1.78 of 4.23 warps a
 * scheduler eligible, DRAM 39%; per output FADD 1.00, MOV 0.67, HADD2 0.50 (the bias), F2FP
 * 0.50, IADD3 0.44, STSM 0.12; the most sampled instruction (6.7% of the samples) is the branch
 * after the warpgroup's barrier before its TMA stores. (Writing max(x, 0) - |min(x, 3e38)| hq
 * for the GELU's sign cases, which keeps +inf, compiled to as many instructions as the select.)
 * The GELU's share, measured (H200, 2026-11-28, before uniform_on below, build/swin bench
 * --breakdown, ms per stage for all blocks): this kernel with the GELU (default) / the same
 * kernel without it (SWIN_GEMM_TMA_LINEAR=1 --mlp unfused; its separate GELU pass not counted) /
 * cuBLASLt's fc1 without it (--mlp unfused):
 *   Swin-T fp16 batch 256      0.810 0.477 0.977 0.259  /  0.629 0.287 0.710 0.214  /  0.493 0.272 0.708 0.184
 *   Swin-B 384 fp16 batch 64   0.849 0.533 3.459 0.327  /  0.457 0.345 2.685 0.281  /  0.445 0.314 2.193 0.249
 *   Swin-T tf32 batch 256      1.220 0.788 1.694 0.470  /  0.956 0.560 1.403 0.433  /  0.961 0.548 1.205 0.333
 * So the GELU costs 0.68 ms of Swin-T fp16's 2.52 (stage 3, K 384: 0.710 -> 0.977) and 1.4 of
 * Swin-B 384's 5.17: the teams' alternation does not hide it (a tile's epilogue outlasts the
 * other team's k-loop), and at Swin-B 384's stage 3 (K 512, N 2048) the k-loop itself is 22%
 * behind cuBLASLt's (ncu there: 217 us at 1.30 GHz, tensor pipe 51%, issue slots 48% busy, 1.24
 * of 4.21 warps a scheduler eligible, DRAM 16%, L2 hit 95%). The levers this leaves: epilogue
 * work spread over warps that would otherwise wait on their own MMAs (the other team's, between
 * its k-tiles), and a 128 x 256 tile for large K (twice the MMAs per byte of in loaded into and
 * read from shared memory).
 * Tried and taken out (commit 657b6ad, SWIN_GEMM_TMA_GELU_SMEM=1 there): the latency side. The
 * epilogue staged acc + bias (16-bit: rounded, what PyTorch's fc1 hands its GELU; fp32: exact),
 * then each thread ran the GELU over the staged values 16 bytes at a time (16 16-bit GELUs in
 * flight in the registers the dead accumulators held; 96 registers, no spills in 16 bits, TF32
 * 12 bytes spilled with its halves). Correct (test_gpu_gemm and test_gpu_engine with it, compute-
 * sanitizer memcheck 0) but not faster: H200 (2026-11-28, tools/bench_ab.py, two rounds, best
 * medians, off / on): Swin-T fp16 batch 64 2.388 / 2.386 ms, batch 256 8.870 / 8.912 (fc1 + GELU
 * 2.463 / 2.471 ms from --breakdown); bf16 batch 256 8.614 / 8.673; tf32 batch 64 4.412 / 4.470,
 * batch 256 16.679 / 16.971 (whole: 17.149); Swin-B 384 fp16 batch 64 18.172 / 18.189. The
 * second pass re-reads what the first wrote and adds its own instructions (about 4 + 16 an
 * output against 17), which ate what the extra GELUs in flight won.
 * Tried and taken out (commit 9b68791, SWIN_GEMM_TMA_MC=1 there): clusters of two CTAs on pairs
 * of row tiles with the same columns, each producer loading its own rows of in and half of w's
 * k-tile into both CTAs (TMA multicast); empty barriers counting both CTAs' consumer warps
 * (remote arrivals through mapa), cluster barriers after set-up and before exit, the grid sized
 * by cudaOccupancyMaxActiveClusters. Correct (every test shape; full-size Swin-T verify fp16
 * 8.0e-4, tf32 7.9e-4) but not faster: H200 (2026-11-27), Swin-T batch 256, off / on, two runs:
 * fp16 9.285 / 9.314 and 9.318 / 9.411 ms, tf32 16.308 / 16.480 and 16.326 / 16.454, fp8 8.366
 * / 8.381 and 8.323 / 8.427; Swin-B 384 fp16 batch 64 18.201 / 18.460; fp16 fc1 + GELU per stage
 * 0.761 / 0.450 / 0.922 / 0.246 against 0.800 / 0.471 / 0.968 / 0.260 ms. So w's operand
 * traffic does not bound the compute-heavy stages' fc1 (K 384 and 768).
 * Not tried on the GPU, ruled out by emulation: the GELU in f16x2 arithmetic (half the
 * instructions: x rounded to fp16, erfc(|x| / sqrt 2) e^(x^2 / 2) / 2 as a polynomial in |x| by
 * HFMA2, ex2.approx.f16x2 for e^(-x^2 / 2), out = max(x, 0) - |x| hq by HFMA2; about 7
 * instructions an output against the erf GELU's 14.5). numpy, every HFMA2 rounded to fp16, on
 * 900,000 values in [-8, 8] and N(0, 1.5) against round16(x Phi(x)): with polynomials of degree 4
 * to 8 (fitted to 5.6e-2 .. 9.2e-4 relative), 19 to 54% of the outputs are more than one fp16 ulp
 * off, up to 44 to 129 ulps (near x = -4, where hq's relative error is the output's), x^2 in fp32
 * or in fp16 alike. So fp16 outputs keep the fp32 GELU.
 * V1's norm2 folded into the GEMMs around it (SWIN_LN_FOLD=1, opt-in): the SCATTER and LN_GELU
 *   epilogues, sm90/gemm_tma_fold.cuh (what they do and how they measured).
 * Test: tests/test_gpu_lnfold.c (SCATTER, LN_GELU; also _tma1, _nopdl; test_gpu_engine_fold), and
 * tests/test_gpu_gemm.c and tests/test_gpu_fp8.c, in CTest also as _tma (every shape on this
 * kernel), _tma1 (and one warpgroup a team) and _cpasync (SWIN_GEMM_TMA=0); tools/gpu_check.sh
 * runs the sanitizers with every shape on this kernel.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "common.cuh"
#include "sm90/gemm_sm90.cuh"
#include "sm90/gemm_tma_fold.cuh"
#include "sm90/gemm_tma.h"
#include "sm90/tma_map.h"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "gemm_tma.cu is built for sm_90a only (CMakeLists.txt)"
#endif

namespace {

using namespace sm90;

constexpr int BM = 128, BN = 128, ROW = 128, TEAMS = 2;
static_assert(TEAMS == 2, "the teams take turns in pairs (team ^ 1)");
constexpr int TILE_A = BM * ROW, TILE_B = BN * ROW, STAGE_BYTES = TILE_A + TILE_B;
constexpr int MAX_WG = 2 * TEAMS;        /* consumer warpgroups (WPT 2) */
/* a team's staging: 16-bit outputs (E4M3 uses half of it), or fp32 (TF32), twice that, or with
 * SPLIT 2 half of that, the tile's outputs staged and stored in two halves of its columns; the
 * ring's slots: 5, or 3 next to 64 KiB of staging (224 KiB of the 227 a CTA may have) */
template <class E, int EPI, int SPLIT = 1> constexpr int out_tile() {
    return BM * BN * (out_size<E, EPI>() == 4 ? 4 : 2) / SPLIT;
}
template <class E, int EPI, int SPLIT = 1> constexpr int stages() {
    return out_tile<E, EPI, SPLIT>() > 32 * 1024 ? 3 : 5;
}
/* POST_LN: the LayerNorm's gamma and beta for the tile's columns, fp32, after the barriers */
template <int EPI> constexpr int ln_bytes() { return EPI == POST_LN ? 2 * BN * 4 : 0; }
template <class E, int EPI, int SPLIT = 1> constexpr size_t smem_bytes() {
    return (size_t)stages<E, EPI, SPLIT>() * STAGE_BYTES + TEAMS * out_tile<E, EPI, SPLIT>() +
           (2 * stages<E, EPI, SPLIT>() + TEAMS + MAX_WG) * 8 + ln_bytes<EPI>() + 1024;
}
static_assert(smem_bytes<TF32, GELU>() <= 227 * 1024 && smem_bytes<F16, POST_LN>() <= 227 * 1024 &&
              smem_bytes<TF32, GELU, 2>() <= 227 * 1024, "shared memory");
/* SPLIT 2 is built for fp32 outputs of GELU and PLAIN epilogues (RESID stages its residual whole) */
template <class E, int EPI> constexpr bool can_split() { return out_size<E, EPI>() == 4 && (EPI == GELU || EPI == PLAIN); }
/* WPT warpgroups a team (1 or 2): each takes 128 / WPT rows of the team's tile */
template <int WPT> constexpr int threads() { return TEAMS * WPT * 128 + 32; }

/* byte offset of byte b of staging row r: boxes of R rows x 128 bytes, 16-byte chunk c of a box
 * row at chunk c ^ (r % 8) (TMA's 128-byte swizzle) */
template <int R>
__device__ __forceinline__ uint32_t box_off(int r, int b) {
    return (uint32_t)((b >> 7) * (R * 128) + r * 128 + ((((b >> 4) & 7) ^ (r & 7)) << 4) + (b & 15));
}

template <class E, int EPI, int WPT, bool TAIL2, int SPLIT, bool UW>
__global__ void __launch_bounds__(threads<WPT>(), 1)
gemm_tma_kernel(const __grid_constant__ CUtensorMap map_in, const __grid_constant__ CUtensorMap map_w,
                const __grid_constant__ CUtensorMap map_out, const __grid_constant__ CUtensorMap map_res, Epi ep, int N,
                int KT, int tiles, int tiles_n, const LnFold ln, int stsm) {
    constexpr int BK = ROW / E::ESZ;                               /* elements of K a k-tile */
    constexpr int OSZ = out_size<E, EPI>(), BOXES = BN * OSZ / 128;   /* output bytes an element; boxes a tile */
    constexpr int RW = BM / WPT, MI = RW / 64;   /* rows a warpgroup; its m64 MMAs a k step */
    constexpr int STAGES = stages<E, EPI, SPLIT>(), OUT_TILE = out_tile<E, EPI, SPLIT>();
    static_assert(SPLIT == 1 || (SPLIT == 2 && can_split<E, EPI>()), "SPLIT: 1, or 2 for fp32 GELU / PLAIN outputs");
    constexpr int CONSUMERS = TEAMS * WPT;
    constexpr bool HAS_RES = EPI == RESID || EPI == POST_LN;   /* the residual staged at the output's place */
    /* outputs staged with stmatrix: 16-bit ones of the epilogues without a residual in staging */
    constexpr bool STSM_OK = OSZ == 2 && SPLIT == 1 && (EPI == GELU || EPI == PLAIN || EPI == LN_GELU);
    extern __shared__ unsigned char smem_raw[];
    const uint32_t s0 = (smem_addr(smem_raw) + 1023u) & ~1023u;   /* the swizzle's atoms: 1024-byte aligned */
    const uint32_t s_out = s0 + STAGES * STAGE_BYTES, full = s_out + TEAMS * OUT_TILE, empty = full + 8 * STAGES;
    const uint32_t order = empty + 8 * STAGES;   /* order + 8 T: team T may start its next tile's k-loop */
    const uint32_t res = order + 8 * TEAMS;      /* res + 8 wg (HAS_RES): warpgroup wg's residual rows landed */
    /* POST_LN: gamma [BN] then beta [BN] (0 past N), read as float pairs by the epilogue */
    const float *ln_s = reinterpret_cast<const float *>(smem_raw + (res + 8 * MAX_WG - smem_addr(smem_raw)));
    /* UW: wg from lane 0, so that the compiler knows it (and the team, the ring positions and the
     * descriptors that follow from it) is the same across the warp and keeps them in uniform
     * registers (uniform_on) */
    const int tid = threadIdx.x, wg = UW ? __shfl_sync(0xffffffffu, tid >> 7, 0) : tid >> 7;
    if (tid == 0) {
        for (int s = 0; s < STAGES; s++) mbar_init(full + 8 * s, 1), mbar_init(empty + 8 * s, 4 * WPT);
        for (int w = 0; w < TEAMS; w++) mbar_init(order + 8 * w, WPT);
        for (int w = 0; w < CONSUMERS; w++) mbar_init(res + 8 * w, 1);
        mbar_fence_init();
    }
    if constexpr (EPI == POST_LN) {
        float *p = const_cast<float *>(ln_s);
        if (tid < BN) p[tid] = tid < N ? ln.gamma[tid] : 0.0f, p[BN + tid] = tid < N ? ln.beta[tid] : 0.0f;
    }
    __syncthreads();
    swin_pdl_begin();

    if (wg == CONSUMERS) {   // ---- the producer
        if (tid != CONSUMERS * 128) return;
        tma_prefetch_map(&map_in), tma_prefetch_map(&map_w);
        unsigned it = 0;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            const int m0 = (t / tiles_n) * BM, n0 = (t % tiles_n) * BN;
            for (int kt = 0; kt < KT; kt++, it++) {
                const uint32_t s = it % STAGES, sa = s0 + s * STAGE_BYTES;
                mbar_wait(empty + 8 * s, ((it / STAGES) & 1) ^ 1);
                mbar_expect_tx(full + 8 * s, STAGE_BYTES);
                tma_load_2d(sa, &map_in, kt * BK, m0, full + 8 * s);
                tma_load_2d(sa + TILE_A, &map_w, kt * BK, n0, full + 8 * s);
            }
        }
        return;
    }

    // ---- a consumer warpgroup: rows sub RW .. of tiles j = team, team + 2, ... of the CTA's sequence
    const int team = wg / WPT, sub = wg % WPT;
    const int lane = tid & 31, wq = (tid >> 5) & 3, ctid = tid & 127;
    const uint32_t my_out = s_out + team * OUT_TILE + sub * (OUT_TILE / WPT);
    unsigned char *stage = smem_raw + (my_out - smem_addr(smem_raw));
    if (ctid == 0 && EPI != SCATTER) {
        tma_prefetch_map(&map_out);
        if (HAS_RES) tma_prefetch_map(&map_res);
    }
    unsigned turn = 0;   /* waits on order + 8 team so far */
    for (int t = blockIdx.x + team * gridDim.x, j = team; t < tiles; t += TEAMS * gridDim.x, j += TEAMS) {
        const int m0 = (t / tiles_n) * BM, n0 = (t % tiles_n) * BN;
        if (HAS_RES && ctid == 0) {
            /* the residual's rows of this tile into the staging rows, where the epilogue adds
             * them in place, once the previous tile's stores have read them */
            bulk_wait_read();
            mbar_expect_tx(res + 8 * wg, OUT_TILE / WPT);
#pragma unroll
            for (int bx = 0; bx < BOXES; bx++)
                tma_load_2d(my_out + bx * RW * 128, &map_res, n0 + bx * (128 / OSZ), m0 + sub * RW, res + 8 * wg);
        }
        /* the teams' k-loops take turns, tile j after tile j - 1's (the other team's) has waited
         * for all its k-tiles: so every ring entry before this tile's first has landed, and each
         * full-barrier wait below is for the phase after the last completed one (a parity wait
         * cannot tell a phase from the one two later) */
        if (j > 0) mbar_wait(order + 8 * team, turn++ & 1);
        /* rows sub RW + 64 mi + ... of the tile: not zeroed, the tile's first MMAs write them
         * (wgmma's scale-d 0); zeroing them had cost 32 to 64 instructions a thread and tile
         * (CS2R; fp16 GELU kernel 3,080 -> 2,968 instructions; a run-time choice between the two
         * became 64 selects, so there is no switch). Measured against the zeroing kernel (H200,
         * 2026-11-28, tools/bench_ab.py, two binaries, two rounds, best medians): Swin-T fp16
         * batch 64 2.347 -> 2.311 ms, batch 256 8.655 -> 8.634 (fc1 + GELU 2.264 -> 2.137 from
         * --breakdown), tf32 batch 256 15.607 -> 15.538, fp8 batch 256 7.755 -> 7.690.
         * SCATTER still zeroes them: its epilogue rewrites d in place, and without the zeroing
         * ptxas spilled 1,536 bytes there (20 with it) */
        constexpr bool ZERO = EPI == SCATTER;
        float d[MI][64];
        if constexpr (ZERO) {
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int i = 0; i < 64; i++) d[mi][i] = 0.0f;
        }
        unsigned it = (unsigned)j * KT;
        /* k-tile kt (ring entry it) in NKS steps of 32 bytes of K (descriptors + 2 a step); FIRST:
         * the tile's first, whose first step writes d */
        auto k_tile = [&](int kt, auto nks, auto first) {
            const uint32_t s = it % STAGES, sa = s0 + s * STAGE_BYTES;
            mbar_wait(full + 8 * s, (it / STAGES) & 1);
            const uint64_t da = sw128_desc(sa + sub * RW * ROW), db = sw128_desc(sa + TILE_A);
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < decltype(nks)::value; ks++)
#pragma unroll
                for (int mi = 0; mi < MI; mi++) {
                    const uint64_t a = da + (mi * 64 * ROW >> 4) + 2 * ks, b = db + 2 * ks;
                    if (decltype(first)::value && ks == 0) wgmma_64x128_p<E>(d[mi], a, b, 0);
                    else wgmma_64x128<E>(d[mi], a, b);
                }
            wgmma_commit();
            if (kt > 0) {   /* the previous k-tile's MMAs are done: its slot is free */
                wgmma_wait<1>();
                if (lane == 0) mbar_arrive(empty + 8 * ((it - 1) % STAGES));
            }
            it++;
        };
        /* the last k-tile: TAIL2, its half within K only (K = 96 in 16 bits: 3 of 4 k-tile
         * halves hold data); else all of it, zero-filled past K */
        using Whole = std::integral_constant<int, ROW / 32>;
        using Last = std::integral_constant<int, TAIL2 ? ROW / 64 : ROW / 32>;
        using First = std::true_type;
        using Next = std::false_type;
        if constexpr (ZERO) {   /* every k-tile adds, in one loop: MMAs on zeroed registers in the
                                 * branches below made ptxas fence and serialise them */
            for (int kt = 0; kt < KT - 1; kt++) k_tile(kt, Whole(), Next());
            k_tile(KT - 1, Last(), Next());
        } else if (KT == 1) {
            k_tile(0, Last(), First());
        } else {
            k_tile(0, Whole(), First());
            for (int kt = 1; kt < KT - 1; kt++) k_tile(kt, Whole(), Next());
            k_tile(KT - 1, Last(), Next());
        }
        if (ctid == 0) mbar_arrive(order + 8 * (team ^ 1));   /* the other team's turn */
        wgmma_wait_all();
        if (lane == 0) mbar_arrive(empty + 8 * ((it - 1) % STAGES));
        if constexpr (EPI == SCATTER) {   /* straight to the image rows: no staging, no TMA store */
            scatter_epilogue<BN, E, MI>(d, ln, ep, m0 + sub * RW, n0, N, lane, wq);
            continue;
        }

        /* epilogue: the previous tile's stores have read the staging rows (RESID: and the
         * residual has landed in them; each thread then reads and writes its own elements) */
        if constexpr (HAS_RES) {
            mbar_wait(res + 8 * wg, (j >> 1) & 1);   /* this warpgroup's (j / 2)-th residual load */
        } else {
            if (ctid == 0) bulk_wait_read();
            named_sync(1 + wg, 128);
        }
        const int r_lo = wq * 16 + (lane >> 2);
        float nm[MI][2], rs[MI][2];   /* LN_GELU: the rows' -mean rstd and rstd; POST_LN: mean, rstd */
        uint32_t pk[EPI == POST_LN ? MI : 1][2][EPI == POST_LN ? BN / 8 : 1];   /* POST_LN: the rows' values */
        if constexpr (EPI == POST_LN) post_ln_stats<BN, E, MI>(d, ep, N, ln.eps, lane, pk, nm, rs);
        if constexpr (EPI == LN_GELU) {
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    float mu;
                    ln_row_stats<BN>(ln, m0 + sub * RW + 64 * mi + r_lo + 8 * h, mu, rs[mi][h]);
                    nm[mi][h] = -mu * rs[mi][h];
                }
        }
        /* STSM (16-bit GELU, PLAIN, LN_GELU outputs; SWIN_GEMM_TMA_STSM=0: the 4-byte stores
         * below): each stmatrix stores two column octets jn0, jn0 + 1 of rows r_lo and r_lo + 8,
         * 8 outputs of a thread. Lane l gives the address of row l % 8 of matrix l / 8 (h =
         * matrix % 2, octet jn0 + matrix / 2); rows of a matrix are rows of one 8-row swizzle
         * atom (row % 8 = l % 8), so its chunk is (jn0 % 8 + matrix / 2) ^ (l % 8) = (jn0 % 8) ^
         * q with q = matrix / 2 ^ l % 8 (jn0 even): four addresses a row block, set up once */
        if constexpr (STSM_OK) {
            if (stsm) {
                const int mt = lane >> 3, q = (mt >> 1) ^ (lane & 7);
#pragma unroll
                for (int jp = 0; jp < BN / 16; jp++) {
                    const int jn0 = 2 * jp, c = jn0 * 8 + 2 * (lane & 3);
                    float2 b[2], cs[2];
                    epi_coeffs<E, EPI>(ep, n0 + c, N, b[0], cs[0]);
                    epi_coeffs<E, EPI>(ep, n0 + c + 8, N, b[1], cs[1]);
#pragma unroll
                    for (int mi = 0; mi < MI; mi++) {
                        uint32_t v[4];
#pragma unroll
                        for (int t = 0; t < 4; t++) {   /* matrix t: octet jn0 + t / 2, rows + 8 (t % 2) */
                            const int h = t & 1, o = t >> 1, i = 4 * (jn0 + o) + 2 * h;
                            float2 bb = b[o], sc = cs[o];
                            if constexpr (EPI == LN_GELU) {
                                bb = make_float2(fmaf(nm[mi][h], cs[o].x, b[o].x), fmaf(nm[mi][h], cs[o].y, b[o].y));
                                sc = make_float2(rs[mi][h], rs[mi][h]);
                            }
                            const float2 w2 = epi_pair<E, EPI>(d[mi][i], d[mi][i + 1], bb, sc);
                            v[t] = pack2<OutT<E, EPI>>(w2.x, w2.y);
                        }
                        const int row = 64 * mi + wq * 16 + 8 * (mt & 1) + (lane & 7);
                        const uint32_t addr = my_out + (jn0 >> 3) * (RW * 128) + row * 128 + ((((jn0 & 7) ^ q)) << 4);
                        stmatrix_x4(addr, v[0], v[1], v[2], v[3]);
                    }
                }
                fence_proxy_async();
                named_sync(1 + wg, 128);
                if (ctid == 0) {
#pragma unroll
                    for (int bx = 0; bx < BOXES; bx++)
                        tma_store_2d(&map_out, my_out + bx * RW * 128, n0 + bx * (128 / OSZ), m0 + sub * RW);
                    bulk_commit();
                }
                continue;
            }
        }
        /* SPLIT parts of the tile's columns, each staged and then stored; a part after the first
         * waits until the previous part's stores have read the staging rows */
        constexpr int JP = BN / 8 / SPLIT, BP = BOXES / SPLIT;   /* column octets, boxes a part */
#pragma unroll
        for (int part = 0; part < SPLIT; part++) {
            if (part > 0) {
                if (ctid == 0) bulk_wait_read();
                named_sync(1 + wg, 128);
            }
            if constexpr (EPI == POST_LN) {   /* one part; n0 0: c is the row's column */
                typedef OutT<E, POST_LN> T;
#pragma unroll
                for (int jn = 0; jn < BN / 8; jn++) {
                    const int c = jn * 8 + 2 * (lane & 3);
                    const float2 g = *reinterpret_cast<const float2 *>(ln_s + c);
                    const float2 be = *reinterpret_cast<const float2 *>(ln_s + BN + c);
#pragma unroll
                    for (int mi = 0; mi < MI; mi++)
#pragma unroll
                        for (int h = 0; h < 2; h++) {   /* row.cuh's order: (v - mean) rstd, * gamma + beta, + x */
                            unsigned char *p = stage + box_off<RW>(64 * mi + r_lo + 8 * h, OSZ * c);
                            const float2 x = unpack2<T>(*reinterpret_cast<const uint32_t *>(p));
                            const float2 v = unpack2<T>(pk[mi][h][jn]);
                            const float y0 = fmaf((v.x - nm[mi][h]) * rs[mi][h], g.x, be.x) + x.x;
                            const float y1 = fmaf((v.y - nm[mi][h]) * rs[mi][h], g.y, be.y) + x.y;
                            *reinterpret_cast<uint32_t *>(p) = pack2<T>(y0, y1);
                        }
                }
            } else {
#pragma unroll
                for (int jj = 0; jj < JP; jj++) {
                    const int jn = part * JP + jj, c = jn * 8 + 2 * (lane & 3), cp = c - part * JP * 8;
                    float2 b, cs;
                    epi_coeffs<E, EPI>(ep, n0 + c, N, b, cs);
#pragma unroll
                    for (int mi = 0; mi < MI; mi++)
#pragma unroll
                        for (int h = 0; h < 2; h++) {   /* rows r_lo (+ 8) of each m64 block */
                            const int i = 4 * jn + 2 * h, r = 64 * mi + r_lo + 8 * h;
                            /* LN_GELU: LN(x) w^T + b = rstd x w'^T + (b - rstd mean colsum(w')) */
                            if constexpr (EPI == LN_GELU) {
                                const float2 sc = make_float2(rs[mi][h], rs[mi][h]);
                                const float2 bb = make_float2(fmaf(nm[mi][h], cs.x, b.x), fmaf(nm[mi][h], cs.y, b.y));
                                epi_store<E, EPI>(stage + box_off<RW>(r, OSZ * cp), d[mi][i], d[mi][i + 1], bb, sc, ep);
                            } else {
                                epi_store<E, EPI>(stage + box_off<RW>(r, OSZ * cp), d[mi][i], d[mi][i + 1], b, cs, ep);
                            }
                        }
                }
            }
            fence_proxy_async();
            named_sync(1 + wg, 128);
            if (ctid == 0) {
#pragma unroll
                for (int bx = 0; bx < BP; bx++)
                    tma_store_2d(&map_out, my_out + bx * RW * 128, n0 + (part * BP + bx) * (128 / OSZ), m0 + sub * RW);
                bulk_commit();
            }
        }
    }
    if (ctid == 0 && EPI != SCATTER) bulk_wait();
}

/* SWIN_GEMM_TMA_TAIL=0: a last k-tile half past K runs its MMAs on the zeros (as before TAIL2) */
bool tail_on(void) {
    static const bool on = swin_env_on("SWIN_GEMM_TMA_TAIL", 1);
    return on;
}

/* fp32 (TF32) GELU and PLAIN outputs staged in two halves of a tile's columns, which leaves room
 * for a 5-slot ring instead of 3; SWIN_GEMM_TMA_SPLIT=0 stages them whole (read once) */
bool split_on(void) {
    static const bool on = swin_env_on("SWIN_GEMM_TMA_SPLIT", 1);
    return on;
}

/* The warpgroup index broadcast from lane 0 (UW): the wgmma descriptors and ring positions are
 * then computed in uniform registers, where each k step's two descriptors had cost 8 instructions
 * (4 R2UR moves into the uniform registers wgmma reads, 2 LOP3, 2 MOV) and now cost 4 uniform ones
 * (fp16 GELU kernel: 3,232 -> 3,088 instructions, R2UR 149 -> 11). ncu (H200, 2026-11-28, Swin-T
 * fp16 batch 256, before): 22.6 instructions an output at stage 1 (K 96), 28.1 at stage 3 (K 384),
 * where R2UR alone was 1.66. Measured (H200, 2026-11-28, tools/bench_ab.py, two rounds, best
 * medians, default / SWIN_GEMM_TMA_UNIFORM=0): Swin-T fp16 batch 256 8.657 / 8.844 ms (fc1 + GELU
 * 2.239 / 2.440 from --breakdown), tf32 batch 256 15.627 / 15.943 ms: 2% end to end each.
 * SWIN_GEMM_TMA_UNIFORM=0 (read once) computes them per thread as before (test_gpu_gemm_uniform0,
 * test_gpu_fp8_uniform0); the 64 kernels of that setting compile to the SASS they had before.
 * ptxas: the default GELU, PLAIN, RESID and FP8 kernels of two warpgroups a team spill nothing
 * either way; TF32 PLAIN's 8 bytes (halves) go, the LN fold's kernels spill less (SCATTER 176 ->
 * 136 bytes with one warpgroup a team, 64 -> 20 with two; LN_GELU 60 -> 4); RESID with one
 * warpgroup a team (opt-in: SWIN_GEMM_TMA=1 SWIN_GEMM_TMA_LINEAR=1) now spills 28 (bf16) and 52
 * (fp16) bytes */
bool uniform_on(void) {
    static const bool on = swin_env_on("SWIN_GEMM_TMA_UNIFORM", 1);
    return on;
}

/* 16-bit GELU, PLAIN and LN_GELU outputs staged with stmatrix, 8 outputs a thread an instruction
 * with four addresses a thread set up once; SWIN_GEMM_TMA_STSM=0 (read once; a uniform run-time
 * argument, no other kernels) keeps the 4-byte stores, one a column pair at its own address.
 * cuobjdump, fp16 GELU kernel, its epilogue with a bias up to the TMA stores: 1,150 instructions
 * against 1,187 (8 STSM for 32 STS; IADD3 23 against 33). Measured
 * (H200, 2026-11-28, tools/bench_ab.py, two rounds, best medians, =0 / default): Swin-T fp16 batch
 * 256 8.762 / 8.738 ms (fc1 + GELU 2.171 / 2.150 from --breakdown), batch 64 2.325 / 2.348; bf16
 * batch 256 8.491 / 8.460; Swin-B 384 fp16 batch 64 18.022 / 17.822: within a percent, mostly in
 * its favour. Tried with it and taken out: the bias pairs loaded once a tile with one check
 * against N for the tile (not one a pair): ptxas then spilled 12 bytes in the default bf16 GELU
 * kernel and the loads took a LEA each. */
bool stsm_on(void) {
    static const bool on = swin_env_on("SWIN_GEMM_TMA_STSM", 1);
    return on;
}

/* the kernel of a tile shape's last k-tile (TAIL2 when tail2) */
template <class E, int EPI, int WPT, int SPLIT, bool UW>
constexpr auto kernel_for(bool tail2) {
    return tail2 ? gemm_tma_kernel<E, EPI, WPT, true, SPLIT, UW> : gemm_tma_kernel<E, EPI, WPT, false, SPLIT, UW>;
}
template <class E, int EPI, int WPT, int SPLIT>
constexpr auto kernel_for(bool tail2, bool uw) {
    return uw ? kernel_for<E, EPI, WPT, SPLIT, true>(tail2) : kernel_for<E, EPI, WPT, SPLIT, false>(tail2);
}

template <class E, int EPI, int WPT>
swin_status launch_wpt(const char *op, void *out, const void *in, const void *w, const void *residual, Epi ep, int M,
                       int K, int N, cudaStream_t st, const LnFold &ln) {
    constexpr int OSZ = out_size<E, EPI>();
    CUtensorMap map_in, map_w, map_out, map_res;
    SWIN_TRY(swin_tma_map_2d(&map_in, op, "in", in, M, K, E::ESZ, BM));
    SWIN_TRY(swin_tma_map_2d(&map_w, op, "w", w, N, K, E::ESZ, BN));
    if (EPI == SCATTER) map_out = map_in;   /* unread: the epilogue stores through ln.x */
    else SWIN_TRY(swin_tma_map_2d(&map_out, op, "out", out, M, N, OSZ, BM / WPT));
    if (EPI == RESID || EPI == POST_LN) SWIN_TRY(swin_tma_map_2d(&map_res, op, "residual", residual, M, N, OSZ, BM / WPT));
    else map_res = map_out;   /* unread */
    int sms = 0;
    SWIN_TRY(swin_device_sms(&sms));
    const int tiles_n = (N + BN - 1) / BN, tiles = ((M + BM - 1) / BM) * tiles_n;
    const int KT = (K * E::ESZ + ROW - 1) / ROW;
    const bool tail2 = tail_on() && K * E::ESZ - (KT - 1) * ROW <= ROW / 2;   /* the last k-tile's data: first half */
    const bool uw = uniform_on();
    auto kernel = kernel_for<E, EPI, WPT, 1>(tail2, uw);
    size_t smem = smem_bytes<E, EPI>();
    if constexpr (can_split<E, EPI>()) {   /* SPLIT 2 where the outputs are fp32 GELU or PLAIN ones */
        if (split_on()) {
            kernel = kernel_for<E, EPI, WPT, 2>(tail2, uw);
            smem = smem_bytes<E, EPI, 2>();
        }
    }
    SWIN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const unsigned grid = (unsigned)(tiles < sms ? tiles : sms);
    swin_launch(kernel, dim3(grid), dim3(threads<WPT>()), smem, st, map_in, map_w, map_out, map_res, ep, N, KT, tiles,
                tiles_n, ln, (int)stsm_on());
    SWIN_LAUNCH_CHECK("gemm_tma_kernel", st);
    return SWIN_OK;
}

/* SWIN_GEMM_TMA: 0 off (gemm_wgmma.cu's cp.async kernel), 1 one warpgroup a team, else two */
int tma_mode(void) {
    static int mode = -1;
    if (mode < 0) {
        const char *v = getenv("SWIN_GEMM_TMA");
        mode = !v || !*v ? 2 : !strcmp(v, "0") ? 0 : !strcmp(v, "1") ? 1 : 2;
    }
    return mode;
}

template <class E, int EPI>
swin_status launch(const char *op, void *out, const void *in, const void *w, Epi ep, int M, int K, int N,
                   cudaStream_t st, const void *residual = NULL, const LnFold &ln = LnFold()) {
    return tma_mode() == 1 ? launch_wpt<E, EPI, 1>(op, out, in, w, residual, ep, M, K, N, st, ln)
                           : launch_wpt<E, EPI, 2>(op, out, in, w, residual, ep, M, K, N, st, ln);
}

/* the fewest output tiles that take this kernel: SWIN_GEMM_TMA_MIN_TILES, else (-1) two a CTA */
int min_tiles(void) {
    static int n = -2;
    if (n == -2) {
        const char *v = getenv("SWIN_GEMM_TMA_MIN_TILES");
        n = v && *v ? atoi(v) : -1;
    }
    return n;
}

} // namespace

extern "C" int swin_gemm_tma_wanted(int M, int N) {
    if (tma_mode() == 0 || !swin_tma_available()) return 0;
    int least = min_tiles(), sms = 0;
    if (least < 0) {
        if (swin_device_sms(&sms) != SWIN_OK) return 0;
        least = TEAMS * sms;
    }
    return (long long)((M + BM - 1) / BM) * ((N + BN - 1) / BN) >= least;
}

extern "C" swin_status swin_gemm_tma_cuda(void *out, const void *in, const void *w, const void *bias, int M, int K,
                                          int N, swin_act act, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_gemm_tma_cuda";
    const Epi ep = {bias, NULL, 1.0f};
    const bool gelu = act == SWIN_ACT_GELU;
    if (dt == SWIN_DT_F16)
        return gelu ? launch<F16, GELU>(op, out, in, w, ep, M, K, N, st) : launch<F16, PLAIN>(op, out, in, w, ep, M, K, N, st);
    if (dt == SWIN_DT_BF16)
        return gelu ? launch<BF16, GELU>(op, out, in, w, ep, M, K, N, st)
                    : launch<BF16, PLAIN>(op, out, in, w, ep, M, K, N, st);
    if (dt == SWIN_DT_F32)
        return gelu ? launch<TF32, GELU>(op, out, in, w, ep, M, K, N, st)
                    : launch<TF32, PLAIN>(op, out, in, w, ep, M, K, N, st);
    return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: fp16, bf16 or fp32 (TF32) only (dtype %d)", op, (int)dt);
}

extern "C" swin_status swin_gemm_tma_fp8_out_cuda(uint8_t *out_q, const uint8_t *in_q, const uint8_t *w_q,
                                                 const float *col_scale, const void *bias, float out_inv, int gelu,
                                                 int M, int K, int N, cudaStream_t st) {
    static const char op[] = "swin_gemm_tma_fp8_out_cuda";
    const Epi ep = {bias, col_scale, out_inv};
    if (!gelu) return launch<E4M3, FP8_OUT>(op, out_q, in_q, w_q, ep, M, K, N, st);
    return fp8_gelu_h2_ok(out_inv) ? launch<E4M3, FP8_GELU_H2>(op, out_q, in_q, w_q, ep, M, K, N, st)
                                   : launch<E4M3, FP8_GELU>(op, out_q, in_q, w_q, ep, M, K, N, st);
}

extern "C" swin_status swin_gemm_tma_linear_cuda(void *out, const void *in, const void *w, const void *bias,
                                                 const void *residual, int M, int K, int N, swin_dtype dt,
                                                 cudaStream_t st) {
    static const char op[] = "swin_gemm_tma_linear_cuda";
    if (!residual) return swin_gemm_tma_cuda(out, in, w, bias, M, K, N, SWIN_ACT_NONE, dt, st);
    if (((uintptr_t)residual & 15u) || residual == in || residual == w)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: the residual (%p) must be 16-byte aligned and not an input", op,
                         residual);
    const Epi ep = {bias, NULL, 1.0f};
    if (dt == SWIN_DT_F16) return launch<F16, RESID>(op, out, in, w, ep, M, K, N, st, residual);
    if (dt == SWIN_DT_BF16) return launch<BF16, RESID>(op, out, in, w, ep, M, K, N, st, residual);
    if (dt == SWIN_DT_F32) return launch<TF32, RESID>(op, out, in, w, ep, M, K, N, st, residual);
    return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: fp16, bf16 or fp32 (TF32) only (dtype %d)", op, (int)dt);
}

extern "C" swin_status swin_gemm_tma_linear_fp8_cuda(void *out, const uint8_t *in_q, const uint8_t *w_q,
                                                     const float *col_scale, const void *bias, const void *residual,
                                                     int M, int K, int N, cudaStream_t st) {
    static const char op[] = "swin_gemm_tma_linear_fp8_cuda";
    const Epi ep = {bias, col_scale, 1.0f};
    if (!residual) return launch<E4M3, PLAIN>(op, out, in_q, w_q, ep, M, K, N, st);
    return launch<E4M3, RESID>(op, out, in_q, w_q, ep, M, K, N, st, residual);
}

extern "C" swin_status swin_gemm_tma_post_ln_cuda(void *x, const void *in, const void *w, const void *bias,
                                                   const float *gamma, const float *beta, float eps, int M, int K,
                                                   int N, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_gemm_tma_post_ln_cuda";
    if (N > BN) return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: N %d: a row must fit one %d-column tile", op, N, BN);
    LnFold ln = LnFold();
    ln.gamma = gamma, ln.beta = beta, ln.eps = eps;
    const Epi ep = {bias, NULL, 1.0f};
    if (dt == SWIN_DT_F16) return launch<F16, POST_LN>(op, x, in, w, ep, M, K, N, st, x, ln);
    if (dt == SWIN_DT_BF16) return launch<BF16, POST_LN>(op, x, in, w, ep, M, K, N, st, x, ln);
    return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: fp16 or bf16 only (dtype %d)", op, (int)dt);
}

extern "C" swin_status swin_gemm_tma_post_ln_fp8_cuda(void *x, const uint8_t *in_q, const uint8_t *w_q,
                                                       const float *col_scale, const void *bias, const float *gamma,
                                                       const float *beta, float eps, int M, int K, int N,
                                                       cudaStream_t st) {
    static const char op[] = "swin_gemm_tma_post_ln_fp8_cuda";
    if (N > BN) return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: N %d: a row must fit one %d-column tile", op, N, BN);
    LnFold ln = LnFold();
    ln.gamma = gamma, ln.beta = beta, ln.eps = eps;
    const Epi ep = {bias, col_scale, 1.0f};
    return launch<E4M3, POST_LN>(op, x, in_q, w_q, ep, M, K, N, st, x, ln);
}

extern "C" swin_status swin_gemm_tma_proj_scatter_cuda(void *x, float *part, const void *win, const void *w,
                                                       const void *bias, const swin_dims *d, swin_dtype dt,
                                                       cudaStream_t st) {
    static const char op[] = "swin_gemm_tma_proj_scatter_cuda";
    LnFold ln = LnFold();
    int rows = 0;
    SWIN_TRY(swin_win_geom(op, d, dt, &ln.g, &rows));
    ln.x = x, ln.part = reinterpret_cast<float2 *>(part), ln.M = rows, ln.T = d->B * d->res_h * d->res_w;
    const Epi ep = {bias, NULL, 1.0f};
    if (dt == SWIN_DT_F16) return launch<F16, SCATTER>(op, x, win, w, ep, rows, d->C, d->C, st, NULL, ln);
    if (dt == SWIN_DT_BF16) return launch<BF16, SCATTER>(op, x, win, w, ep, rows, d->C, d->C, st, NULL, ln);
    return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: fp16 or bf16 only (dtype %d)", op, (int)dt);
}

extern "C" swin_status swin_gemm_tma_ln_gelu_cuda(void *out, const void *x, const float *part, const void *w_fold,
                                                  const float *colsum, const float *b_fold, int T, int C, int H,
                                                  float eps, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_gemm_tma_ln_gelu_cuda";
    LnFold ln = LnFold();
    ln.part = reinterpret_cast<float2 *>(const_cast<float *>(part)), ln.M = ln.T = T;
    ln.parts = (C + BN - 1) / BN, ln.C = C, ln.inv_c = 1.0f / (float)C, ln.eps = eps;
    const Epi ep = {b_fold, colsum, 1.0f};
    if (dt == SWIN_DT_F16) return launch<F16, LN_GELU>(op, out, x, w_fold, ep, T, C, H, st, NULL, ln);
    if (dt == SWIN_DT_BF16) return launch<BF16, LN_GELU>(op, out, x, w_fold, ep, T, C, H, st, NULL, ln);
    return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: fp16 or bf16 only (dtype %d)", op, (int)dt);
}
