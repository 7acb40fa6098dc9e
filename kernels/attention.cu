/* attention.cu - window attention of the Swin block (ops.h: swin_window_attention_cuda).
 *
 *   out [B*nW, N, C] <- softmax(scale * q.k (V2: cosine) + bias[rel] + shift mask) v
 *
 * Variants (swin_attn_impl), all tested by tests/test_gpu_attention.c:
 *   SWIN_ATTN_IMPL_FUSED    one kernel reading the QKV GEMM output directly; fp16/bf16 on tensor
 *                           cores (attention_mma.cuh; windows of 49 to 64 tokens with head_dim 32,
 *                           Swin-T/S/B's and SwinV2's 8x8, on attention_head.cuh's kernel unless
 *                           SWIN_ATTN_HEAD=0 (=1: V1's only)),
 *                           fp32 data on the CUDA cores in true fp32 (attention_simt.cuh);
 *   SWIN_ATTN_IMPL_TF32     fp32 data on TF32 tensor cores (attention_tf32.cuh) where its kernels
 *                           take the geometry (windows of <= 144 tokens, head_dim 16/32/48/64;
 *                           windows of 49 to 64 tokens with head_dim 32 on attention_tf32_head.cuh's
 *                           kernel unless SWIN_ATTN_TF32_HEAD=0),
 *                           else the true-fp32 fused kernel; SWIN_ATTN_TF32=0 in the environment
 *                           takes the latter always (to time the two in one build);
 *   SWIN_ATTN_IMPL_X3       fp32 data with fp32 accuracy on TF32 tensor cores ("3xTF32", each
 *                           operand split into two TF32 values: the same kernels' X3 form, where
 *                           they take the geometry, else the true-fp32 fused kernel): precision
 *                           fp32's default (src/cuda/engine.c; SWIN_FP32_ATTN=simt keeps FUSED);
 *   SWIN_ATTN_IMPL_UNFUSED  cuBLAS batched GEMMs around a materialised score tensor and a separate
 *                           softmax kernel (attention_unfused.cuh): the baseline and cross-check.
 * With the qkv projection (swin_window_attention_qkv_cuda): the qkv GEMM and the attention in one
 * kernel (attention_qkv.cuh) for head_dim 32, windows of 49 to 64 tokens and the widths of
 * SWIN_QKV_WIDTHS (C 96 to 512; fp16/bf16); tested by tests/test_gpu_attention_qkv.c.
 * E4M3 copy (swin_q8_dst, for an FP8 proj): the fp16/bf16 fused kernels write it as they store the
 * output (tile_end, attention_mma.cuh), so proj needs no quantising pass; the other paths quantise
 * their output after the attention.
 * The tile shapes live in attention_common.cuh (struct Tiles). This file holds the launchers and
 * the op entries that validate arguments.
 * head_dim: any of 1..256. The fused kernels are instantiated for the padded tile widths of
 * head_width() and run a head on the smallest width >= head_dim with zero pad columns; the
 * accesses of a head's rows are as wide as head_dim's alignment allows (access_bytes). The unfused
 * path packs q/k/v into aligned blocks first when a head's rows are not 16-byte aligned.
 * Test: build tests/test_gpu_attention (ctest -L gpu), or run it with the source dir as argv[1];
 * SWIN_TEST_QUICK=1 runs a small subset (for compute-sanitizer).
 */

#include <limits.h>

#include "attention_common.cuh"
#include "attention_head.cuh"
#include "attention_mma.cuh"
#include "attention_qkv.cuh"
#include "attention_simt.cuh"
#include "attention_tf32.cuh"
#include "attention_tf32_head.cuh"
#include "attention_unfused.cuh"
#include "row.cuh"   /* swin_check_q8 */

using namespace swin_attn;

static Geom make_geom(const swin_dims *d) {
    Geom g;
    g.N = d->win_h * d->win_w;
    g.npad = (g.N + 15) / 16 * 16;
    g.Wh = d->win_h;
    g.Ww = d->win_w;
    g.hp = d->hp;
    g.wp = d->wp;
    g.sh = d->shift_h;
    g.sw = d->shift_w;
    g.nwx = d->wp / d->win_w;
    g.nwy = d->hp / d->win_h;
    g.nw = g.nwx * g.nwy;
    g.nb = (2 * d->win_h - 1) * (2 * d->win_w - 1);
    g.heads = d->heads;
    g.C = d->C;
    g.hd = d->head_dim;
    g.div_heads.set(g.heads);
    g.div_nw.set(g.nw);
    g.div_nwx.set(g.nwx);
    g.div_ww.set(g.Ww);
    return g;
}

/* Padded tile width the fused kernels run a head of hd channels on (0: none). Widths are
 * multiples of 16; each costs a set of instantiations (3 tensor-core kernels per 16-bit dtype and
 * one fp32 kernel), so the list is short; the most padding is 95 channels (hd 161 on width 256). */
static int head_width(int hd) {
    static const int widths[] = {16, 32, 48, 64, 96, 128, 160, Tiles::kMaxHeadDim};
    for (int w : widths)
        if (hd <= w) return w;
    return 0;
}

static swin_status device_limits(int *sms, int *smem_optin) {
    int dev = 0;
    SWIN_TRY(swin_device_sms(sms));
    SWIN_CUDA_TRY(cudaGetDevice(&dev));
    SWIN_CUDA_TRY(cudaDeviceGetAttribute(smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return SWIN_OK;
}

// ---- launchers

/* SWIN_ATTN_EXACT=1 in the environment: the exact-width kernels where head_dim is one (read once) */
static bool exact_on() {
    static const bool on = swin_env_on("SWIN_ATTN_EXACT", 0);
    return on;
}

/* The 4-warp resident kernels of head_dim <= 32 take the keys 32 at a time (half the S registers:
 * 79 instead of 94, 6 CTAs per SM instead of 5; H200, Swin-T fp16: attention 3% faster at batch
 * 256, end to end 0.5% to 2.6%); SWIN_ATTN_KB64=1 in the environment restores blocks of 64 (read once) */
static bool kb32_on() {
    static const bool on = swin_env_on("SWIN_ATTN_KB64", 0) == 0;
    return on;
}

/* Windows of more than 4 query tiles whose count is not a multiple of 8 (Swin-B 384's 12x12: 9
 * tiles) leave warps of the 8-warp kernel idle: warp 0 takes tiles 0 and 8 while 7 warps wait, 9 of
 * 16 warp-rounds busy. SWIN_ATTN_FILL in the environment (read once) picks what such windows run on:
 *   0  the 8-warp kernel (as before);
 *   1  the 4-warp kernel, the tiles split over ceil(tiles / 4) CTAs (9 tiles: 3 CTAs of 3, 9 of 12
 *      warps busy, K and V staged once per CTA);
 *   3  windows of exactly Tiles::kWarpsWindow tiles: one CTA of that many warps, a warp per tile,
 *      K and V staged once; other counts as 1 (the default until 2026-11-29);
 *   2  (default) as 3 where the (window, head) pairs fill the GPU (Tiles::kMinCtasPerSm a
 *      multiprocessor), else as 1: fewer pairs (Swin-B 384 at batch 1, whose stages have 256, 128,
 *      64 and 32 pairs; its last stage at batch 8) get three times the CTAs. Measured (H200,
 *      2026-11-29, tools/bench_ab.py, two rounds, Swin-B 384 fp16 -n 40, 3 / 2): batch 1 1.116 /
 *      1.117 against 1.105 / 1.115 ms, batch 8 2.693 / 2.723 against 2.722 / 2.697 (its other
 *      stages have 512 pairs or more, as every stage at batch 64 and 256: unchanged); a random
 *      full-size Swin-B 384 in fp16 against timm: 8.051e-4 either way.
 * Measured on the H200 (2026-11-26, SWIN_ATTN_FILL=M build/swin bench --arch
 * swin_base_patch4_window12_384 --precision fp16 --batch 1,8,64,256 -n 20, modes 0 / 1 / default):
 * attention ops at batch 256 24.37 / 19.56 / 15.89 ms; end to end batch 1 1.257 / 1.217 / 1.242
 * ms, batch 8 3.353 / 3.172 / 3.041 ms, batch 64 2,954 / 3,069 / 3,254 img/s, batch 256 3,042 /
 * 3,089 / 3,288 img/s (bf16 batch 256: 3,130 / 3,189 / 3,376).
 * Tried and not kept (2026-11-28): for these windows with head_dim 32, attention_head.cuh's design
 * at 144 keys: a CTA per head (one an SM, 190,080 bytes of shared memory) holding the head's whole
 * bias' (bias times its multiplier, -inf at pad keys) in shared memory in the mma accumulator
 * layout (82,944 bytes, built once per CTA), walking the head's windows in 3 groups of 9 warps (a
 * warp per query tile, a named barrier and a buffer per group), the bias' loaded into the score
 * accumulators with one LDS.128 per 8 keys, online softmax over blocks of 48 keys. Its key loop
 * took 9.25 instructions a score against mode 2's 17.6 (cuobjdump, fp16 V1), and it was correct
 * (the attention test; a random full-size Swin-B 384 against timm in fp16 and bf16, swin verify
 * PASS), but not faster: H200, Swin-B 384 (tools/bench_ab.py, two rounds, --breakdown), its
 * attention ops over all blocks 0.405 / 0.737 / 4.059 ms at batch 1 / 8 / 64 against mode 2's
 * 0.261 / 0.613 / 4.292; end to end 0.88x, 0.94x, 1.006x, and 1.014x at batch 256 (bf16 0.95x at
 * 8, 1.010x at 64). Halving the instructions did not pay: these windows are bound by latency
 * (copies and barriers a window), not by instruction issue. */
static int fill_mode() {
    static const int mode = [] {
        const char *v = getenv("SWIN_ATTN_FILL");
        return v && v[0] >= '0' && v[0] <= '3' && !v[1] ? v[0] - '0' : 2;
    }();
    return mode;
}

template <int HD, typename T, int NW, bool STREAM>
static swin_status launch_mma_kernel(const MmaArgs &a, size_t grid, int smem, cudaStream_t st) {
    auto kern = attn_mma_kernel<HD, T, NW, STREAM, false>;
    if constexpr (exact_width(HD))
        if (a.g.hd == HD && exact_on()) kern = attn_mma_kernel<HD, T, NW, STREAM, true>;   // a.vb == 16: HD % 8 == 0
    if constexpr (HD <= 32 && (NW == Tiles::kWarpsSmall || NW == Tiles::kWarpsWindow) && !STREAM)
        if (kb32_on()) {
            kern = attn_mma_kernel<HD, T, NW, STREAM, false, 32>;
            if constexpr (exact_width(HD))
                if (a.g.hd == HD && exact_on()) kern = attn_mma_kernel<HD, T, NW, STREAM, true, 32>;
        }
    if (smem > 48 * 1024) SWIN_CUDA_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    swin_launch(kern, (unsigned)grid, NW * 32, smem, st, a);
    SWIN_LAUNCH_CHECK(STREAM ? "attn_mma_kernel<stream>" : "attn_mma_kernel<resident>", st);
    return SWIN_OK;
}

/* small windows: as many persistent CTAs as fit on the device, at most one per (window, head) */
template <int HD, typename T>
static swin_status launch_mma_pipe(const MmaArgs &a, int sms, cudaStream_t st) {
    auto kern = attn_mma_pipe_kernel<HD, T>;
    const int smem = PipeSmem(HD, a.g.npad, a.g.nb).total, threads = Tiles::kWarpsSmall * 32;
    if (smem > 48 * 1024) SWIN_CUDA_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0;
    SWIN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, threads, smem));
    if (per_sm < 1) per_sm = 1;
    const size_t items = (size_t)a.nwin * a.g.heads, cap = (size_t)per_sm * sms;
    const size_t grid = items < cap ? items : cap;
    swin_launch(kern, (unsigned)grid, threads, smem, st, a);
    SWIN_LAUNCH_CHECK("attn_mma_pipe_kernel", st);
    return SWIN_OK;
}

/* Which windows attn_head_kernel takes, from SWIN_ATTN_HEAD in the environment (read once): 0 none
 * (the (window, head) kernel of attention_mma.cuh runs them), 1 V1's only, 2 V1's and V2's (the
 * default). V2 was opt-in at first: tools/gpu_check.sh's random full-size SwinV2-T in bf16 agreed
 * with timm on the top-1 of 3 of its 4 images (relative error 7.0e-3, the (window, head) kernel
 * 8.6e-3 and 4/4), on inputs whose top-1 margins were 0.008, 0.003, 0.001 and 0.014 of max|logit|
 * (near-ties, inside bf16's error). With references on inputs of clear margins
 * (make_reference.py --pick), gpu_check passed with V2 here (H200, 2026-11-27: 205 of 205
 * verifies; SwinV2-T fp16 9.4e-4, bf16 7.3e-3, tf32 9.5e-4, top-1 4/4 each; ctest -L gpu 47 of
 * 47; racecheck and memcheck of test_gpu_attention 0 errors), and SwinV2-T fp16 went from 12.089
 * to 11.813 ms at batch 256 (21,176 -> 21,672 img/s; attention ops 1.868 -> 1.549 ms) and from
 * 3.250 to 3.176 ms at batch 64, SWIN_ATTN_HEAD=1 against 2 in one run.
 * Tried: __launch_bounds__ for 5 CTAs an SM instead of 4 (96 registers; ptxas spills 8 bytes in
 * V1, 28 in V2): slower, Swin-T fp16 batch 256 attention ops 1.198 / 1.196 -> 1.232 / 1.238 ms,
 * SwinV2-T 1.577 / 1.572 -> 1.666 / 1.640 (same run, two each). */
static int head_mode() {
    static const int mode = swin_env_is("SWIN_ATTN_HEAD", "0") ? 0 : swin_env_is("SWIN_ATTN_HEAD", "1") ? 1 : 2;
    return mode;
}

/* attn_head_kernel's geometry: head_dim 32 (its tile width, rows 16-byte aligned), 49 to 64 tokens */
static bool head_takes(const Geom &g, int v2) {
    return head_mode() > (v2 ? 1 : 0) && g.hd == HeadTiles::kHd && g.npad == HeadTiles::kMaxN;
}

/* a kernel that walks a head's windows (attn_head_kernel, attn_tf32_head_kernel): a grid of (CTAs
 * per head) x heads, as many CTAs as fit on the device at once, at most one per window and head.
 * per_sm: the caller's cache of the CTAs an SM (0: asked here, once per kernel and size). */
template <typename Args>
static swin_status walk_per_sm(void (*kern)(Args), int smem, int &per_sm) {
    if (smem > 48 * 1024) SWIN_CUDA_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    if (per_sm == 0) {
        int n = 0;
        SWIN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kern, HeadTiles::kWarps * 32, smem));
        per_sm = n < 1 ? 1 : n;
    }
    return SWIN_OK;
}

/* CTAs per head of a walking kernel: as many as are resident at once (per_sm an SM), rounded
 * down, at least one. Rounded up, as before, heads that do not divide the device's resident CTAs
 * got up to heads - 1 CTAs more than fit; those ran as a second wave once the first ones had
 * walked all their windows, so the kernel took up to twice as long: attn_head_kernel (4 CTAs an SM
 * on an H200) with 32 heads (Swin-B at 224's last stage: 17 x 32 = 544 CTAs for 528 places).
 * Measured on a kernel of one CTA an SM (2026-11-28, H200, Swin-B 384 fp16, an attention kernel
 * for 12x12 windows tried and not kept, described above at fill_mode; stages 2 to 4 have 8, 16 and 32 heads:
 * 136, 144 and 160 CTAs rounded up): its ops over all blocks went from 0.973 to 0.737 ms at batch
 * 8 and the forward from 18.60 to 17.54 ms at batch 64 once rounded down. */
static long grid_per_head(int per_sm, int sms, int heads) {
    const long x = (long)per_sm * sms / heads;
    return x < 1 ? 1 : x;
}

/* SWIN_ATTN_CLUSTER=1 in the environment (read once): the walking kernels launched as clusters of
 * a walker's heads (up to 8; they do not use the cluster), to measure what a cluster launch costs
 * by itself (attention_proj.cuh's header) */
static bool cluster_on() {
    static const bool on = swin_env_on("SWIN_ATTN_CLUSTER", 0);
    return on;
}

template <typename Args>
static swin_status launch_walk(void (*kern)(Args), const Args &a, int smem, int &per_sm, int sms, const char *name,
                               cudaStream_t st) {
    const int threads = HeadTiles::kWarps * 32;
    SWIN_TRY(walk_per_sm(kern, smem, per_sm));
    if (a.g.heads > 65535)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention: %d heads exceed the grid limit", a.g.heads);
    long x = grid_per_head(per_sm, sms, a.g.heads);
    if (x > a.nwin) x = a.nwin;
    const unsigned cl = cluster_on() && a.g.heads <= 8 ? (unsigned)a.g.heads : 1u;
    swin_launch_cluster(kern, dim3((unsigned)x, (unsigned)a.g.heads), threads, smem, dim3(1, cl, 1), st, a);
    SWIN_LAUNCH_CHECK(name, st);
    return SWIN_OK;
}

template <typename T>
static swin_status launch_head(const MmaArgs &a, int sms, cudaStream_t st) {
    static int per_sm_v[2] = {0, 0};   /* per T and version */
    return launch_walk(a.v2 ? attn_head_kernel<T, true> : attn_head_kernel<T, false>, a, HeadSmem::kTotal,
                       per_sm_v[a.v2 ? 1 : 0], sms, "attn_head_kernel", st);
}

/* fp16/bf16: choose warps, resident or streamed K/V, and the query-tile split. HD: padded width. */
template <int HD, typename T>
static swin_status launch_mma(void *out, const void *qkv, const float *bias_table, const float *scale,
                              const Geom &g, int nwin, int v2, const swin_q8_dst &q8, cudaStream_t st) {
    int sms = 0, optin = 0;
    SWIN_TRY(device_limits(&sms, &optin));
    MmaArgs a;
    a.set(out, qkv, bias_table, scale, g, v2);
    a.q8 = q8;
    a.vb = access_bytes(g.hd, (int)sizeof(T));
    a.tiles = g.npad / Tiles::kRows;
    a.nwin = nwin;
    if constexpr (HD == HeadTiles::kHd)
        if (head_takes(g, v2)) return launch_head<T>(a, sms, st);
    int nwarps = a.tiles <= Tiles::kWarpsSmall ? Tiles::kWarpsSmall : Tiles::kWarpsLarge;
    const size_t pairs = (size_t)nwin * g.heads;
    /* streamed when K+V of the window are large, or when the resident layout does not fit the device */
    const bool stream = (size_t)2 * g.npad * (HD + Tiles::kPad) * sizeof(T) > (size_t)Tiles::kResidentKvBytes ||
                        MmaSmem(HD, g.npad, g.npad, g.nb, nwarps).total > optin;
    if (stream) {
        nwarps = Tiles::kWarpsLarge;   // the streamed kernel has 8 warps (warps past the window's tiles idle)
        a.kv_rows = Tiles::kStreamKeys;   // fewer keys per chunk where the device has less shared memory
        while (a.kv_rows > Tiles::kRows && MmaSmem(HD, a.kv_rows, g.npad, g.nb, nwarps).total > optin) a.kv_rows /= 2;
        a.tiles_per_cta = nwarps;
        a.groups = (a.tiles + nwarps - 1) / nwarps;
    } else {
        a.kv_rows = g.npad;
        /* few (window, head) pairs: split the query tiles so that the machine fills up */
        size_t want = (size_t)Tiles::kMinCtasPerSm * sms;
        int groups = 1, max_groups = (a.tiles + nwarps - 1) / nwarps;
        if (pairs < want) groups = (int)((want + pairs - 1) / pairs);
        if (groups > max_groups) groups = max_groups;
        const int fill = fill_mode();
        if (fill && nwarps == Tiles::kWarpsLarge && a.tiles % Tiles::kWarpsLarge) {
            if ((fill == 3 || (fill == 2 && pairs >= want)) && window_warps(HD) && a.tiles == Tiles::kWarpsWindow &&
                MmaSmem(HD, g.npad, g.npad, g.nb, Tiles::kWarpsWindow).total <= optin) {
                nwarps = Tiles::kWarpsWindow;
                groups = 1;
            } else if (MmaSmem(HD, g.npad, g.npad, g.nb, Tiles::kWarpsSmall).total <= optin) {
                nwarps = Tiles::kWarpsSmall;
                groups = (a.tiles + Tiles::kWarpsSmall - 1) / Tiles::kWarpsSmall;
            }
        }
        a.tiles_per_cta = (a.tiles + groups - 1) / groups;
        a.groups = (a.tiles + a.tiles_per_cta - 1) / a.tiles_per_cta;
    }
    a.div_groups.set(a.groups);
    const MmaSmem L(HD, a.kv_rows, g.npad, g.nb, nwarps);
    if (L.total > optin)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention: window %dx%d with head_dim %d (tile width %d) needs "
                         "%d bytes of shared memory, the device allows %d", g.Wh, g.Ww, g.hd, HD, L.total, optin);
    const size_t grid = pairs * a.groups;
    if (grid > INT_MAX)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention: %zu CTAs exceed the grid limit", grid);
    /* the 4-warp kernels are resident-only: a window that streams runs on 8 warps */
    if constexpr (SWIN_ATTN_PIPELINE && HD <= 64)
        if (nwarps == Tiles::kWarpsSmall && a.tiles <= nwarps && !stream) return launch_mma_pipe<HD, T>(a, sms, st);
    if (nwarps == Tiles::kWarpsSmall)
        return launch_mma_kernel<HD, T, Tiles::kWarpsSmall, false>(a, grid, L.total, st);
    if constexpr (window_warps(HD))
        if (nwarps == Tiles::kWarpsWindow) return launch_mma_kernel<HD, T, Tiles::kWarpsWindow, false>(a, grid, L.total, st);
    return stream ? launch_mma_kernel<HD, T, Tiles::kWarpsLarge, true>(a, grid, L.total, st)
                  : launch_mma_kernel<HD, T, Tiles::kWarpsLarge, false>(a, grid, L.total, st);
}

/* fp32 data: SIMT kernel, 64 query rows per CTA. HD: padded width. */
template <int HD>
static swin_status launch_f32(float *out, const float *qkv, const float *bias_table, const float *scale,
                              const Geom &g, int nwin, int v2, cudaStream_t st) {
    int sms = 0, optin = 0;
    SWIN_TRY(device_limits(&sms, &optin));
    F32Args a;
    a.set(out, qkv, bias_table, scale, g, v2);
    a.vb = access_bytes(g.hd, (int)sizeof(float));
    const int rows = Tiles::kF32Warps * Tiles::kF32RowsPerWarp;
    a.groups = (g.N + rows - 1) / rows;
    const F32Smem L(HD, g.N, g.nb);
    if (L.total > optin)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention (fp32): window %dx%d with head_dim %d (tile width "
                         "%d) needs %d bytes of shared memory, the device allows %d", g.Wh, g.Ww, g.hd, HD, L.total,
                         optin);
    const size_t grid = (size_t)nwin * g.heads * a.groups;
    if (grid > INT_MAX)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention: %zu CTAs exceed the grid limit", grid);
    auto kern = attn_f32_kernel<HD, false>;
    if constexpr (exact_width(HD))
        if (g.hd == HD && exact_on()) kern = attn_f32_kernel<HD, true>;   // a.vb == 16: HD % 4 == 0
    if (L.total > 48 * 1024)
        SWIN_CUDA_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, L.total));
    swin_launch(kern, (unsigned)grid, Tiles::kF32Warps * 32, L.total, st, a);
    SWIN_LAUNCH_CHECK("attn_f32_kernel", st);
    return SWIN_OK;
}

/* one case per width of head_width() */
#define SWIN_ATTN_WIDTHS(X) X(16) X(32) X(48) X(64) X(96) X(128) X(160) X(256)

/* q8: the E4M3 copy of out, which the 16-bit kernels write as they store out (q8.q NULL: none); the
 * fp32 kernel has none (the entry quantises out after it) */
template <typename T>
static swin_status launch_fused(void *out, const void *qkv, const float *bias_table, const float *scale,
                                const Geom &g, int nwin, int v2, const swin_q8_dst &q8, cudaStream_t st) {
#define SWIN_ATTN_CASE(w) case w: return launch_mma<w, T>(out, qkv, bias_table, scale, g, nwin, v2, q8, st);
    switch (head_width(g.hd)) { SWIN_ATTN_WIDTHS(SWIN_ATTN_CASE) }
#undef SWIN_ATTN_CASE
    return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention: head_dim %d", g.hd);
}
template <>
swin_status launch_fused<float>(void *out, const void *qkv, const float *bias_table, const float *scale,
                                const Geom &g, int nwin, int v2, const swin_q8_dst &, cudaStream_t st) {
    float *o = (float *)out;
    const float *x = (const float *)qkv;
#define SWIN_ATTN_CASE(w) case w: return launch_f32<w>(o, x, bias_table, scale, g, nwin, v2, st);
    switch (head_width(g.hd)) { SWIN_ATTN_WIDTHS(SWIN_ATTN_CASE) }
#undef SWIN_ATTN_CASE
    return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention: head_dim %d", g.hd);
}

/* SWIN_ATTN_TF32=0 in the environment: SWIN_ATTN_IMPL_TF32 runs the true-fp32 kernel (read once) */
static bool tf32_on() {
    static const bool on = swin_env_on("SWIN_ATTN_TF32", 1);
    return on;
}

/* windows of 65 to 144 tokens on TF32 tensor cores (attn_tf32_win_kernel); SWIN_ATTN_TF32_WIN=0 in
 * the environment runs them on the true-fp32 kernel as before (read once) */
static bool tf32_win_on() {
    static const bool on = swin_env_on("SWIN_ATTN_TF32_WIN", 1);
    return on;
}

/* SWIN_ATTN_TF32_HEAD=0 in the environment: precision tf32's windows of 49 to 64 tokens at head_dim
 * 32 run on attn_tf32_kernel instead of attn_tf32_head_kernel (read once) */
static bool tf32_head_on() {
    static const bool on = swin_env_on("SWIN_ATTN_TF32_HEAD", 1);
    return on;
}

static swin_status launch_tf32_head(const Tf32HeadArgs &a, int sms, cudaStream_t st) {
    static int per_sm_v[2] = {0, 0};   /* per version */
    return launch_walk(a.v2 ? attn_tf32_head_kernel<true> : attn_tf32_head_kernel<false>, a, Tf32HeadSmem::kTotal,
                       per_sm_v[a.v2 ? 1 : 0], sms, "attn_tf32_head_kernel", st);
}

/* the TF32 kernel of head_dim hd (one of tf32_width) for small windows or 12x12 ones; X3: its
 * 3xTF32 form */
template <int HD>
static void (*tf32_kernel(bool win, bool x3))(AttnIO<float>) {
    if (x3) return win ? attn_tf32_win_kernel<HD, true> : attn_tf32_kernel<HD, true>;
    return win ? attn_tf32_win_kernel<HD, false> : attn_tf32_kernel<HD, false>;
}

/* fp32 data on TF32 tensor cores where attn_tf32_kernel (windows of <= 64 tokens) or
 * attn_tf32_win_kernel (65 to 144) takes the geometry, else the true-fp32 kernel. x3: their 3xTF32
 * forms (SWIN_ATTN_IMPL_X3, fp32 accuracy), which the environment switches of TF32 do not touch.
 * Measured on the H200 (2026-11-27, one binary and run, `SWIN_FP32_ATTN=M build/swin bench
 * --precision fp32 -n 10`, M = default (x3) / simt, median ms; the attention ops alone in brackets):
 *   Swin-T     batch 1     1.001 (0.103)  /  1.035 (0.136)
 *              batch 8     2.572 (0.189)  /  2.768 (0.393)
 *              batch 64   14.250 (1.093)  / 15.990 (2.782)
 *              batch 256  52.613 (4.102)  / 59.307 (10.772)   4,866 against 4,317 img/s
 *   SwinV2-T   batch 256  68.267 (4.852)  / 75.994 (12.423)   (-n 5)
 *   Swin-B 384 batch 64  122.759 (16.604) / 143.341 (37.085)  (-n 3)
 * test_gpu_attention's timings (Swin-T stage 1 at batch 64): tf32 0.131 ms, x3 0.220, the SIMT
 * kernel 0.568. Errors: test_gpu_attention's inputs that are not exact in TF32, at most 4.35e-6 of
 * max|ref| for x3 and for the SIMT kernel alike (TF32 3.2e-3); `swin verify --precision fp32` on
 * a full-size random Swin-T 5.7e-7 (SIMT 3.6e-7); every fixture at most 1.1e-6 and 1.9e-6 in two
 * runs (tools/gpu_check.sh's; the tuned GEMM algorithms may differ between runs). */
static swin_status launch_tf32(float *out, const float *qkv, const float *bias_table, const float *scale,
                               const Geom &g, int nwin, int v2, bool x3, cudaStream_t st) {
    const bool win = g.N > Tf32Tiles::kKeys && g.N <= Tf32WinTiles::kKeys && (x3 || tf32_win_on());
    if ((g.N > Tf32Tiles::kKeys && !win) || !tf32_width(g.hd) || !(x3 || tf32_on()))
        return launch_fused<float>(out, qkv, bias_table, scale, g, nwin, v2, swin_q8_dst{NULL, 0.0f, 1}, st);
    int sms = 0, optin = 0;
    SWIN_TRY(device_limits(&sms, &optin));
    if (!x3 && tf32_head_on() && g.hd == HeadTiles::kHd && g.npad == HeadTiles::kMaxN &&
        Tf32HeadSmem::kTotal <= optin) {
        Tf32HeadArgs h;
        h.set(out, qkv, bias_table, scale, g, v2);
        h.vb = 16;
        h.nwin = nwin;
        return launch_tf32_head(h, sms, st);
    }
    AttnIO<float> a;
    a.set(out, qkv, bias_table, scale, g, v2);
    a.vb = 16;
    const Tf32Smem L(g.hd, g.nb, win ? Tf32WinTiles::kKeys : Tf32Tiles::kKeys);
    if (L.total > optin)   /* the fp32 kernel streams K/V through less shared memory */
        return launch_fused<float>(out, qkv, bias_table, scale, g, nwin, v2, swin_q8_dst{NULL, 0.0f, 1}, st);
    auto kern = tf32_kernel<32>(win, x3);
    switch (g.hd) {
    case 16: kern = tf32_kernel<16>(win, x3); break;
    case 48: kern = tf32_kernel<48>(win, x3); break;
    case 64: kern = tf32_kernel<64>(win, x3); break;
    default: break;
    }
    if (L.total > 48 * 1024)
        SWIN_CUDA_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, L.total));
    const int threads = (win ? Tf32WinTiles::kWarps : Tf32Tiles::kWarps) * 32;
    swin_launch(kern, (unsigned)((size_t)nwin * g.heads), threads, L.total, st, a);
    SWIN_LAUNCH_CHECK(x3 ? (win ? "attn_tf32_win_kernel<x3>" : "attn_tf32_kernel<x3>")
                         : (win ? "attn_tf32_win_kernel" : "attn_tf32_kernel"), st);
    return SWIN_OK;
}

// ---- op entries

/* Geometry checks shared by both entries; SWIN_OK when the op can run it. */
static swin_status check_dims(const swin_dims *d, swin_dtype dt) {
    if (!d) return swin_fail(SWIN_ERR_ARGUMENT, "window attention: dims is NULL");
    if (dt != SWIN_DT_F32 && dt != SWIN_DT_F16 && dt != SWIN_DT_BF16)
        return swin_fail(SWIN_ERR_ARGUMENT, "window attention: unknown dtype %d", (int)dt);
    if (d->B < 1 || d->res_h < 1 || d->res_w < 1 || d->win_h < 1 || d->win_w < 1 || d->heads < 1 ||
        d->head_dim < 1)
        return swin_fail(SWIN_ERR_ARGUMENT, "window attention: B %d, grid %dx%d, window %dx%d, heads %d, head_dim "
                         "%d must all be >= 1", d->B, d->res_h, d->res_w, d->win_h, d->win_w, d->heads, d->head_dim);
    if (d->C != d->heads * d->head_dim)
        return swin_fail(SWIN_ERR_ARGUMENT, "window attention: C %d != heads %d x head_dim %d", d->C, d->heads,
                         d->head_dim);
    /* windows tile the padded grid (the attention reads only its windows' rows) */
    if (d->hp < 1 || d->wp < 1 || d->hp % d->win_h != 0 || d->wp % d->win_w != 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "window attention: padded grid %dx%d is not a multiple of window %dx%d",
                         d->hp, d->wp, d->win_h, d->win_w);
    if (d->shift_h < 0 || d->shift_h >= d->win_h || d->shift_w < 0 || d->shift_w >= d->win_w)
        return swin_fail(SWIN_ERR_ARGUMENT, "window attention: shift %dx%d outside [0, window %dx%d)", d->shift_h,
                         d->shift_w, d->win_h, d->win_w);
    if (d->version != 1 && d->version != 2)
        return swin_fail(SWIN_ERR_ARGUMENT, "window attention: version %d (expected 1 or 2)", d->version);
    if (d->head_dim > Tiles::kMaxHeadDim)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention: head_dim %d (supported: 1 to %d)", d->head_dim,
                         Tiles::kMaxHeadDim);
    if (d->win_h > 32 || d->win_w > 32)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention: window %dx%d (at most 32 a side, N <= 1024 tokens)",
                         d->win_h, d->win_w);
    size_t nwin = (size_t)d->B * (d->hp / d->win_h) * (d->wp / d->win_w);
    if (nwin * d->heads > INT_MAX / 64)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention: %zu windows x %d heads is too many", nwin,
                         d->heads);
    return SWIN_OK;
}

extern "C" size_t swin_window_attention_workspace(const swin_dims *d, swin_dtype dt, swin_attn_impl impl) {
    if (impl != SWIN_ATTN_IMPL_UNFUSED || check_dims(d, dt) != SWIN_OK) return 0;
    Geom g = make_geom(d);
    UnfusedWs ws(NULL, g, d->B * g.nw, dt);
    return ws.bytes;
}

extern "C" swin_status swin_window_attention_cuda(void *out, const void *qkv, const float *bias_table,
                                                  const float *scale, const swin_dims *d, swin_dtype dt,
                                                  swin_attn_impl impl, const swin_q8_dst *q8, void *workspace,
                                                  void *cublas, cudaStream_t st) {
    if (!out || !qkv || !bias_table || !scale)
        return swin_fail(SWIN_ERR_ARGUMENT, "window attention: NULL pointer (out %p, qkv %p, bias_table %p, "
                         "scale %p)", out, qkv, (const void *)bias_table, (const void *)scale);
    SWIN_TRY(check_dims(d, dt));
    if (((uintptr_t)out | (uintptr_t)qkv) % 16 != 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "window attention: qkv %p and out %p must be 16-byte aligned", qkv, out);
    swin_q8_dst q;
    SWIN_TRY(swin_check_q8("window attention", q8, &q));
    const Geom g = make_geom(d);
    const int nwin = d->B * g.nw, v2 = d->version == 2;
    swin_status s = SWIN_OK;
    if (impl == SWIN_ATTN_IMPL_FUSED) {
        SWIN_DISPATCH(dt, T, s = launch_fused<T>(out, qkv, bias_table, scale, g, nwin, v2, q, st));
    } else if (impl == SWIN_ATTN_IMPL_TF32 || impl == SWIN_ATTN_IMPL_X3) {
        const int x3 = impl == SWIN_ATTN_IMPL_X3;
        if (dt != SWIN_DT_F32)
            return swin_fail(SWIN_ERR_ARGUMENT, "window attention (%s): the data must be fp32 (dtype %d)",
                             x3 ? "3xTF32" : "tf32", (int)dt);
        s = launch_tf32((float *)out, (const float *)qkv, bias_table, scale, g, nwin, v2, x3, st);
    } else if (impl == SWIN_ATTN_IMPL_UNFUSED) {
        if (!cublas || !workspace)
            return swin_fail(SWIN_ERR_ARGUMENT, "window attention (unfused): needs a cuBLAS handle (%p) and a "
                             "workspace of %zu bytes (%p)", cublas, swin_window_attention_workspace(d, dt, impl),
                             workspace);
        SWIN_DISPATCH(dt, T, s = launch_unfused<T>((T *)out, (const T *)qkv, bias_table, scale, g, nwin, v2, dt,
                                                    workspace, (cublasHandle_t)cublas, st));
    } else {
        return swin_fail(SWIN_ERR_ARGUMENT, "window attention: unknown implementation %d", (int)impl);
    }
    SWIN_TRY(s);
    /* the kernels that do not write the E4M3 copy themselves (fp32 data, unfused): a quantising pass
     * over out (written in 16 bits whatever keep16 says) */
    if (q.q && !(impl == SWIN_ATTN_IMPL_FUSED && dt != SWIN_DT_F32))
        return swin_quantize_fp8_cuda(q.q, out, (size_t)nwin * g.N * g.C, q.inv, dt, st);
    return SWIN_OK;
}

// ---- q, k, v in E4M3 (FP8's qkv GEMM writing them so): attn_head_kernel's Q8 variant

/* the current GPU has FP8 MMAs (mma_e4m3_16832c: sm_89 on) */
static int fp8_mma_device(void) {
    static int known[64];
    return swin_device_once(known, [](int dev) {
        int major = 0, minor = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
            return 0;
        return (int)(major * 10 + minor >= 89);
    });
}

extern "C" int swin_window_attention_e4m3_supports(const swin_dims *d, swin_dtype dt) {
    if (dt != SWIN_DT_F16 || !d || d->version != 1 || check_dims(d, dt) != SWIN_OK || d->C % 16)
        return 0;   /* 16-byte E4M3 rows */
    return head_takes(make_geom(d), 0) && fp8_mma_device();
}

extern "C" swin_status swin_window_attention_e4m3_cuda(void *out, const uint8_t *qkv_q, const float *deq,
                                                       const float *bias_table, const float *scale,
                                                       const swin_dims *d, const swin_q8_dst *q8, cudaStream_t st) {
    static const char op[] = "window attention (E4M3 q, k, v)";
    if (!out || !qkv_q || !deq || !bias_table || !scale || !d)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: NULL pointer (out %p, qkv %p, deq %p, bias_table %p, scale %p)", op,
                         out, (const void *)qkv_q, (const void *)deq, (const void *)bias_table, (const void *)scale);
    if (!swin_window_attention_e4m3_supports(d, SWIN_DT_F16))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: needs V1, head_dim 32, windows of 49 to 64 tokens, C a multiple "
                         "of 16, fp16 out and a GPU of compute capability 8.9 or later (V%d, head_dim %d, window %dx%d, "
                         "C %d)", op, d->version, d->C / (d->heads > 0 ? d->heads : 1), d->win_h, d->win_w, d->C);
    if (((uintptr_t)out | (uintptr_t)qkv_q) % 16 != 0 || (uintptr_t)deq % 8 != 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: qkv %p and out %p must be 16-byte aligned, deq %p 8", op,
                         (const void *)qkv_q, out, (const void *)deq);
    swin_q8_dst q;
    SWIN_TRY(swin_check_q8(op, q8, &q));
    int sms = 0, optin = 0;
    SWIN_TRY(device_limits(&sms, &optin));
    const Geom g = make_geom(d);
    MmaArgs a;
    a.set(out, qkv_q, bias_table, scale, g, 0);   /* V1 (supports, above) */
    a.q8 = q;
    a.vb = access_bytes(g.hd, 2);
    a.tiles = g.npad / Tiles::kRows;
    a.nwin = d->B * g.nw;
    a.deq = deq;
    static int per_sm = 0;
    return launch_walk(attn_head_kernel<__half, false, true>, a, HeadSmemQ8::kTotal, per_sm, sms,
                       "attn_head_kernel (E4M3 q, k, v)", st);
}

// ---- the qkv projection and the attention in one kernel (attention_qkv.cuh)

/* what attn_qkv_kernel is built for: head_dim 32, 49 to 64 tokens, C of qkv_width, 16-bit data */
static bool qkv_takes(const swin_dims *d, swin_dtype dt) {
    const int n = swin_dims_n(d);
    return (dt == SWIN_DT_F16 || dt == SWIN_DT_BF16) && d->head_dim == HeadTiles::kHd && n > 48 &&
           n <= HeadTiles::kMaxN && qkv_width(d->C) && d->C == d->heads * d->head_dim;
}

extern "C" int swin_window_attention_qkv_supports(const swin_dims *d, swin_dtype dt) {
    return d && qkv_takes(d, dt) && check_dims(d, dt) == SWIN_OK;
}

/* attn_qkv_kernel<T, v2, C, gather>, and its CTAs an SM (cached; 0 until walk_per_sm asks) */
template <typename T, int C>
static void (*qkv_kernel(bool v2, bool gather, int **per_sm))(QkvArgs) {
    static int per_sm_v[2][2] = {{0, 0}, {0, 0}};   /* per version and gather */
    *per_sm = &per_sm_v[v2 ? 1 : 0][gather ? 1 : 0];
    if (gather) return v2 ? attn_qkv_kernel<T, true, C, true> : attn_qkv_kernel<T, false, C, true>;
    return v2 ? attn_qkv_kernel<T, true, C, false> : attn_qkv_kernel<T, false, C, false>;
}

template <typename T, int C>
static swin_status launch_qkv(const QkvArgs &a, cudaStream_t st) {
    int sms = 0, optin = 0, *per_sm = NULL;
    SWIN_TRY(device_limits(&sms, &optin));
    if (QkvSmem<C>::kTotal > optin)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention with the qkv projection: needs %d bytes of shared "
                         "memory, the device allows %d", QkvSmem<C>::kTotal, optin);
    void (*kern)(QkvArgs) = qkv_kernel<T, C>(a.v2, a.gather != 0, &per_sm);
    return launch_walk(kern, a, QkvSmem<C>::kTotal, *per_sm, sms, "attn_qkv_kernel", st);
}

/* whether the kernel's grid gives every (window, head) a CTA of its own, all resident at once */
template <typename T, int C>
static int qkv_one_wave(const swin_dims *d) {
    int sms = 0, optin = 0, *per_sm = NULL;
    if (device_limits(&sms, &optin) != SWIN_OK || QkvSmem<C>::kTotal > optin) return 0;
    void (*kern)(QkvArgs) = qkv_kernel<T, C>(d->version == 2, false, &per_sm);   /* the gather kernel: the same smem */
    if (walk_per_sm(kern, QkvSmem<C>::kTotal, *per_sm) != SWIN_OK) return 0;
    const long pairs = (long)d->B * make_geom(d).nw * d->heads;
    return pairs <= (long)*per_sm * sms;
}

extern "C" int swin_window_attention_qkv_one_wave(const swin_dims *d, swin_dtype dt) {
    if (!swin_window_attention_qkv_supports(d, dt)) return 0;
#define SWIN_QKV_CASE(c) \
    if (d->C == c) return dt == SWIN_DT_F16 ? qkv_one_wave<__half, c>(d) : qkv_one_wave<__nv_bfloat16, c>(d);
    SWIN_QKV_WIDTHS(SWIN_QKV_CASE)
#undef SWIN_QKV_CASE
    return 0;
}

// ---- and with the block's proj, reverse, residual and LayerNorm after it (attention_proj.cuh)

/* the EPI kernels: V1 reading the partitioned rows, V2 gathering them (the engine's default paths) */
template <typename T, int C>
static void (*qkv_epi_kernel(bool v2))(QkvArgs) {
    return v2 ? attn_qkv_kernel<T, true, C, true, true> : attn_qkv_kernel<T, false, C, false, true>;
}

/* clusters of `heads` CTAs of the EPI kernel resident at once on the current GPU (0: none fit, or
 * the GPU has no clusters); cached per kernel and cluster size */
template <typename T, int C>
static int qkv_epi_clusters(bool v2, int heads) {
    static int known[2][17];   /* clusters + 1; 0: not asked yet */
    if (heads < 1 || heads > 16) return 0;
    int &k = known[v2 ? 1 : 0][heads];
    if (k) return k - 1;
    int dev = 0, cl = 0, n = 0;
    void (*kern)(QkvArgs) = qkv_epi_kernel<T, C>(v2);
    if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&cl, cudaDevAttrClusterLaunch, dev) == cudaSuccess &&
        cl && cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, QkvSmem<C, true>::kTotal) == cudaSuccess &&
        (heads <= 8 || cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess)) {
        cudaLaunchAttribute at;
        at.id = cudaLaunchAttributeClusterDimension;
        at.val.clusterDim.x = 1, at.val.clusterDim.y = (unsigned)heads, at.val.clusterDim.z = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(1, (unsigned)heads);
        cfg.blockDim = dim3(HeadTiles::kWarps * 32);
        cfg.dynamicSmemBytes = QkvSmem<C, true>::kTotal;
        cfg.attrs = &at;
        cfg.numAttrs = 1;
        if (cudaOccupancyMaxActiveClusters(&n, kern, &cfg) != cudaSuccess) n = 0;
    }
    (void)cudaGetLastError();   /* a refusal above is an answer (0), not an error for the next launch */
    k = n + 1;
    return n;
}

/* qkv_epi_clusters for d's width and dtype (0 where the kernel does not take d) */
static int qkv_epi_resident(const swin_dims *d, swin_dtype dt) {
    if (!swin_window_attention_qkv_supports(d, dt)) return 0;
#define SWIN_QKV_CASE(c)                                                                                       \
    if (d->C == c)                                                                                             \
        return dt == SWIN_DT_F16 ? qkv_epi_clusters<__half, c>(d->version == 2, d->heads)                      \
                                 : qkv_epi_clusters<__nv_bfloat16, c>(d->version == 2, d->heads);
    SWIN_QKV_WIDTHS(SWIN_QKV_CASE)
#undef SWIN_QKV_CASE
    return 0;
}

extern "C" int swin_window_attention_proj_supports(const swin_dims *d, swin_dtype dt) {
    return qkv_epi_resident(d, dt) > 0;
}

extern "C" int swin_window_attention_proj_one_wave(const swin_dims *d, swin_dtype dt) {
    const int n = qkv_epi_resident(d, dt);
    return n > 0 && (long)d->B * make_geom(d).nw <= n;
}

/* one wave of clusters, each walking its windows (blockIdx.x, + gridDim.x, ...) */
template <typename T, int C>
static swin_status launch_qkv_epi(const QkvArgs &a, cudaStream_t st) {
    const int heads = a.g.heads;
    long x = qkv_epi_clusters<T, C>(a.v2 != 0, heads);
    if (x < 1)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "window attention with proj: a cluster of %d CTAs (the window's heads, "
                         "%d bytes of shared memory each) cannot run on this GPU (clusters need compute capability "
                         "9.0; up to 8 CTAs, 16 where the GPU allows)", heads, QkvSmem<C, true>::kTotal);
    if (x > a.nwin) x = a.nwin;
    swin_launch_cluster(qkv_epi_kernel<T, C>(a.v2 != 0), dim3((unsigned)x, (unsigned)heads), HeadTiles::kWarps * 32,
                        QkvSmem<C, true>::kTotal, dim3(1, (unsigned)heads, 1), st, a);
    SWIN_LAUNCH_CHECK("attn_qkv_kernel<epi>", st);
    return SWIN_OK;
}

/* the epilogue's buffers: 16-byte aligned, ln_out (V1) apart from the image and both apart from the
 * windows' rows (other clusters still read those) */
static swin_status check_epi(const char *op, const swin_attn_epilogue *p, const void *xw, const swin_dims *d,
                             swin_dtype dt) {
    const int v1 = d->version == 1;
    if (!p->x || !p->w || (v1 && !p->ln_out))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: NULL pointer (x %p, w %p, ln_out %p)", op, p->x, p->w, p->ln_out);
    SWIN_TRY(swin_check_ln(op, p->ln_w, p->ln_b, 0));
    if (((uintptr_t)p->x | (uintptr_t)p->w | (uintptr_t)(v1 ? p->ln_out : NULL) | (uintptr_t)p->ln_w |
         (uintptr_t)p->ln_b) % 16 != 0 || (uintptr_t)p->b % 2 != 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: x %p, w %p, ln_out %p, ln_w %p and ln_b %p must be 16-byte aligned, "
                         "b %p 2-byte", op, p->x, p->w, p->ln_out, (const void *)p->ln_w, (const void *)p->ln_b, p->b);
    if (v1 != (xw != NULL))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: %s (V1 reads the windows' rows, V2 gathers them from x)", op,
                         v1 ? "V1 without the windows' rows" : "V2 with the windows' rows");
    const size_t img = (size_t)d->B * d->res_h * d->res_w * d->C * swin_dtype_size(dt);
    const size_t win = (size_t)d->B * swin_dims_nw(d) * swin_dims_n(d) * d->C * swin_dtype_size(dt);
    const char *xi = (const char *)p->x, *lo = (const char *)p->ln_out, *xr = (const char *)xw;
    if ((v1 && lo < xi + img && xi < lo + img) || (xr && ((xr < xi + img && xi < xr + win) ||
                                                           (v1 && xr < lo + img && lo < xr + win))))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: x %p, ln_out %p and the windows' rows %p overlap", op, p->x, p->ln_out,
                         xw);
    return SWIN_OK;   /* whether the cluster fits: launch_qkv_epi */
}

/* the entries: x the windows' rows, or (gather) the image they are gathered from, normalised with
 * ln_w / ln_b when given; epi: the epilogue (out unused, x the rows or, gathering, NULL: p->x) */
static swin_status qkv_run(const char *op, void *out, const void *x, int gather, const float *ln_w, const float *ln_b,
                           const void *w, const void *b, const float *bias_table, const float *scale,
                           const swin_dims *d, swin_dtype dt, const swin_q8_dst *q8, const swin_attn_epilogue *epi,
                           cudaStream_t st) {
    if ((!out && !epi) || !x || !w || !bias_table || !scale)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: NULL pointer (out %p, x %p, w %p, bias_table %p, scale %p)", op, out,
                         x, w, (const void *)bias_table, (const void *)scale);
    SWIN_TRY(check_dims(d, dt));
    if (!qkv_takes(d, dt))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: dtype %d, C %d, head_dim %d, window %dx%d (supported: fp16 / bf16, "
                         "head_dim %d, C 96, 128, 192, 256, 384 or 512, windows of 49 to %d tokens)", op, (int)dt,
                         d->C, d->head_dim, d->win_h, d->win_w, HeadTiles::kHd, HeadTiles::kMaxN);
    if (((uintptr_t)out | (uintptr_t)x | (uintptr_t)w) % 16 != 0 || (uintptr_t)b % 2 != 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: out %p, x %p and w %p must be 16-byte aligned, b %p 2-byte", op, out,
                         x, w, b);
    QkvArgs a;
    const Geom g = make_geom(d);
    const int nwin = d->B * g.nw;
    size_t x_rows = (size_t)nwin * g.N;
    if (gather || epi) {
        int rows;
        SWIN_TRY(swin_win_geom(op, d, dt, &a.wg, &rows));
    }
    if (epi) SWIN_TRY(check_epi(op, epi, gather ? NULL : x, d, dt));
    if (gather) {
        SWIN_TRY(swin_check_ln(op, ln_w, ln_b, 1));
        if (ln_w && d->version == 2)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: a LayerNorm before a V2 block's attention (V2 normalises after it)",
                             op);
        if (ln_w && ((uintptr_t)ln_w | (uintptr_t)ln_b) % 16 != 0)
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: ln_w %p and ln_b %p must be 16-byte aligned", op,
                             (const void *)ln_w, (const void *)ln_b);
        x_rows = (size_t)d->B * d->res_h * d->res_w;
    }
    const size_t out_bytes = (size_t)nwin * g.N * g.C * swin_dtype_size(dt), x_bytes = x_rows * g.C * swin_dtype_size(dt);
    const char *o = (const char *)out, *xi = (const char *)x;
    if (!epi && o < xi + x_bytes && xi < o + out_bytes)   /* other heads' CTAs still read a window's rows */
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: out %p overlaps x %p", op, out, x);
    swin_q8_dst q;
    SWIN_TRY(swin_check_q8(op, q8, &q));
    a.set(out, NULL, bias_table, scale, g, d->version == 2);
    a.q8 = q;
    a.vb = 16;
    a.tiles = g.npad / Tiles::kRows;
    a.nwin = nwin;
    a.x = x, a.w = w, a.b = b;
    a.gather = gather;
    a.ln_w = gather ? ln_w : NULL, a.ln_b = gather ? ln_b : NULL;
    a.eps = d->eps;
    if (epi) {
        a.p = *epi;
#define SWIN_QKV_CASE(c)                                                                                       \
    if (d->C == c) return dt == SWIN_DT_F16 ? launch_qkv_epi<__half, c>(a, st) : launch_qkv_epi<__nv_bfloat16, c>(a, st);
        SWIN_QKV_WIDTHS(SWIN_QKV_CASE)
#undef SWIN_QKV_CASE
    }
#define SWIN_QKV_CASE(c) \
    if (d->C == c) return dt == SWIN_DT_F16 ? launch_qkv<__half, c>(a, st) : launch_qkv<__nv_bfloat16, c>(a, st);
    SWIN_QKV_WIDTHS(SWIN_QKV_CASE)
#undef SWIN_QKV_CASE
    return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: C %d", op, d->C);
}

extern "C" swin_status swin_window_attention_qkv_cuda(void *out, const void *x, const void *w, const void *b,
                                                      const float *bias_table, const float *scale,
                                                      const swin_dims *d, swin_dtype dt, const swin_q8_dst *q8,
                                                      cudaStream_t st) {
    return qkv_run("window attention with the qkv projection", out, x, 0, NULL, NULL, w, b, bias_table, scale, d, dt,
                   q8, NULL, st);
}

extern "C" swin_status swin_ln_window_attention_qkv_cuda(void *out, const void *x, const float *ln_w,
                                                         const float *ln_b, const void *w, const void *b,
                                                         const float *bias_table, const float *scale,
                                                         const swin_dims *d, swin_dtype dt, const swin_q8_dst *q8,
                                                         cudaStream_t st) {
    return qkv_run("window attention with the partition and the qkv projection", out, x, 1, ln_w, ln_b, w, b,
                   bias_table, scale, d, dt, q8, NULL, st);
}

extern "C" swin_status swin_window_attention_proj_cuda(const swin_attn_epilogue *p, const void *xw, const void *w,
                                                       const void *b, const float *bias_table, const float *scale,
                                                       const swin_dims *d, swin_dtype dt, cudaStream_t st) {
    const char *op = "window attention with proj";
    if (!p || !d) return swin_fail(SWIN_ERR_ARGUMENT, "%s: NULL %s", op, p ? "dims" : "epilogue");
    return qkv_run(op, NULL, xw ? xw : p->x, !xw, NULL, NULL, w, b, bias_table, scale, d, dt, NULL, p, st);
}
