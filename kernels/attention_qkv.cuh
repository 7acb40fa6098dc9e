/* attention_qkv.cuh - the qkv projection and window attention in one kernel, for windows of 49 to
 * 64 tokens (7x7, 8x8) with head_dim 32 and C 96, 128, 192, 256, 384 or 512 (Swin-T/S's,
 * SwinV2-T/S's and Swin-B's first three stages), fp16/bf16, V1 and V2; included by attention.cu
 * (swin_window_attention_qkv_cuda). The engine uses it at C 96 and 128 always, wider only when
 * the grid is one wave (small batches: engine.c, qkv_attention, has the measurements).
 *
 *   out [B*nW, N, C] <- attention(x W_qkv^T + b_qkv), x [B*nW, N, C] the windows' rows
 *
 * Why: in the first stage the qkv GEMM writes 3C values a token that the attention reads back
 * right after, 6 of the 8 bytes a token-channel that the two kernels move through HBM (the qkv
 * GEMM reads x, 2 bytes, and writes q, k, v, 6; the attention reads those 6 and writes its output,
 * 2). Here q, k and v of a window are computed on chip and never stored.
 * How: attn_head_kernel's walk (attention_head.cuh): a CTA keeps head h and walks windows w
 * (blockIdx.x, + gridDim.x, ...), its relative-position bias in registers. Head h's 3 x 32 weight
 * rows (q, k, v) and biases go to shared memory once per CTA; per window:
 *   1. the window's N rows of x arrive in shared memory (cp.async, issued during the window
 *      before; rows N..63 zero-filled);
 *   2. each warp projects its 16 rows, [q k v] = x W_h^T in m16n8k16 MMAs (K = C; A fragments
 *      from x's rows, B from the weight rows, both by ldmatrix, as K in Q K^T): first k and v,
 *      + bias, rounded to the dtype as the GEMM would store them, into shared memory (rows >= N
 *      as zeros), then q, which stays in registers as the A fragments of Q K^T (an accumulator's
 *      layout is an A fragment's);
 *   3. barrier (x is free; K and V are visible), the next window's x is issued;
 *   4. (V2: the keys' 1 / |k|, a barrier) head_attend (attention_head.cuh): scores, softmax,
 *      P V, the output rows through tile_end (with its E4M3 copy for an FP8 proj).
 * The rounding is the unfused path's (fp32 accumulation of x W^T, + bias in fp32, one rounding),
 * the sums' order the MMA's: results agree with qkv GEMM + attn_head_kernel to the dtype's
 * precision, not bit for bit.
 * Shared memory: x [64][C + 8], W_h [96][C + 8], K and V [64][40], the key regions, 1 / |k|, the
 * biases, a warp's O tile, and for GATHER its row flags and norm1's gamma and beta (1,024 bytes at
 * C 96, also reserved by the kernels without it): 50,560 bytes at C 96 (4 CTAs an SM, as
 * attn_head_kernel), 61,056 at 128
 * (3); EPI adds attention_proj.cuh's ProjSmem (W_proj's 32 rows of the head, 7,552 bytes at C 96:
 * 3 CTAs an SM). Registers: 128 (ptxas spills 20 to 24 bytes: the cp.async destinations of issue_x,
 * reloaded once a window). The projection runs in two passes (k and v, then q) so that 32
 * accumulators, not 48, sit beside the 32 of the bias (in one pass ptxas spilled 52 bytes).
 * Measured on the H200 (2026-11-28, one build, `python3 tools/bench_ab.py --rounds 2 SWIN_ATTN_QKV=0
 * "" -- --precision fp16 --batch 1,64,256 -n 30 --breakdown`, best of two rounds): Swin-T fp16
 * batch 256 8.921 -> 8.785 ms (28,696 -> 29,141 img/s), batch 64 2.375 -> 2.317, batch 1 0.420 ->
 * 0.415; bf16 batch 256 8.612 -> 8.500; SwinV2-T fp16 batch 256 11.924 -> 11.628. --breakdown at
 * batch 256: the first stage's qkv GEMMs 0.469 ms and its attention 0.525 (both blocks) against
 * qkv+attention 0.912. tests/test_gpu_attention_qkv's timing, the first stage of Swin-T at batch 256
 * (one block): 0.397 ms against 0.477 for cuBLASLt's qkv GEMM plus attn_head_kernel (1.20x;
 * SwinV2-T 0.479 against 0.628, 1.31x; batch 64 0.106 against 0.128).
 * Where the time goes: attn_head_kernel alone takes about 0.26 ms of that block, so the projection
 * costs 0.14 (the test) to 0.19 ms (the breakdown) on top, not the 0.05 its 44 GFLOP would take at
 * the tensor cores' peak: each warp reads all of W_h from shared memory for its 16 rows (18 KB a
 * window at C 96; the projection's ldmatrix traffic is 4 warps x 48 x 512 bytes, 98 KB a window,
 * against 32 KB for the attention's own), and the window's phases (copy, project, attend) are
 * separated by CTA barriers. Not yet: warps of 32 rows x 48 columns (W read twice a window, not
 * 4 times), two windows a projection, wgmma with W read once a warpgroup.
 * Wider C (192 to 512: 2 CTAs an SM up to 256, 1 above; 255 registers a thread, 0 to 32 bytes of
 * spills) costs more than it saves once CTAs walk several windows: every head projects all C
 * input channels of its window, at 1 or 2 CTAs an SM (H200, Swin-T fp16 stage 3 at batch 256:
 * 0.371 ms against 0.146 for the qkv GEMM + attention), but at batch 1 (one window a CTA) the
 * one kernel takes 0.0106 ms against 0.0169.
 * GATHER (swin_ln_window_attention_qkv_cuda): x is the block's input image and each window row is
 * gathered from it (token_src of win_geom.cuh: the shift, padding tokens as zero rows), in V1
 * normalised with norm1 in shared memory (norm_rows, the ln kernel's lane configuration: bit for
 * bit that kernel's output), so the partition pass before the kernel is gone. A kernel of its own
 * so that the others stay the same code. Measured (H200, 2026-11-28, bench_ab, fp16, best of 2 or 3
 * rounds, without -> with): SwinV2-T batch 1 0.428 -> 0.425 ms, 8 0.686 -> 0.678, 64 2.963 -> 2.930,
 * 256 11.380 -> 11.371 (bf16 batch 1 0.432 -> 0.421, 8 0.681 -> 0.685, 256 11.079 -> 11.078): the
 * engine's default for V2. V1 (with the norm) is slower: Swin-T batch 1 0.413 -> 0.437, 8 0.653 ->
 * 0.663, 256 8.447 -> 8.717; at batch 256 the first stage's kernel takes 1.330 ms against 0.866
 * plus about 0.19 for its partition pass, as every head's CTA normalises its window's rows again
 * (3 to 24 times the norm's work) on the window's critical path: opt-in (SWIN_ATTN_GATHER=1).
 * (The first version, one kernel with both paths and token_src per 16-byte chunk, was slower for
 * V2 too: 4,096 SASS instructions at C 96 against 2,624 now and 2,456 without the gather.)
 * Test: tests/test_gpu_attention_qkv.c.
 */
#ifndef SWIN_ATTENTION_QKV_CUH
#define SWIN_ATTENTION_QKV_CUH

#include "attention_head.cuh"
#include "attention_proj.cuh"   /* EPI: proj, reverse, residual and LayerNorm after the attention */
#include "row.cuh"        /* row_normalize, pack_load / pack_store: the LayerNorm of gathered rows */
#include "win_geom.cuh"   /* token_src: the rows gathered from the image */

namespace swin_attn {

/* the attention's arguments (MmaArgs::qkv unused) and the projection's inputs */
struct QkvArgs : MmaArgs {
    const void *x;   /* [nwin * N, C]: the windows' rows, the qkv GEMM's input; with gather, the
                        image [B, H, W, C] they come from */
    const void *w;   /* [3C, C]: the qkv weight (PyTorch's [out, in]) */
    const void *b;   /* [3C] or NULL */
    int gather;      /* x is the image: each window row is gathered from it (wg: the shift, the
                        partition, padding tokens as zero rows) */
    win_geom wg;
    const float *ln_w, *ln_b;   /* gather: the LayerNorm of the gathered rows (V1's norm1), or NULL */
    float eps;
    ProjArgs p;                 /* EPI: the epilogue's (attention_proj.cuh; wg then maps rows to tokens) */
};

/* C: the model widths the kernel is built for (Swin-T/S and V2's stages 1 to 3, Swin-B's 1 to 3;
 * stage 4's x and W_h would not fit in shared memory) */
#define SWIN_QKV_WIDTHS(X) X(96) X(128) X(192) X(256) X(384) X(512)   /* one X(C) a width */
#define SWIN_QKV_IS(c) || C == c
__host__ __device__ constexpr bool qkv_width(int C) { return false SWIN_QKV_WIDTHS(SWIN_QKV_IS); }
#undef SWIN_QKV_IS
/* CTAs an SM its shared memory allows (QkvSmem<C>::kTotal: 49.4 KiB at C 96 ... 182.6 KiB at 512),
 * which sets the registers a thread may use (__launch_bounds__) */
__host__ __device__ constexpr int qkv_min_ctas(int C) { return C <= 96 ? 4 : C <= 128 ? 3 : C <= 256 ? 2 : 1; }

/* The LayerNorm of gathered rows: per row of C values a group of qkv_ln_lpr(C) lanes, each with
 * qkv_ln_nv(C) packs of 8 values, the configuration swin_row_dispatch (row.cuh) gives the
 * ln1+shift+partition kernel for 16-bit rows of C, so that the statistics are summed in the same
 * order and the normalised rows are bit for bit that kernel's output. */
__host__ __device__ constexpr int qkv_ln_lpr(int C) {
    return C == 96 ? 4 : C == 128 ? 16 : C == 192 ? 8 : C == 384 ? 16 : 32;   /* 256, 512: 32 */
}
__host__ __device__ constexpr int qkv_ln_nv(int C) { return C / 8 / qkv_ln_lpr(C); }

/* shared memory, byte offsets; EPI adds the epilogue's (attention_proj.cuh: ProjSmem) */
template <int C, bool EPI = false>
struct QkvSmem {
    static constexpr int LDX = C + Tiles::kPad;                            // x and W rows, elements
    static constexpr int kX = 0;                                           // x [kMaxN][LDX]
    static constexpr int kW = kX + HeadTiles::kMaxN * LDX * 2;             // W_h [3 hd][LDX]
    static constexpr int kK = kW + 3 * HeadTiles::kHd * LDX * 2;           // K [kMaxN][HeadSmem::LD]
    static constexpr int kV = kK + HeadSmem::kMat;                         // V
    static constexpr int kReg = kV + HeadSmem::kMat;                       // key regions [kMaxN]
    static constexpr int kRk = kReg + HeadTiles::kMaxN * 4;                // V2: 1 / |k| [kMaxN]
    static constexpr int kBias = kRk + HeadTiles::kMaxN * 4;               // b_h [3 hd] fp32
    static constexpr int kStage = kBias + 3 * HeadTiles::kHd * 4;          // a warp's O tile
    static constexpr int kRowOk = kStage + HeadTiles::kWarps * Tiles::kRows * HeadSmem::LD * 2;   // gather: row is a token [kMaxN]
    static constexpr int kLn = kRowOk + HeadTiles::kMaxN * 4;             // gather, V1: norm1's gamma, beta [C] fp32
    static constexpr int kEpi = kLn + 2 * C * 4;                           // EPI: ProjSmem<C>'s regions
    static constexpr int kTotal = kEpi + (EPI ? ProjSmem<C>::kBytes : 0);
    static_assert(kLn % 16 == 0, "gamma and beta are read as float4");
};

/* acc [NJ n-tiles of 8] = a warp's 16 rows of x times W_h's rows 8 J0 .. 8 (J0 + NJ) - 1, fp32, in
 * m16n8k16 MMAs over K = C; xa, wb: the lane's ldmatrix addresses of the rows' first A and B
 * fragments (rows LDX elements apart) */
template <typename T, int C, int LDX, int J0, int NJ>
__device__ __forceinline__ void qkv_project(float (&acc)[NJ][4], const T *xa, const T *wb) {
#pragma unroll
    for (int j = 0; j < NJ; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < C / 16; kk++) {
        uint32_t af[4];
        ldsm_x4(af, xa + kk * 16);
#pragma unroll
        for (int gp = 0; gp < NJ / 2; gp++) {
            uint32_t bf[4];
            ldsm_x4(bf, wb + (J0 / 2 + gp) * 16 * LDX + kk * 16);
            mma16816<T>(acc[2 * gp], af, bf[0], bf[1]);
            mma16816<T>(acc[2 * gp + 1], af, bf[2], bf[3]);
        }
    }
}

/* GATHER: a.gather's kernel (x the image; V1 with a.ln_w: normalised here), a kernel of its own so
 * that the other's code stays as it was (the first version, one kernel with both paths, was 70%
 * more code). EPI: the attention's output stays on chip and attention_proj.cuh's epilogue runs
 * after it (launched as clusters of the window's heads; out unused) */
template <typename T, bool V2, int C, bool GATHER, bool EPI = false>
__global__ void __launch_bounds__(HeadTiles::kWarps * 32, qkv_min_ctas(C))
attn_qkv_kernel(QkvArgs a) {
    swin_pdl_begin();
    typedef QkvSmem<C, EPI> L;
    constexpr int HD = HeadTiles::kHd, LD = HeadSmem::LD, NT = HeadTiles::kMaxN / 8;   // NT: key tiles of 8
    constexpr int NQ = 3 * HD / 8;   // the projection's n-tiles of 8: q 0..3, k 4..7, v 8..11
    constexpr int LDX = L::LDX, CPR = C / 8, nthr = HeadTiles::kWarps * 32;   // CPR: 16-byte chunks a row
    static_assert(HeadTiles::kMaxN * CPR % nthr == 0, "x's chunks divide over the threads");
    extern __shared__ __align__(16) unsigned char smem[];
    const Geom &g = a.g;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tid = threadIdx.x, q4 = lane & 3, mi = lane >> 3;
    const int h = blockIdx.y;
    const HeadScale hs = head_scale<V2>(a.scale, h);
    T *xs = reinterpret_cast<T *>(smem + L::kX), *ws = reinterpret_cast<T *>(smem + L::kW);
    T *ks = reinterpret_cast<T *>(smem + L::kK), *vs = reinterpret_cast<T *>(smem + L::kV);
    int *reg = reinterpret_cast<int *>(smem + L::kReg);
    float *rk = reinterpret_cast<float *>(smem + L::kRk), *qb = reinterpret_cast<float *>(smem + L::kBias);
    T *os = reinterpret_cast<T *>(smem + L::kStage) + warp * Tiles::kRows * LD;
    const T *x = static_cast<const T *>(a.x);

    const int row0 = warp * Tiles::kRows + (lane >> 2);
    float bias[NT][4];
    head_bias<NT>(bias, g, a.bias_table, h, row0, q4, hs.bmul);

    int *rowok = reinterpret_cast<int *>(smem + L::kRowOk);

    float *lns = reinterpret_cast<float *>(smem + L::kLn);   /* gamma [C], beta [C] */

    /* window w's rows of x into xs (rows >= N zero-filled), one cp.async group. GATHER: row r is
     * the image's token token_src(w N + r), looked up once by each of the row's TPR threads, which
     * copy CPT consecutive chunks of it (padding tokens: zero rows, rowok 0, as the partition
     * kernel writes them); rowok is read after the wait at the top of the window's step, before
     * the next window is issued. */
    auto issue_x = [&](int w) {
        if constexpr (GATHER) {
            constexpr int TPR = nthr / HeadTiles::kMaxN, CPT = CPR / TPR;
            static_assert(nthr % HeadTiles::kMaxN == 0 && CPR % TPR == 0, "a row's chunks divide over its threads");
            const int r = tid / TPR, c0 = (tid % TPR) * CPT;
            const long long t = r < g.N ? token_src(a.wg, w * g.N + r) : -1;
            if (tid % TPR == 0) rowok[r] = t >= 0;
            const T *src = x + (size_t)(t >= 0 ? t : 0) * C;
#pragma unroll
            for (int j = 0; j < CPT; j++) cp_async16(xs + r * LDX + (c0 + j) * 8, src + (c0 + j) * 8, t >= 0);
        } else {
            const T *src = x + (size_t)w * g.N * C;
#pragma unroll
            for (int j = 0; j < HeadTiles::kMaxN * CPR / nthr; j++) {
                const int i = tid + j * nthr, r = i / CPR, c = (i % CPR) * 8;
                const bool ok = r < g.N;
                cp_async16(xs + r * LDX + c, src + (size_t)(ok ? r : 0) * C + c, ok);
            }
        }
        cp_async_commit();
    };
    /* the LayerNorm of the warp's 16 rows of xs, in place (tokens only: padding rows stay zero),
     * rounded to T, with gamma and beta from shared memory (ln_affine's arithmetic); the
     * projection below reads only the warp's own rows */
    auto norm_rows = [&]() {
        constexpr int LPR = qkv_ln_lpr(C), NV = qkv_ln_nv(C), RPP = 32 / LPR;   /* RPP: rows a pass */
        static_assert(NV * LPR * 8 == C && Tiles::kRows % RPP == 0, "a row's packs divide over its lanes");
        const int gl = lane % LPR;
#pragma unroll 2
        for (int p = 0; p < Tiles::kRows / RPP; p++) {
            const int r = warp * Tiles::kRows + p * RPP + lane / LPR;
            T *row = xs + r * LDX;
            float v[NV][8];
#pragma unroll
            for (int i = 0; i < NV; i++) pack_load<T, 8>(v[i], row + (gl + LPR * i) * 8);
            row_normalize<8, NV, LPR>(v, C, gl, a.eps);   /* every lane: the shuffles */
            if (r < g.N && rowok[r])
#pragma unroll
                for (int i = 0; i < NV; i++) {
                    const int e = (gl + LPR * i) * 8;
#pragma unroll
                    for (int k = 0; k < 8; k += 4) {
                        const float4 wv = *reinterpret_cast<const float4 *>(lns + e + k);
                        const float4 bv = *reinterpret_cast<const float4 *>(lns + C + e + k);
                        v[i][k] = fmaf(v[i][k], wv.x, bv.x), v[i][k + 1] = fmaf(v[i][k + 1], wv.y, bv.y);
                        v[i][k + 2] = fmaf(v[i][k + 2], wv.z, bv.z), v[i][k + 3] = fmaf(v[i][k + 3], wv.w, bv.w);
                    }
                    pack_store<T, 8>(row + e, v[i]);
                }
        }
        __syncwarp();
    };
    int w = blockIdx.x;
    if (w >= a.nwin) return;
    {   /* head h's q, k and v weight rows (row n of W_h: row (n / hd) C + h hd + n % hd of W) and biases */
        const T *wsrc = static_cast<const T *>(a.w);
        for (int i = tid; i < 3 * HD * CPR; i += nthr) {
            const int n = i / CPR, c = (i % CPR) * 8;
            cp_async16(ws + n * LDX + c, wsrc + (size_t)((n / HD) * C + h * HD + n % HD) * C + c, true);
        }
        if (tid < 3 * HD)
            qb[tid] = a.b ? load_f(static_cast<const T *>(a.b), (size_t)(tid / HD) * C + h * HD + tid % HD) : 0.0f;
    }
    if constexpr (GATHER && !V2)   /* visible after the first window's barrier */
        if (a.ln_w)
            for (int i = tid; i < 2 * C; i += nthr) lns[i] = i < C ? a.ln_w[i] : a.ln_b[i - C];
    if constexpr (EPI) proj_prologue<T, C>(a.p, h, tid, nthr, smem + L::kEpi);   /* lands with the first rows */
    issue_x(w);   /* the weights land with the first window's rows */

    const T *xa = xs + (warp * Tiles::kRows + (lane & 7) + (mi & 1) * 8) * LDX + (mi >> 1) * 8;   // A: x rows
    const T *wb = ws + ((lane & 7) + (mi >> 1) * 8) * LDX + (mi & 1) * 8;                       // B: W_h rows
    /* n-tile j's accumulators + bias, rounded once: pr[hh] the pair of row row0 + 8 hh, columns
     * 8 j + 2 q4 (+ 1) */
    auto round_pair = [&](uint32_t(&pr)[2], const float(&c)[4], int j) {
        const float2 bj = *reinterpret_cast<const float2 *>(qb + 8 * j + 2 * q4);
        pr[0] = pack2<T>(c[0] + bj.x, c[1] + bj.y);
        pr[1] = pack2<T>(c[2] + bj.x, c[3] + bj.y);
    };
    for (; w < a.nwin; w += gridDim.x) {
        cp_async_wait_all();
        __syncthreads();   /* x of window w has landed; every warp is done with the window before */
        if constexpr (GATHER && !V2) {   /* V2 normalises after the attention (ln_w NULL) */
            if (a.ln_w) norm_rows();
        }
        int wy, wx;
        window_pos(g, w, &wy, &wx);
        const bool masked = window_masked(g, wy, wx);
        if (masked)
            for (int t = tid; t < HeadTiles::kMaxN; t += nthr) reg[t] = info_region(token_info(g, wy, wx, t));

        /* k and v of the warp's 16 rows (n-tiles 4..11), + bias, rounded, into smem rows (pad rows
         * zero, as the attention kernels keep them: P = 0 times V stays 0); then q (0..3) */
        {
            float acc[NQ - HD / 8][4];
            qkv_project<T, C, LDX, HD / 8, NQ - HD / 8>(acc, xa, wb);
#pragma unroll
            for (int j = HD / 8; j < NQ; j++) {
                uint32_t pr[2];
                round_pair(pr, acc[j - HD / 8], j);
                T *dst = (j < 2 * HD / 8 ? ks : vs) + (j % (HD / 8)) * 8 + 2 * q4;
#pragma unroll
                for (int hh = 0; hh < 2; hh++) {
                    const int row = row0 + 8 * hh;
                    *reinterpret_cast<uint32_t *>(dst + row * LD) = row < g.N ? pr[hh] : 0u;
                }
            }
        }
        /* q as Q K^T's A fragments: (row0, k 2 q4), (row0 + 8, k 2 q4), (row0, k 8 + 2 q4),
         * (row0 + 8, k 8 + 2 q4) of each 16 columns */
        uint32_t qf[HD / 16][4];
        float rq0 = 1.0f, rq1 = 1.0f;   /* V2: 1 / |q| of rows row0, row0 + 8 (of the rounded q) */
        {
            float acc[HD / 8][4];
            qkv_project<T, C, LDX, 0, HD / 8>(acc, xa, wb);
            uint32_t p[HD / 8][2];
#pragma unroll
            for (int j = 0; j < HD / 8; j++) round_pair(p[j], acc[j], j);
#pragma unroll
            for (int kk = 0; kk < HD / 16; kk++) {
                qf[kk][0] = p[2 * kk][0], qf[kk][1] = p[2 * kk][1];
                qf[kk][2] = p[2 * kk + 1][0], qf[kk][3] = p[2 * kk + 1][1];
            }
            if constexpr (V2) {
                float ss[2] = {0.0f, 0.0f};
#pragma unroll
                for (int j = 0; j < HD / 8; j++)
#pragma unroll
                    for (int hh = 0; hh < 2; hh++) {
                        const float2 f = unpack2<T>(p[j][hh]);
                        ss[hh] = fmaf(f.x, f.x, fmaf(f.y, f.y, ss[hh]));
                    }
#pragma unroll
                for (int hh = 0; hh < 2; hh++) {   /* a row's 32 values are a quad's */
                    ss[hh] += __shfl_xor_sync(0xffffffffu, ss[hh], 1);
                    ss[hh] += __shfl_xor_sync(0xffffffffu, ss[hh], 2);
                }
                rq0 = 1.0f / fmaxf(sqrtf(ss[0]), 1e-12f);
                rq1 = 1.0f / fmaxf(sqrtf(ss[1]), 1e-12f);
            }
        }
        __syncthreads();   /* every warp is done with xs; K, V and the key regions visible */
        if (w + (int)gridDim.x < a.nwin) issue_x(w + gridDim.x);
        if constexpr (V2) {   /* 1 / |k| of the window's keys (pad keys: zero rows, scored -inf) */
            if (tid < HeadTiles::kMaxN) rk[tid] = inv_norm_row<HD, T>(ks + tid * LD);
            __syncthreads();
        }
        if (warp < a.tiles) {
            T *out = reinterpret_cast<T *>(a.out) + (size_t)w * g.N * g.C + (size_t)h * HD;
            head_attend<T, V2, EPI>(qf, ks, vs, reg, rk, rq0, rq1, bias, masked, hs, os, out, a, warp, lane);
        }
        if constexpr (EPI)
            proj_epilogue<T, V2, C>(a.p, a.wg, g.N, a.eps, w, h, warp, lane, reinterpret_cast<const T *>(smem + L::kStage),
                                    smem + L::kEpi);
    }
    if constexpr (EPI) cluster_sync();   /* the others may still read this CTA's statistics */
}

} // namespace swin_attn

#endif
