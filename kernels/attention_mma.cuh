/* attention_mma.cuh - fused window attention on tensor cores (fp16/bf16), included by attention.cu.
 *
 * One CTA = one (window, head) [and, when windows are few, a slice of its query tiles]. Q, K, V
 * are read straight from the QKV GEMM output [B*nW, N, 3C] with 16-byte cp.async; K and V of the
 * window stay in shared memory and every query tile of the CTA reuses them ("resident" mode).
 * When K+V would not fit (large head_dim at large windows) they pass through shared memory in
 * chunks instead ("streamed" mode, each warp then owns one query tile). A warp owns 16 query rows:
 * S = Q K^T with mma.sync m16n8k16 (ldmatrix fragments, fp32 accumulate), then bias (looked up in
 * the head's column of the compact table, staged in smem, index computed here), shift mask
 * (computed here from the token regions) and an online softmax in fp32 over key blocks of 64, then
 * O += P V with P re-packed from the S registers. N is padded to a multiple of 16: pad keys score
 * -inf, pad query rows are never written. V2 cosine attention scales the raw q.k by
 * scale/(|q||k|) in fp32, with the norms computed from the staged rows. The shift mask is only
 * evaluated in windows on the shifted border; elsewhere all tokens share one region.
 * Any head_dim: the template width HD is a padded tile width (Tiles: a multiple of 16); q/k/v rows
 * are read with the true head_dim (a.g.hd) and the widest access its alignment allows (a.vb: 16-byte
 * cp.async on the fast path, 8/4-byte cp.async or 2-byte copies otherwise), columns hd..HD-1 land
 * in smem as zeros, and only hd output channels are stored. Above Tiles::kQRegsMax the Q fragments
 * are re-read from smem for each key block instead of being held in registers, and the warp's O
 * staging tile is its Q tile.
 * Warps per CTA: 4 for windows of up to 4 query tiles, 9 for 12x12 windows (a warp per tile;
 * attention.cu fill_mode()), else 8.
 * The inner loop (tile_keys) is issue-bound, so it is kept short: a key's bias offset is staged
 * once per CTA as bytes (kbytes), so that a score's bias is one add and one load; the ldmatrix
 * addresses are a held base plus constants; the per-key tables hold a key block past npad
 * (key_slots), so no group of a block is guarded, and keys past the window are set to -inf once.
 * Measured against the loop before (H200, fp16, two builds in one run): ncu instructions of a
 * Swin-B 384 stage-3 launch at batch 64 84.8M -> 72.3M, 174 -> 148 us; Swin-T stage 1 at batch
 * 256 507 -> 450 us; attention ops per forward at batch 256 Swin-T 1.94 -> 1.77 ms, SwinV2-T 2.19
 * -> 2.08, Swin-B 384 15.89 -> 13.62. Then the CTA's set-up: the (window, head, group) of the CTA
 * and the window's position by FastDiv (a multiply-high and a shift) instead of integer divisions,
 * K and V loaded in one pass (H100, two builds in one run: ncu Swin-T stage 1 at batch 256 411 ->
 * 351 us, Swin-B 384 stage 3 at batch 64 141 -> 127 us; attention ops at batch 256 Swin-T 1.77 ->
 * 1.59 ms, SwinV2-T 2.10 -> 1.92, Swin-B 384 13.8 -> 13.0).
 * The output can also go to an E4M3 copy (MmaArgs::q8, for an FP8 proj; tile_end writes each
 * 16-byte chunk's 8 bytes as it stores the chunk, or instead of it with keep16 0), so that proj's
 * input needs no quantising pass.
 * attn_mma_pipe_kernel (opt-in, SWIN_ATTN_PIPELINE): persistent CTAs over (window, head) items
 * for N <= 64 that prefetch the next item while computing the current one.
 * Test: tests/test_gpu_attention.c.
 */
#ifndef SWIN_ATTENTION_MMA_CUH
#define SWIN_ATTENTION_MMA_CUH

#include "attention_common.cuh"

/* CTAs per SM the 4-warp kernels are register-limited to reach (head_dim <= 32): with key blocks
 * of 64 (SWIN_ATTN_KB64=1), and of 32 (the default there: half the S registers, 79 registers and no
 * spills at 6) */
#ifndef SWIN_ATTN_MIN_CTAS
#define SWIN_ATTN_MIN_CTAS 5
#endif
#ifndef SWIN_ATTN_MIN_CTAS_KB32
#define SWIN_ATTN_MIN_CTAS_KB32 6
#endif
/* the 4-warp kernels of head_dim 48 and 64 */
#ifndef SWIN_ATTN_MIN_CTAS_WIDE
#define SWIN_ATTN_MIN_CTAS_WIDE 3
#endif
/* the 8-warp kernels (head_dim <= 32) */
#ifndef SWIN_ATTN_MIN_CTAS_LARGE
#define SWIN_ATTN_MIN_CTAS_LARGE 2
#endif
/* and the 9-warp kernel of 12x12 windows (head_dim <= 32, keys 32 at a time) */
#ifndef SWIN_ATTN_MIN_CTAS_WINDOW
#define SWIN_ATTN_MIN_CTAS_WINDOW 3
#endif
/* 1: small windows (N <= 64, head_dim <= 64) use the persistent prefetching kernel
 * attn_mma_pipe_kernel below; 0 (default): the plain resident kernel. Measured on an H200: correct
 * (test_gpu_attention) and racecheck-clean with -DSWIN_ATTN_PIPELINE=1, but 13% slower than the
 * plain kernel on Swin-T, so it stays off. */
#ifndef SWIN_ATTN_PIPELINE
#define SWIN_ATTN_PIPELINE 0
#endif

namespace swin_attn {

/* the kernel of a warp per tile of 12x12 windows (Tiles::kWarpsWindow) is built for these widths */
__host__ __device__ constexpr bool window_warps(int HD) { return HD <= 64; }

/* CTAs per SM a kernel's registers are limited to reach (its __launch_bounds__) */
__host__ __device__ constexpr int mma_min_ctas(int NW, int HD, int KB) {
    return HD > 32 ? (NW == Tiles::kWarpsSmall && HD <= 64 ? SWIN_ATTN_MIN_CTAS_WIDE : 1)
         : NW == Tiles::kWarpsSmall ? (KB == 32 ? SWIN_ATTN_MIN_CTAS_KB32 : SWIN_ATTN_MIN_CTAS)
         : NW == Tiles::kWarpsWindow ? SWIN_ATTN_MIN_CTAS_WINDOW : SWIN_ATTN_MIN_CTAS_LARGE;
}

struct MmaArgs : AttnIO<void> {
    int tiles;                 // query tiles of 16 rows per window (npad / 16)
    int tiles_per_cta;         // resident: tiles one CTA covers; streamed: one per warp
    int groups;                // CTAs per (window, head)
    FastDiv div_groups;        // by groups (set by the launcher)
    int kv_rows;               // keys held in smem at a time (npad when resident)
    int nwin;                  // windows B*nW
    swin_q8_dst q8;            // out's E4M3 copy (ops.h; q8.q NULL: none), written by tile_end
    const float *deq = nullptr;   // qkv in E4M3: its per-channel scales [3C] (attn_head_kernel's Q8), else NULL
};

/* Entries of the per-key tables (kinfo, kbytes, rk): npad and one key block more, so that a block
 * of keys reads them without bounds checks (the keys past the block's end are then set to -inf) */
__host__ __device__ constexpr int key_slots(int npad) { return npad + Tiles::kKeyBlock; }

/* Q fragments of a warp tile live in registers (else they are re-read from smem per key block) */
__host__ __device__ constexpr bool q_in_regs(int HD) { return HD <= Tiles::kQRegsMax; }

/* shared-memory layout, the same on host (sizing) and device (carving); byte offsets. hd: the
 * padded tile width. Per warp a Q tile and an O tile; one tile (O staged over Q) when Q is not
 * held in registers. */
struct MmaSmem {
    int k, v, kinfo, kbytes, rk, bias, stage, total;
    __host__ __device__ MmaSmem(int hd, int kv_rows, int npad, int nb, int nwarps) {   /* nb: Geom::nb */
        int ld = hd + Tiles::kPad;
        k = 0;
        v = k + kv_rows * ld * 2;
        kinfo = v + kv_rows * ld * 2;
        kbytes = kinfo + key_slots(npad) * 4;
        rk = kbytes + key_slots(npad) * 4;
        bias = rk + key_slots(npad) * 4;
        stage = (bias + nb * 4 + 15) & ~15;
        total = stage + nwarps * (q_in_regs(hd) ? 2 : 1) * Tiles::kRows * ld * 2;
    }
};

/* rows [r0, r0+nrows) of a head's [N, hd] slice (row stride ldg elements) into smem rows 0..
 * (stride LD) as HD columns, and when dst2 is given the same rows of the slice off2 elements
 * further into dst2 (K and V in one pass); rows >= N and columns >= hd are zero-filled, so that
 * P (=0) x V stays finite and the pad channels add nothing. vb = access_bytes(hd, 2): 16-byte cp.async
 * (pieces past hd zero-filled), else pieces of vb bytes: cp.async for 8 and 4, plain 2-byte copies
 * for 2 (odd hd; visible after the caller's barrier like the rest). */
template <int HD, typename T>
__device__ __forceinline__ void load_rows(T *dst, const T *src, size_t ldg, int r0, int nrows, int N,
                                          int hd, int vb, int tid, int nthr, T *dst2 = nullptr, int off2 = 0) {
    constexpr int LD = HD + Tiles::kPad, CPR = HD / 8;   // 16-byte chunks per row
    if (vb == 16) {
        for (int i = tid; i < nrows * CPR; i += nthr) {
            int r = i / CPR, c = (i % CPR) * 8, gr = r0 + r;
            bool ok = gr < N && c < hd;
            const T *s = src + (size_t)(ok ? gr : 0) * ldg + (ok ? c : 0);
            cp_async16(dst + r * LD + c, s, ok);
            if (dst2) cp_async16(dst2 + r * LD + c, s + off2, ok);
        }
        return;
    }
    const int ppr = HD * (int)sizeof(T) / vb, hb = hd * (int)sizeof(T);   // pieces per row, data bytes
    for (int cp = 0; cp < (dst2 ? 2 : 1); cp++) {
        T *dm = cp ? dst2 : dst;
        const T *sm = cp ? src + off2 : src;
        for (int i = tid; i < nrows * ppr; i += nthr) {
            int r = i / ppr, b = (i - r * ppr) * vb, gr = r0 + r;
            bool ok = gr < N && b < hb;
            char *d = reinterpret_cast<char *>(dm + r * LD) + b;
            const char *s = reinterpret_cast<const char *>(sm + (size_t)(ok ? gr : 0) * ldg) + (ok ? b : 0);
            if (vb == 8) cp_async8(d, s, ok);
            else if (vb == 4) cp_async4(d, s, ok);
            else *reinterpret_cast<unsigned short *>(d) = ok ? __ldg(reinterpret_cast<const unsigned short *>(s)) : (unsigned short)0;
        }
    }
}

/* 1 / max(|row|, 1e-12) of an smem row of HD elements (fp32 sum of squares) */
template <int HD, typename T>
__device__ __forceinline__ float inv_norm_row(const T *row) {
    float ss = 0.f;
#pragma unroll
    for (int c = 0; c < HD; c += 8) {
        uint4 u = *reinterpret_cast<const uint4 *>(row + c);
        uint32_t w4[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int e = 0; e < 4; e++) {
            float2 f = unpack2<T>(w4[e]);
            ss = fmaf(f.x, f.x, fmaf(f.y, f.y, ss));
        }
    }
    return 1.0f / fmaxf(sqrtf(ss), 1e-12f);
}

// ---- one warp's 16-row query tile
template <int HD> struct WarpTile {
    uint32_t qf[q_in_regs(HD) ? HD / 16 : 1][4];   // Q A-fragments (unused when re-read from smem)
    float o[HD / 8][4];        // O accumulators (rows g, g+8)
    float m[2], l[2];          // running max (log2 domain) and lane-partial sums
    float sc[2];               // scale * log2e (/ |q| for V2) of rows g, g+8
    int qb[2], qr[2];          // bias base index and region of rows g, g+8
};

template <int HD, typename T>
__device__ __forceinline__ void tile_begin(WarpTile<HD> &t, const T *qs, int tile, const int *kinfo,
                                           const MmaArgs &a, float scale_h, int lane) {
    constexpr int LD = HD + Tiles::kPad;
    const int mi = lane >> 3;
    if constexpr (q_in_regs(HD)) {
#pragma unroll
        for (int ks = 0; ks < HD / 16; ks++)
            ldsm_x4(t.qf[ks], qs + ((lane & 7) + (mi & 1) * 8) * LD + ks * 16 + (mi >> 1) * 8);
    }
    float rq0 = 1.f, rq1 = 1.f;
    if (a.v2) {
        float rq = inv_norm_row<HD, T>(qs + (lane & 15) * LD);
        rq0 = __shfl_sync(0xffffffffu, rq, lane >> 2);
        rq1 = __shfl_sync(0xffffffffu, rq, (lane >> 2) + 8);
    }
    t.sc[0] = scale_h * kLog2e * rq0;
    t.sc[1] = scale_h * kLog2e * rq1;
#pragma unroll
    for (int r = 0; r < 2; r++) {
        int row = tile * Tiles::kRows + (lane >> 2) + r * 8;
        int info = kinfo[row];   // kinfo holds npad entries; pads read as token 0
        t.qb[r] = info_qbase(a.g, info);
        t.qr[r] = info_region(info);
        t.m[r] = -INFINITY;
        t.l[r] = 0.f;
    }
#pragma unroll
    for (int n = 0; n < HD / 8; n++) t.o[n][0] = t.o[n][1] = t.o[n][2] = t.o[n][3] = 0.f;
}

/* O += P V over 16 keys: P from the S accumulators of their two 8-key tiles (the accumulator
 * layout is the A-fragment layout), rounded to T; v: the lane's ldmatrix address of V's first row
 * of the 16 (row stride HD + Tiles::kPad) */
template <int HD, typename T>
__device__ __forceinline__ void pv_group(float (&o)[HD / 8][4], const float (&s0)[4], const float (&s1)[4],
                                         const T *v) {
    uint32_t pa[4];
    pa[0] = pack2<T>(s0[0], s0[1]);
    pa[1] = pack2<T>(s0[2], s0[3]);
    pa[2] = pack2<T>(s1[0], s1[1]);
    pa[3] = pack2<T>(s1[2], s1[3]);
#pragma unroll
    for (int np = 0; np < HD / 16; np++) {
        uint32_t b[4];
        ldsm_x4_trans(b, v + np * 16);
        mma16816<T>(o[2 * np], pa, b[0], b[1]);
        mma16816<T>(o[2 * np + 1], pa, b[2], b[3]);
    }
}

/* keys [k_begin, k_end) (multiples of 16); smem row 0 of ks/vs holds key k_lo. masked: the window
 * touches the shifted border, so token regions may differ (warp-uniform; else the mask is skipped).
 * qs: the tile's Q rows in smem (read here only when !q_in_regs(HD)). kbytes: stage_tables' koff * 4
 * of every key. The lane parts of the ldmatrix addresses and of the bias rows' addresses are set
 * up once, so that in the loop a fragment address is a base plus a constant and a bias address one
 * add; the V2 and mask steps are loops of their own behind one uniform branch each. */
template <int HD, typename T, int KB = Tiles::kKeyBlock>
__device__ __forceinline__ void tile_keys(WarpTile<HD> &t, const T *ks, const T *vs, const T *qs, int k_lo,
                                          int k_begin, int k_end, const int *kinfo, const int *kbytes,
                                          const float *rk, const float *bias, const MmaArgs &a, bool masked,
                                          int lane) {
    constexpr int LD = HD + Tiles::kPad, NT = KB / 8;
    const int mi = lane >> 3, q4 = lane & 3;
    const float mask = kMask * kLog2e;
    const int kl = ((lane & 7) + (mi >> 1) * 8) * LD + (mi & 1) * 8;   // K (B operand) rows of this lane
    const int ql = ((lane & 7) + (mi & 1) * 8) * LD + (mi >> 1) * 8;   // Q (A operand) and V (B, transposed)
    const T *kl_p = ks + kl, *ql_p = vs + ql;
    asm("" : "+l"(kl_p), "+l"(ql_p));   // held, not recomputed from the lane id before every ldmatrix
    /* bias of (row, key) at byte address brow[r] - kbytes[key] (index qbase(row) - koff(key)) */
    const int kend = min(k_end, a.g.N);   // keys from here on score -inf
    const char *brow[2] = {reinterpret_cast<const char *>(bias + t.qb[0]), reinterpret_cast<const char *>(bias + t.qb[1])};
    for (int kb = k_begin; kb < k_end; kb += KB) {
        const int ng = min(KB / 16, (k_end - kb) >> 4);   // 16-key groups in this block
        const T *kblk = kl_p + (kb - k_lo) * LD, *vblk = ql_p + (kb - k_lo) * LD;
        const int *kbb = kbytes + kb + 2 * q4;   // this lane's keys of the block: kbb[8n], kbb[8n + 1]
        float s[NT][4];
#pragma unroll
        for (int n = 0; n < NT; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        // S = Q K^T
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            uint32_t qa[4];
            if constexpr (q_in_regs(HD)) {
                qa[0] = t.qf[kk][0], qa[1] = t.qf[kk][1], qa[2] = t.qf[kk][2], qa[3] = t.qf[kk][3];
            } else {
                ldsm_x4(qa, qs + ql + kk * 16);
            }
#pragma unroll
            for (int gp = 0; gp < KB / 16; gp++) {
                if (gp < ng) {
                    uint32_t b[4];
                    ldsm_x4(b, kblk + gp * 16 * LD + kk * 16);
                    mma16816<T>(s[2 * gp], qa, b[0], b[1]);
                    mma16816<T>(s[2 * gp + 1], qa, b[2], b[3]);
                }
            }
        }
        if (a.v2) {   // cosine attention: q.k / |k| (the 1/|q| is in t.sc)
#pragma unroll
            for (int n = 0; n < NT; n++) {
                const float2 r = *reinterpret_cast<const float2 *>(rk + kb + n * 8 + 2 * q4);
                s[n][0] *= r.x, s[n][1] *= r.y, s[n][2] *= r.x, s[n][3] *= r.y;
            }
        }
        // log2-domain scores: s * scale + bias (every group: the tables hold key_slots entries)
#pragma unroll
        for (int n = 0; n < NT; n++) {
            const int2 kbt = *reinterpret_cast<const int2 *>(kbb + n * 8);
            s[n][0] = fmaf(s[n][0], t.sc[0], *reinterpret_cast<const float *>(brow[0] - kbt.x));
            s[n][1] = fmaf(s[n][1], t.sc[0], *reinterpret_cast<const float *>(brow[0] - kbt.y));
            s[n][2] = fmaf(s[n][2], t.sc[1], *reinterpret_cast<const float *>(brow[1] - kbt.x));
            s[n][3] = fmaf(s[n][3], t.sc[1], *reinterpret_cast<const float *>(brow[1] - kbt.y));
        }
        if (masked) {   // keys of another region than the query row's
#pragma unroll
            for (int n = 0; n < NT; n++) {
                const int2 ki = *reinterpret_cast<const int2 *>(kinfo + kb + n * 8 + 2 * q4);
                const int r0 = info_region(ki.x), r1 = info_region(ki.y);
                if (r0 != t.qr[0]) s[n][0] += mask;
                if (r1 != t.qr[0]) s[n][1] += mask;
                if (r0 != t.qr[1]) s[n][2] += mask;
                if (r1 != t.qr[1]) s[n][3] += mask;
            }
        }
        if (kb + KB > kend) {   // keys past the window (pads) or past this call's range score -inf
#pragma unroll
            for (int n = 0; n < NT; n++) {
                const int j = kb + n * 8 + 2 * q4;
                if (j >= kend) s[n][0] = s[n][2] = -INFINITY;
                if (j + 1 >= kend) s[n][1] = s[n][3] = -INFINITY;
            }
        }
        float bmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int n = 0; n < NT; n++) {
            bmax[0] = fmaxf(bmax[0], fmaxf(s[n][0], s[n][1]));
            bmax[1] = fmaxf(bmax[1], fmaxf(s[n][2], s[n][3]));
        }
        online_softmax_step(t.m, t.l, t.o, s, bmax);
        // O += P V
#pragma unroll
        for (int gp = 0; gp < KB / 16; gp++)
            if (gp < ng) pv_group<HD, T>(t.o, s[2 * gp], s[2 * gp + 1], vblk + gp * 16 * LD);
    }
}

/* E4M3 bytes of the first n (1..8) 16-bit values of chunk v, times inv: the 8 bytes in one store
 * where q is 8-byte aligned and n is 8 (head_dim a multiple of 8), else byte by byte */
template <typename T>
__device__ __forceinline__ void q8_chunk(unsigned char *q, const uint4 &v, int n, float inv) {
    const T *t = reinterpret_cast<const T *>(&v);
    if (n == 8 && ((uintptr_t)q & 7u) == 0) {
        float f[8];
#pragma unroll
        for (int k = 0; k < 8; k++) f[k] = load_f(t, k);
        swin_e4m3_store<8>(q, f, inv);
    } else {
#pragma unroll
        for (int k = 0; k < 8; k++)
            if (k < n) q[k] = swin_e4m3(load_f(t, k) * inv);
    }
}

/* one 16-byte store (a plain uint4 assignment of val became four 4-byte stores: q8_chunk reads val
 * through a pointer, so it lives in memory) */
__device__ __forceinline__ void st_global16(void *dst, const uint4 &v) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(__cvta_generic_to_global(dst)), "r"(v.x),
                 "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

/* the first half of tile_end: the tile's rows normalised and rounded to T into os (rows LD apart) */
template <int HD, typename T>
__device__ __forceinline__ void tile_stage(WarpTile<HD> &t, T *os, int lane) {
    constexpr int LD = HD + Tiles::kPad;
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        float l = t.l[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        inv[r] = 1.f / l;
    }
#pragma unroll
    for (int n = 0; n < HD / 8; n++)
#pragma unroll
        for (int r = 0; r < 2; r++)
            *reinterpret_cast<uint32_t *>(os + ((lane >> 2) + r * 8) * LD + n * 8 + 2 * (lane & 3)) =
                pack2<T>(t.o[n][2 * r] * inv[r], t.o[n][2 * r + 1] * inv[r]);
}

/* normalise and write the tile's valid rows, channels < hd: registers -> smem (os) -> global stores
 * of 16 bytes (vb == 16) or of vb-byte pieces; with a.q8, also (keep16 0: only) the E4M3 copy of
 * the values as stored, at the same element index (bit for bit swin_quantize_fp8_cuda of out) */
template <int HD, typename T>
__device__ __forceinline__ void tile_end(WarpTile<HD> &t, T *os, T *out, int tile, const MmaArgs &a, int hd, int vb,
                                         int lane) {
    constexpr int LD = HD + Tiles::kPad, CPR = HD / 8;
    if constexpr (!q_in_regs(HD)) __syncwarp();   // os is the Q tile, read by every lane's ldmatrix until now
    tile_stage<HD, T>(t, os, lane);
    __syncwarp();
    for (int i = lane; i < Tiles::kRows * CPR; i += 32) {
        int r = i / CPR, c = (i % CPR) * 8, row = tile * Tiles::kRows + r;
        if (row < a.g.N && c < hd) {
            const uint4 val = *reinterpret_cast<const uint4 *>(os + r * LD + c);
            T *dst = out + (size_t)row * a.g.C + c;
            if (a.q8.q) {
                q8_chunk<T>(a.q8.q + (dst - reinterpret_cast<T *>(a.out)), val, min(8, hd - c), a.q8.inv);
                if (!a.q8.keep16) continue;
            }
            if (vb == 16) st_global16(dst, val);   // hd is a multiple of 8: whole chunks
            else st_part(dst, val, min(8, hd - c) * (int)sizeof(T), vb);
        }
    }
    __syncwarp();
}

// ---- the kernel
/* EXACT: head_dim == HD (a multiple of 8, so a.vb == 16) known at compile time: the fast path,
 * without the general loads and stores (launch_mma_kernel picks it for exact_width(HD); the general
 * kernel, EXACT false, handles any hd <= HD) */
/* KB: keys per online-softmax step of the resident mode (the streamed mode keeps Tiles::kKeyBlock) */
template <int HD, typename T, int NW, bool STREAM, bool EXACT, int KB = Tiles::kKeyBlock>
__global__ void __launch_bounds__(NW * 32, mma_min_ctas(NW, HD, KB))
attn_mma_kernel(MmaArgs a) {
    swin_pdl_begin();
    constexpr int LD = HD + Tiles::kPad;
    extern __shared__ __align__(16) unsigned char smem[];
    const Geom &g = a.g;
    constexpr int nwarps = NW, nthr = NW * 32;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tid = threadIdx.x;
    const int pair = a.div_groups.div(blockIdx.x), grp = a.div_groups.mod(blockIdx.x, pair);
    const int w = g.div_heads.div(pair), h = g.div_heads.mod(pair, w);
    int wy, wx;
    window_pos(g, w, &wy, &wx);

    constexpr bool QREG = q_in_regs(HD);
    const MmaSmem L(HD, a.kv_rows, g.npad, g.nb, nwarps);
    T *ks = reinterpret_cast<T *>(smem + L.k), *vs = reinterpret_cast<T *>(smem + L.v);
    int *kinfo = reinterpret_cast<int *>(smem + L.kinfo), *kbytes = reinterpret_cast<int *>(smem + L.kbytes);
    float *rk = reinterpret_cast<float *>(smem + L.rk), *bias = reinterpret_cast<float *>(smem + L.bias);
    T *qs = reinterpret_cast<T *>(smem + L.stage) + warp * (QREG ? 2 : 1) * Tiles::kRows * LD;
    T *os = QREG ? qs + Tiles::kRows * LD : qs;

    const size_t ldg = (size_t)3 * g.C;
    const int hd = EXACT ? HD : g.hd, vb = EXACT ? 16 : a.vb;
    const T *q = reinterpret_cast<const T *>(a.qkv) + (size_t)w * g.N * ldg + (size_t)h * hd;
    const T *k = q + g.C;   // v = k + C
    T *out = reinterpret_cast<T *>(a.out) + (size_t)w * g.N * g.C + (size_t)h * hd;
    const float scale_h = __ldg(a.scale + h);
    const int t0 = grp * a.tiles_per_cta, t1 = min(a.tiles, t0 + a.tiles_per_cta);
    const bool masked = window_masked(g, wy, wx);
    int tile = t0 + warp;

    if (tile < t1) load_rows<HD>(qs, q, ldg, tile * Tiles::kRows, Tiles::kRows, g.N, hd, vb, lane, 32);
    if (!STREAM) load_rows<HD>(ks, k, ldg, 0, g.npad, g.N, hd, vb, tid, nthr, vs, g.C);
    cp_async_commit();
    stage_tables(kinfo, key_slots(g.npad), bias, a.bias_table, h, kLog2e, g, wy, wx, tid, nthr, kbytes);   // overlaps the copies
    cp_async_wait_all();
    __syncthreads();

    if (!STREAM) {
        if (a.v2) {
            for (int j = tid; j < key_slots(g.npad); j += nthr) rk[j] = j < g.npad ? inv_norm_row<HD, T>(ks + j * LD) : 0.f;
            __syncthreads();
        }
        for (; tile < t1; tile += nwarps) {
            WarpTile<HD> t;
            tile_begin<HD, T>(t, qs, tile, kinfo, a, scale_h, lane);
            __syncwarp();
            const int next = tile + nwarps;
            if constexpr (QREG) {   // prefetch the next tile's Q while this one computes
                if (next < t1) load_rows<HD>(qs, q, ldg, next * Tiles::kRows, Tiles::kRows, g.N, hd, vb, lane, 32);
                cp_async_commit();
            }
            tile_keys<HD, T, KB>(t, ks, vs, qs, 0, 0, g.npad, kinfo, kbytes, rk, bias, a, masked, lane);
            tile_end<HD, T>(t, os, out, tile, a, hd, vb, lane);
            if constexpr (!QREG) {  // Q is read until the end of the keys and O staged over it: load after
                if (next < t1) load_rows<HD>(qs, q, ldg, next * Tiles::kRows, Tiles::kRows, g.N, hd, vb, lane, 32);
                cp_async_commit();
            }
            cp_async_wait_all();
            __syncwarp();
        }
    } else {
        const bool has = tile < t1;
        WarpTile<HD> t;
        if (has) tile_begin<HD, T>(t, qs, tile, kinfo, a, scale_h, lane);
        for (int c0 = 0; c0 < g.npad; c0 += a.kv_rows) {
            const int n = min(a.kv_rows, g.npad - c0);
            __syncthreads();   // every warp is done with the previous chunk
            load_rows<HD>(ks, k, ldg, c0, n, g.N, hd, vb, tid, nthr, vs, g.C);
            cp_async_commit();
            cp_async_wait_all();
            __syncthreads();
            if (a.v2) {
                for (int j = tid; j < n; j += nthr) rk[c0 + j] = inv_norm_row<HD, T>(ks + j * LD);
                __syncthreads();
            }
            if (has) tile_keys<HD, T>(t, ks, vs, qs, c0, c0, c0 + n, kinfo, kbytes, rk, bias, a, masked, lane);
        }
        if (has) tile_end<HD, T>(t, os, out, tile, a, hd, vb, lane);
    }
}

// ---- small windows (N <= 64): persistent CTAs, next (window, head) prefetched while computing

/* two stages of {Q, K, V, kinfo, bias} for one (window, head) each, then rk and the O staging;
 * byte offsets inside stage 0 (stage 1 = the same + span) */
struct PipeSmem {
    int q, k, v, kinfo, kbytes, bias, span, rk, stage, total;
    __host__ __device__ PipeSmem(int hd, int npad, int nbias) {   /* nbias: Geom::nb */
        int ld = hd + Tiles::kPad, mat = npad * ld * 2, nb = (nbias * 4 + 15) & ~15;
        q = 0;
        k = q + mat;
        v = k + mat;
        kinfo = v + mat;
        kbytes = kinfo + key_slots(npad) * 4;
        bias = kbytes + key_slots(npad) * 4;
        span = bias + nb;
        rk = 2 * span;
        stage = rk + key_slots(npad) * 4;
        total = stage + Tiles::kWarpsSmall * Tiles::kRows * ld * 2;
    }
};

/* Grid-stride over the (window, head) items; each warp owns query tile `warp` of every item.
 * Loads of item i+1 (cp.async group) are in flight while item i computes. */
template <int HD, typename T>
__global__ void __launch_bounds__(Tiles::kWarpsSmall * 32, HD <= 32 ? SWIN_ATTN_MIN_CTAS : 1)
attn_mma_pipe_kernel(MmaArgs a) {
    swin_pdl_begin();
    constexpr int LD = HD + Tiles::kPad, NW = Tiles::kWarpsSmall, nthr = NW * 32;
    static_assert(q_in_regs(HD), "the pipelined kernel keeps Q in registers (its O staging is separate)");
    extern __shared__ __align__(16) unsigned char smem[];
    const Geom &g = a.g;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tid = threadIdx.x;
    const PipeSmem L(HD, g.npad, g.nb);
    const size_t ldg = (size_t)3 * g.C, nitems = (size_t)a.nwin * g.heads;
    float *rk = reinterpret_cast<float *>(smem + L.rk);
    T *os = reinterpret_cast<T *>(smem + L.stage) + warp * Tiles::kRows * LD;

    /* issue the copies (one cp.async group) and stage the tables of item it into stage sb (bytes) */
    auto issue = [&](size_t it, int sb) {
        const int w = g.div_heads.div((int)it), h = g.div_heads.mod((int)it, w);
        int wy, wx;
        window_pos(g, w, &wy, &wx);
        const T *q = reinterpret_cast<const T *>(a.qkv) + (size_t)w * g.N * ldg + (size_t)h * g.hd;
        load_rows<HD>(reinterpret_cast<T *>(smem + sb + L.q), q, ldg, 0, g.npad, g.N, g.hd, a.vb, tid, nthr);
        load_rows<HD>(reinterpret_cast<T *>(smem + sb + L.k), q + g.C, ldg, 0, g.npad, g.N, g.hd, a.vb, tid, nthr);
        load_rows<HD>(reinterpret_cast<T *>(smem + sb + L.v), q + 2 * g.C, ldg, 0, g.npad, g.N, g.hd, a.vb, tid, nthr);
        cp_async_commit();
        stage_tables(reinterpret_cast<int *>(smem + sb + L.kinfo), key_slots(g.npad), reinterpret_cast<float *>(smem + sb + L.bias),
                     a.bias_table, h, kLog2e, g, wy, wx, tid, nthr, reinterpret_cast<int *>(smem + sb + L.kbytes));
    };

    size_t item = blockIdx.x;
    int sb = 0;   // byte offset of the current stage
    if (item < nitems) issue(item, 0);
    while (item < nitems) {
        const size_t next = item + gridDim.x;
        if (next < nitems) issue(next, L.span - sb);
        else cp_async_commit();   // empty group: "all but the newest" is then this item's group
        cp_async_wait_one();
        __syncthreads();
        const T *ks = reinterpret_cast<const T *>(smem + sb + L.k), *vs = reinterpret_cast<const T *>(smem + sb + L.v);
        const int *kinfo = reinterpret_cast<const int *>(smem + sb + L.kinfo);
        if (a.v2) {
            for (int j = tid; j < key_slots(g.npad); j += nthr) rk[j] = j < g.npad ? inv_norm_row<HD, T>(ks + j * LD) : 0.f;
            __syncthreads();
        }
        const int w = g.div_heads.div((int)item), h = g.div_heads.mod((int)item, w);
        if (warp < a.tiles) {
            int wy, wx;
            window_pos(g, w, &wy, &wx);
            T *out = reinterpret_cast<T *>(a.out) + (size_t)w * g.N * g.C + (size_t)h * g.hd;
            const T *qs = reinterpret_cast<const T *>(smem + sb + L.q) + warp * Tiles::kRows * LD;
            WarpTile<HD> t;
            tile_begin<HD, T>(t, qs, warp, kinfo, a, __ldg(a.scale + h), lane);
            tile_keys<HD, T>(t, ks, vs, qs, 0, 0, g.npad, kinfo, reinterpret_cast<const int *>(smem + sb + L.kbytes), rk,
                             reinterpret_cast<const float *>(smem + sb + L.bias),
                             a, window_masked(g, wy, wx), lane);
            tile_end<HD, T>(t, os, out, warp, a, g.hd, a.vb, lane);
        }
        __syncthreads();   // this stage (and rk) free before the next iteration refills them
        item = next;
        sb = L.span - sb;
    }
}

} // namespace swin_attn

#endif
