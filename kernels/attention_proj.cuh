/* attention_proj.cuh - the rest of the block's attention half as the epilogue of attention_qkv.cuh's
 * kernel (its EPI variant): proj, the window reverse, the residual and the LayerNorm beside it,
 *
 *   V1: x[t] += proj(o)[r];            ln_out[t] = norm2(x[t])
 *   V2: x[t] += norm1(proj(o)[r])      (res-post-norm)
 *
 * for each window row r and its image token t (token_src; padding rows are dropped), o the
 * attention's output of the window, all heads. Included by attention_qkv.cuh.
 *
 * Why: after the attention the unfused block writes o, proj reads it and writes its output, and
 * the reverse pass reads that and x and writes x and norm2(x): 7 passes of [tokens, C] through
 * memory and two more kernels, where this writes x and norm2(x) and reads x (3 passes, and none
 * of the two launches, about 4 us each at batch 1).
 * How: each of a window's heads is a CTA (blockIdx.y), and the heads' CTAs of one walker
 * (blockIdx.x) form a thread-block cluster (1, heads, 1), so that they walk the same windows in
 * step. Per window:
 *   1. each head's attention leaves its O rows [64][40] in its own shared memory (head_attend
 *      with STAGE: tile_stage's staging rows, the warps' tiles one after the other);
 *   2. cluster barrier; head h computes proj's output columns 32 h .. 32 h + 31 of the window's
 *      rows: its warp's 16 rows times W_proj's rows 32 h .. (m16n8k16 MMAs over K = C), the A
 *      fragments read from every head's O in the others' shared memory (distributed shared
 *      memory, 32-bit loads, 3 or 4 heads' at a time), the B fragments by ldmatrix from those 32
 *      rows of W_proj, copied into shared memory at the kernel's start (proj_prologue, with the
 *      columns' bias, gamma and beta) while the first window's rows arrive; + bias, rounded to T
 *      as the proj GEMM stores it (the residual's values for the rows were loaded before the
 *      barrier);
 *   3. V1: + the residual x[t], rounded to T as the reverse pass stores it; the LayerNorm's input
 *      is then that (V1) or proj's output (V2). Each head's mean and M2 (sum of squared deviations
 *      from its mean) of its 32 columns of each row into its shared memory;
 *   4. cluster barrier; each CTA combines every head's (mean, M2) of its rows (Chan et al.'s
 *      pairwise update for equal counts: mean = sum mean_h / H, M2 = sum M2_h + 32 sum (mean_h -
 *      mean)^2), and writes its 32 columns: V1 x[t] and (x[t] - mean) rstd gamma + beta to
 *      ln_out; V2 x[t] + (p - mean) rstd gamma + beta.
 * The two barriers also order the reuse: a head's O rows and statistics are read by the others
 * between its barriers of the same window, and rewritten only after the next window's first.
 * After the walk, one more barrier: no CTA may exit while another still reads its statistics.
 * Numerics: the unfused ops' roundings (proj's output, V1's sum, the LayerNorm's output, each to T
 * once); the sums' order differs (the MMA's over K; the statistics per head, then combined), so
 * results agree with proj GEMM + reverse pass to T's precision, not bit for bit.
 * Needs thread-block clusters (compute capability 9.0; heads <= 8, or up to 16 where the device
 * allows non-portable cluster sizes); the launcher (attention.cu) checks that the cluster fits.
 * Measured (H200, 2026-11-28, fp16): correct (the test; full-size Swin-T and SwinV2-T against timm
 * through tools/gpu_check.sh's SWIN_ATTN_PROJ=2 variant) but slower everywhere, so the engine
 * keeps it opt-in (SWIN_ATTN_PROJ=1: where each cluster takes one window, =2: everywhere).
 *   The first version (W_proj's B fragments from global memory, one head's O at a time) on every
 *   block it takes, against without (bench_ab, best of 2 rounds, ms): Swin-T batch 1 0.414 ->
 *   0.464, 8 0.652 -> 0.714, 64 2.320 -> 2.905, 256 8.456 -> 10.364; SwinV2-T batch 1 0.427 ->
 *   0.480, 256 11.156 -> 12.877.
 *   This version (W_proj in shared memory, O of 3 or 4 heads loaded at once, the residual before
 *   the barrier), without / =1 / =2: Swin-T batch 1 0.409 / 0.446 / 0.444, 2 0.450 / 0.459 /
 *   0.595, 8 0.650 / 0.647 (=1 fuses nothing there) / 0.714, 64 2.290 / 2.295 / 2.951; SwinV2-T
 *   fp16 batch 1 0.420 / 0.465, bf16 0.425 / 0.458. test_gpu_attention_proj's timing (stream
 *   launches, no graph: launch gaps included), this kernel against qkv+attention + proj GEMM +
 *   reverse pass, Swin-T V1: stage 1 batch 1 0.0139 / 0.0220 ms, stage 2 0.0152 / 0.0217, stage 3
 *   0.0210 / 0.0210; batch 8 0.048 / 0.032 (stage 1), 0.077 / 0.027 (stage 3); batch 256 1.131 /
 *   0.632. --breakdown at batch 1 (un-captured, an event per op; all blocks): 0.206 ms for this
 *   kernel's 10 blocks against 0.118 + 0.077 + 0.061 for the three ops there.
 *   Where it goes: at batch 1 the three kernels' launches overlap in the CUDA graph (with and
 *   without PDL: SWIN_PDL=0 0.435 against 0.455 ms), while here each CTA's critical path grows by
 *   the epilogue: two cluster barriers, the A fragments from the other CTAs, C / 16 x 4 MMAs a
 *   warp after the attention (96 at C 384) where proj's GEMM spreads them over more CTAs; about
 *   3.7 us a block. The cluster launch itself costs nothing measurable (SWIN_ATTN_CLUSTER=1, the
 *   plain kernels as clusters: 0.409 / 0.409 ms at batch 1). Where clusters walk several windows
 *   (batch 8 and up) each window waits at two cluster barriers and its three heads' phases no
 *   longer overlap: 1.5 to 2.8 times the three kernels.
 * Test: tests/test_gpu_attention_proj.c.
 */
#ifndef SWIN_ATTENTION_PROJ_CUH
#define SWIN_ATTENTION_PROJ_CUH

#include "attention_head.cuh"
#include "row.cuh"        /* round_as */
#include "win_geom.cuh"   /* token_src */

namespace swin_attn {

/* the epilogue's arguments (QkvArgs::p): the op's own (ops.h) */
typedef swin_attn_epilogue ProjArgs;

/* the cluster's barrier (arrive with release, wait with acquire: shared memory written before it
 * is visible to every CTA of the cluster after it) */
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
    __trap();   /* the launcher runs clusters on compute capability 9.0 and up only */
#endif
}

/* p (this CTA's shared memory, a generic address) in the shared memory of the cluster's CTA rank */
template <typename P>
__device__ __forceinline__ const P *cluster_map(const P *p, int rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint64_t r;
    asm("mapa.u64 %0, %1, %2;" : "=l"(r) : "l"(reinterpret_cast<uint64_t>(p)), "r"(rank));
    return reinterpret_cast<const P *>(r);
#else
    (void)rank;
    return p;
#endif
}

__device__ __forceinline__ uint32_t ld_u32(const void *p) { return *reinterpret_cast<const uint32_t *>(p); }

/* the epilogue's shared memory after the kernel's own, byte offsets: W_proj's rows 32 h .. 32 h + 31
 * (head h's output columns; all C inputs, rows LDX elements apart), proj's bias and the norm's
 * gamma and beta of those columns (fp32), the rows' (mean, M2) */
template <int C>
struct ProjSmem {
    static constexpr int LDX = C + Tiles::kPad;
    static constexpr int kW = 0;
    static constexpr int kVec = kW + HeadTiles::kHd * LDX * 2;    // bias, gamma, beta [3][32] fp32
    static constexpr int kSt = kVec + 3 * HeadTiles::kHd * 4;     // float2 [kMaxN]
    static constexpr int kBytes = kSt + HeadTiles::kMaxN * 8;
};

/* at the kernel's start: head h's rows of W_proj into shared memory (cp.async; the caller's first
 * wait covers them) and its columns of the bias, gamma and beta (visible after the first barrier) */
template <typename T, int C>
__device__ __forceinline__ void proj_prologue(const ProjArgs &p, int h, int tid, int nthr, unsigned char *es) {
    typedef ProjSmem<C> L;
    constexpr int HD = HeadTiles::kHd, CPR = C / 8;
    T *ws = reinterpret_cast<T *>(es + L::kW);
    const T *src = static_cast<const T *>(p.w) + (size_t)h * HD * C;
    for (int i = tid; i < HD * CPR; i += nthr) {
        const int r = i / CPR, c = (i % CPR) * 8;
        cp_async16(ws + r * L::LDX + c, src + (size_t)r * C + c, true);
    }
    float *vec = reinterpret_cast<float *>(es + L::kVec);
    for (int i = tid; i < 3 * HD; i += nthr) {
        const int c = h * HD + i % HD;
        vec[i] = i < HD ? (p.b ? load_f(static_cast<const T *>(p.b), c) : 0.0f) : i < 2 * HD ? p.ln_w[c] : p.ln_b[c];
    }
}

/* Window w's epilogue for head h (the cluster's rank h), after its attention staged the O rows at
 * os ([kMaxN][HeadSmem::LD], this CTA's); es: ProjSmem's regions. Every thread of the CTA calls it
 * (two cluster barriers). */
template <typename T, bool V2, int C>
__device__ __forceinline__ void proj_epilogue(const ProjArgs &p, const win_geom &wg, int N, float eps, int w, int h,
                                              int warp, int lane, const T *os, unsigned char *es) {
    typedef ProjSmem<C> L;
    constexpr int HD = HeadTiles::kHd, LD = HeadSmem::LD, H = C / HD, NJ = HD / 8;   // NJ: n-tiles of 8
    constexpr int G = H % 4 == 0 ? 4 : 3;   // heads whose O fragments are loaded together (H: 3, 4, 6, 8, 12, 16)
    static_assert(H % G == 0 && NJ == 4, "the heads divide into groups; 32 columns a head");
    const int g4 = lane >> 2, q4 = lane & 3, r0 = warp * Tiles::kRows + g4;   // rows r0, r0 + 8
    const float *vec = reinterpret_cast<const float *>(es + L::kVec);
    float2 *st = reinterpret_cast<float2 *>(es + L::kSt);
    T *x = static_cast<T *>(p.x);
    long long tk[2];      /* the image tokens of rows r0, r0 + 8 (-1: none) */
    uint32_t rx[2][NJ];   /* their residual pairs, loaded while the cluster gathers */
#pragma unroll
    for (int hh = 0; hh < 2; hh++) {
        const int row = r0 + 8 * hh;
        tk[hh] = row < N ? token_src(wg, w * N + row) : -1;
#pragma unroll
        for (int j = 0; j < NJ; j++) rx[hh][j] = tk[hh] >= 0 ? ld_u32(x + tk[hh] * C + h * HD + 8 * j + 2 * q4) : 0u;
    }
    cluster_sync();   /* 1: every head's O rows of window w are staged */
    float acc[NJ][4];
#pragma unroll
    for (int j = 0; j < NJ; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    const int mi = lane >> 3;
    const T *wb = reinterpret_cast<const T *>(es + L::kW) + ((lane & 7) + (mi >> 1) * 8) * L::LDX + (mi & 1) * 8;
#pragma unroll
    for (int g0 = 0; g0 < H; g0 += G) {   /* K: heads g0 .. g0 + G - 1's channels of o */
        uint32_t af[G][HD / 16][4];
#pragma unroll
        for (int i = 0; i < G; i++) {
            const T *o = cluster_map(os, g0 + i) + r0 * LD + 2 * q4;
#pragma unroll
            for (int kk = 0; kk < HD / 16; kk++) {
                af[i][kk][0] = ld_u32(o + kk * 16), af[i][kk][1] = ld_u32(o + 8 * LD + kk * 16);
                af[i][kk][2] = ld_u32(o + kk * 16 + 8), af[i][kk][3] = ld_u32(o + 8 * LD + kk * 16 + 8);
            }
        }
#pragma unroll
        for (int i = 0; i < G; i++)
#pragma unroll
            for (int kk = 0; kk < HD / 16; kk++)
#pragma unroll
                for (int gp = 0; gp < NJ / 2; gp++) {
                    uint32_t bf[4];
                    ldsm_x4(bf, wb + gp * 16 * L::LDX + (g0 + i) * HD + kk * 16);
                    mma16816<T>(acc[2 * gp], af[i][kk], bf[0], bf[1]);
                    mma16816<T>(acc[2 * gp + 1], af[i][kk], bf[2], bf[3]);
                }
    }
    float v[2][2 * NJ], res[2][2 * NJ];   /* v: the LayerNorm's input; res: V2's residual */
#pragma unroll
    for (int j = 0; j < NJ; j++) {
        const float2 bj = *reinterpret_cast<const float2 *>(vec + 8 * j + 2 * q4);
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const float p0 = round_as<T>(acc[j][2 * hh] + bj.x), p1 = round_as<T>(acc[j][2 * hh + 1] + bj.y);
            const float2 r = unpack2<T>(rx[hh][j]);
            if constexpr (V2) {
                v[hh][2 * j] = p0, v[hh][2 * j + 1] = p1;
                res[hh][2 * j] = r.x, res[hh][2 * j + 1] = r.y;
            } else {
                v[hh][2 * j] = round_as<T>(r.x + p0), v[hh][2 * j + 1] = round_as<T>(r.y + p1);
            }
        }
    }
    /* this head's mean and M2 of each row's 32 columns (a row's are a quad's lanes) */
#pragma unroll
    for (int hh = 0; hh < 2; hh++) {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < 2 * NJ; k++) s += v[hh][k];
        const float mh = swin_quad_sum(s) * (1.0f / HD);
        float q = 0.0f;
#pragma unroll
        for (int k = 0; k < 2 * NJ; k++) q = fmaf(v[hh][k] - mh, v[hh][k] - mh, q);
        q = swin_quad_sum(q);
        if (q4 == 0) st[r0 + 8 * hh] = make_float2(mh, q);
    }
    cluster_sync();   /* 2: every head's statistics of window w are in its st */
    float2 sh[2][H];
#pragma unroll
    for (int hs = 0; hs < H; hs++) {
        const float2 *sr = cluster_map(st, hs);
        sh[0][hs] = sr[r0], sh[1][hs] = sr[r0 + 8];
    }
    T *lo = static_cast<T *>(p.ln_out);
#pragma unroll
    for (int hh = 0; hh < 2; hh++) {
        float mean = 0.0f;
#pragma unroll
        for (int hs = 0; hs < H; hs++) mean += sh[hh][hs].x;
        mean *= 1.0f / H;
        float m2 = 0.0f;
#pragma unroll
        for (int hs = 0; hs < H; hs++) m2 += sh[hh][hs].y + HD * (sh[hh][hs].x - mean) * (sh[hh][hs].x - mean);
        const float rstd = rsqrtf(m2 / C + eps);
        if (tk[hh] < 0) continue;
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            const int e = 8 * j + 2 * q4, c = h * HD + e;
            const float2 ga = *reinterpret_cast<const float2 *>(vec + HD + e);
            const float2 be = *reinterpret_cast<const float2 *>(vec + 2 * HD + e);
            const float n0 = fmaf((v[hh][2 * j] - mean) * rstd, ga.x, be.x);
            const float n1 = fmaf((v[hh][2 * j + 1] - mean) * rstd, ga.y, be.y);
            T *xd = x + tk[hh] * C + c;
            if constexpr (V2) {
                *reinterpret_cast<uint32_t *>(xd) = pack2<T>(res[hh][2 * j] + n0, res[hh][2 * j + 1] + n1);
            } else {
                *reinterpret_cast<uint32_t *>(xd) = pack2<T>(v[hh][2 * j], v[hh][2 * j + 1]);
                *reinterpret_cast<uint32_t *>(lo + tk[hh] * C + c) = pack2<T>(n0, n1);
            }
        }
    }
}

} // namespace swin_attn

#endif
