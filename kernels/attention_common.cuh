/* attention_common.cuh - pieces shared by the window-attention kernels (included by attention.cu
 * only): the tile shapes (all in one place), the window geometry computed in-kernel (relative
 * position offsets and shift-mask regions; no dense bias or mask is ever built), the global
 * accesses of a head's row for any head_dim (vector width from its alignment); the PTX wrappers
 * (cp.async, ldmatrix, mma.sync) are in mma.cuh, shared with the GEMM kernel.
 * Test: tests/test_gpu_attention.c (run with the source dir as argv[1]).
 */
#ifndef SWIN_ATTENTION_COMMON_CUH
#define SWIN_ATTENTION_COMMON_CUH

#include <stdint.h>
#include "common.cuh"
#include "mma.cuh"

namespace swin_attn {

// ---- tile shapes: every kernel and launcher reads them from here
struct Tiles {
    /* tensor-core kernel (fp16/bf16): a warp owns 16 query rows and walks the keys in blocks of
     * 64 (S block 16x64 in registers, online softmax between blocks) */
    static constexpr int kRows = 16;             // query rows per warp tile (mma M)
    static constexpr int kKeyBlock = 64;         // keys per online-softmax step (4-warp kernels of head_dim
                                                 // <= 32: 32, attention.cu kb32_on())
    static constexpr int kWarpsSmall = 4;        // warps per CTA when the window has <= 4 tiles (N <= 64)
    static constexpr int kWarpsLarge = 8;        // otherwise
    static constexpr int kWarpsWindow = 9;       // a warp per tile of 12x12 windows (attention.cu fill_mode())
    static constexpr int kResidentKvBytes = 100 * 1024; // K+V of a window stay whole in smem up to this
    static constexpr int kStreamKeys = 128;      // else K/V pass through smem in chunks of this many keys
    static constexpr int kPad = 8;               // row padding (elements): rows shift by 16 B, ldmatrix conflict-free
    static constexpr int kMinCtasPerSm = 2;      // split a window's query tiles over CTAs below this fill
    /* fp32 SIMT kernel: a warp owns 8 query rows; a lane owns one key of a 32-key chunk for the
     * scores and head_dim/32 output channels for P V */
    static constexpr int kF32Warps = 8;
    static constexpr int kF32RowsPerWarp = 8;
    static constexpr int kF32Keys = 32;          // keys per chunk (one per lane)
    static constexpr int kF32Pad = 4;            // K row padding (floats): float4 reads conflict-free
    /* unfused softmax: one warp per score row */
    static constexpr int kSoftmaxWarps = 8;
    /* head_dim: the fused kernels are instantiated for a few padded widths (multiples of 16, the
     * mma K and ldmatrix granule; attention.cu: head_width()). A head of hd channels runs on the
     * smallest width >= hd; its columns hd.. are zero in shared memory (loaded as zeros), so q.k,
     * |q|, |k| and P V are those of the true head, and only hd output channels are stored. */
    static constexpr int kMaxHeadDim = 256;
    static constexpr int kQRegsMax = 128;        // tensor-core kernel: Q fragments in registers up to this
                                                 // width; wider tiles re-read them from smem (registers)
};

/* Widths that also get an EXACT instantiation (head_dim == width known at compile time, no general
 * loads/stores): the head_dims the kernels supported before any head_dim was (16, 32, 64, 128).
 * Both are built; the launchers take the exact one only when SWIN_ATTN_EXACT=1 is in the
 * environment (attention.cu: exact_on()), so that one build measures both (`swin bench`) and the
 * GPU tests run both. Off: the general kernels, which it specialises, passed the full GPU test
 * (3-5% slower than the old fixed-width ones on Swin-T's head_dim 32), and measured against them
 * the exact ones did not pay (H100, 2026-11-27, SWIN_ATTN_HEAD=0, SWIN_ATTN_EXACT=0 / 1, `swin
 * bench -n 30`): Swin-T fp16 batch 8 0.678 / 0.693 ms, batch 256 10.121 / 10.161 ms (attention
 * ops 1.642 / 1.606); Swin-B 384 batch 64 19.141 / 19.167 ms. */
__host__ __device__ constexpr bool exact_width(int HD) {
    return HD == 16 || HD == 32 || HD == 64 || HD == 128;
}

static constexpr float kLog2e = 1.4426950408889634f;
static constexpr float kMask = -100.0f;          // added where shift regions differ (timm/HF)

// ---- window geometry
/* n / d for 0 <= n < 2^31 and 1 <= d < 2^31 by a multiply-high, an add and a shift instead of
 * an integer division (~20 instructions): s = ceil(log2 d), m = floor(2^32 (2^s - d) / d) + 1 */
struct FastDiv {
    uint32_t d, m, s;
    void set(int divisor) {
        d = (uint32_t)divisor;
        s = 0;
        while ((1u << s) < d) s++;
        m = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << s) - d)) / d + 1);
    }
    __device__ __forceinline__ int div(int n) const { return (int)((__umulhi((uint32_t)n, m) + (uint32_t)n) >> s); }
    __device__ __forceinline__ int mod(int n, int q) const { return n - q * (int)d; }   // q = div(n)
};

/* A window of Wh x Ww tokens (row-major) tiles the token grid padded to hp x wp; nwx windows per
 * row, nw per image; shift (sh, sw) per dimension (0 where that dimension does not shift); nb =
 * (2Wh-1)(2Ww-1) relative-position bias entries per head. The attention itself does not care about
 * padding: padding tokens are rows of qkv like any other (the window partition made them zero). */
struct Geom {
    int N, npad, Wh, Ww, hp, wp, sh, sw, nwx, nwy, nw, nb, heads, C;
    int hd;                    // head_dim (C == heads * hd), any of 1..Tiles::kMaxHeadDim
    FastDiv div_heads, div_nw, div_nwx, div_ww;   // by heads, nw, nwx, Ww (make_geom sets them)
};

/* What every fused kernel reads and writes; the kernels' argument structs extend it. P is the
 * element type (void for the fp16/bf16 kernels, which cast to their T). */
template <typename P>
struct AttnIO {
    const P *qkv;              // [B*nW, N, 3C]
    P *out;                    // [B*nW, N, C]
    const float *bias_table;   // [(2Wh-1)*(2Ww-1), heads]
    const float *scale;        // [heads]
    Geom g;
    int v2;
    int vb;                    // bytes per global access of q/k/v/out rows: access_bytes(g.hd, sizeof element)
    void set(P *o, const P *x, const float *bt, const float *sc, const Geom &geom, int is_v2) {
        qkv = x, out = o, bias_table = bt, scale = sc, g = geom, v2 = is_v2;
    }
};

/* region of a coordinate of the shifted, padded grid along a dimension of padded length n; same as
 * swin_region() in src/layers.h */
__device__ __forceinline__ int region_of(int c, int n, int W, int shift) {
    if (shift == 0) return 0;
    return c < n - W ? 0 : (c < n - shift ? 1 : 2);
}

/* Token info of token t of window (wy, wx): koff | region << 12, where koff = ty*(2Ww-1) + tx
 * (< 4096 for windows up to 32 x 32) and region in 0..8; pad tokens (t >= N) read as token 0. The
 * relative-position bias index of query i and key j is qbase(i) - koff(j) with
 * qbase(i) = koff(i) + (Wh-1)*(2Ww-1) + (Ww-1) = (dy + Wh-1)*(2Ww-1) + (dx + Ww-1) + koff(j). */
__device__ __forceinline__ int token_info(const Geom &g, int wy, int wx, int t) {
    if (t >= g.N) t = 0;
    int ty = g.div_ww.div(t), tx = t - ty * g.Ww;
    int reg = region_of(wy * g.Wh + ty, g.hp, g.Wh, g.sh) * 3 + region_of(wx * g.Ww + tx, g.wp, g.Ww, g.sw);
    return (ty * (2 * g.Ww - 1) + tx) | (reg << 12);
}
__device__ __forceinline__ int info_koff(int info) { return info & 0xfff; }
__device__ __forceinline__ int info_region(int info) { return info >> 12; }
__device__ __forceinline__ int info_qbase(const Geom &g, int info) {
    return info_koff(info) + (g.Wh - 1) * (2 * g.Ww - 1) + (g.Ww - 1);
}

/* window index w -> (wy, wx) inside its image */
__device__ __forceinline__ void window_pos(const Geom &g, int w, int *wy, int *wx) {
    int wl = g.div_nw.mod(w, g.div_nw.div(w));
    *wy = g.div_nwx.div(wl);
    *wx = wl - *wy * g.nwx;
}

/* does the window touch the shifted border (the only windows whose tokens lie in several regions:
 * the last window row along a shifted H, the last column along a shifted W)? */
__device__ __forceinline__ bool window_masked(const Geom &g, int wy, int wx) {
    return (g.sh > 0 && wy == g.nwy - 1) || (g.sw > 0 && wx == g.nwx - 1);
}

/* smem tables of one window and head: kinfo[t] for t < n, and the head's bias column times mul;
 * kbytes (when not null): koff(t) * 4, the byte offset that a key subtracts from a query's bias
 * row address (the tensor-core kernel's inner loop: one add per score, no unpacking) */
__device__ __forceinline__ void stage_tables(int *kinfo, int n, float *bias, const float *table, int h,
                                             float mul, const Geom &g, int wy, int wx, int tid, int nthr,
                                             int *kbytes = nullptr) {
    for (int t = tid; t < n; t += nthr) {
        const int info = token_info(g, wy, wx, t);
        kinfo[t] = info;
        if (kbytes) kbytes[t] = info_koff(info) * 4;
    }
    for (int i = tid; i < g.nb; i += nthr) bias[i] = __ldg(table + (size_t)i * g.heads + h) * mul;
}

// ---- a head's rows in global memory, any head_dim

/* Widest access (16, 8, 4 or 2 bytes) that every row of a head's q/k/v/out slice allows. The slice
 * of token t, head h starts hd * (t * 3 * heads + which * heads + h) elements (out: hd * (t * heads
 * + h)) past a 16-byte aligned base, so all of them are aligned to that of hd * es bytes; so is
 * every piece of vb bytes at a column that is a multiple of vb / es. */
__host__ __device__ inline int access_bytes(int hd, int es) {
    const int b = hd * es;
    return (b & 15) == 0 ? 16 : (b & 7) == 0 ? 8 : (b & 3) == 0 ? 4 : 2;
}

/* 16 bytes at src, of which the first nbytes (a multiple of vb, src aligned to vb) are read and the
 * rest are zero. Branches on vb are uniform per launch; indices into w are compile-time. */
__device__ __forceinline__ uint4 ldg_part(const void *src, int nbytes, int vb) {
    const char *s = static_cast<const char *>(src);
    uint32_t w[4] = {0u, 0u, 0u, 0u};
    if (vb == 16) {
        if (nbytes >= 16) return __ldg(reinterpret_cast<const uint4 *>(s));
    } else if (vb == 8) {
#pragma unroll
        for (int b = 0; b < 16; b += 8)
            if (b < nbytes) {
                const uint2 u = __ldg(reinterpret_cast<const uint2 *>(s + b));
                w[b / 4] = u.x, w[b / 4 + 1] = u.y;
            }
    } else if (vb == 4) {
#pragma unroll
        for (int b = 0; b < 16; b += 4)
            if (b < nbytes) w[b / 4] = __ldg(reinterpret_cast<const unsigned int *>(s + b));
    } else {
#pragma unroll
        for (int b = 0; b < 16; b += 2)
            if (b < nbytes) w[b / 4] |= (uint32_t)__ldg(reinterpret_cast<const unsigned short *>(s + b)) << (8 * (b & 3));
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* store the first nbytes (a multiple of vb, dst aligned to vb) of the 16 bytes v */
__device__ __forceinline__ void st_part(void *dst, uint4 v, int nbytes, int vb) {
    char *d = static_cast<char *>(dst);
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    if (vb == 16) {
        if (nbytes >= 16) *reinterpret_cast<uint4 *>(d) = v;
    } else if (vb == 8) {
#pragma unroll
        for (int b = 0; b < 16; b += 8)
            if (b < nbytes) *reinterpret_cast<uint2 *>(d + b) = make_uint2(w[b / 4], w[b / 4 + 1]);
    } else if (vb == 4) {
#pragma unroll
        for (int b = 0; b < 16; b += 4)
            if (b < nbytes) *reinterpret_cast<unsigned int *>(d + b) = w[b / 4];
    } else {
#pragma unroll
        for (int b = 0; b < 16; b += 2)
            if (b < nbytes) *reinterpret_cast<unsigned short *>(d + b) = (unsigned short)(w[b / 4] >> (8 * (b & 3)));
    }
}

/* 2^x on the SFU, denormals flushed (p < 2^-126 of the row max is 0 either way); 2^-inf = 0 */
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* One online-softmax step of the tensor-core kernels for the two rows (g, g + 8) a lane holds in
 * mma accumulator layout: bmax, the block's max of this lane's scores per row, is reduced over the
 * quad (a row's scores live in its 4 lanes); the running max m, the lane-partial sum l and the
 * output accumulators o (NO tiles of 8 columns) are rescaled to the new max; the block's scores s
 * (NS tiles of 8 keys, log2 domain) become exp2(s - max) and are added to l. */
template <int NO, int NS>
__device__ __forceinline__ void online_softmax_step(float (&m)[2], float (&l)[2], float (&o)[NO][4], float (&s)[NS][4],
                                                    float (&bmax)[2]) {
#pragma unroll
    for (int r = 0; r < 2; r++) {
        bmax[r] = fmaxf(bmax[r], __shfl_xor_sync(0xffffffffu, bmax[r], 1));
        bmax[r] = fmaxf(bmax[r], __shfl_xor_sync(0xffffffffu, bmax[r], 2));
        const float mnew = fmaxf(m[r], bmax[r]);
        const float base = mnew == -INFINITY ? 0.f : mnew;
        const float alpha = fast_exp2(m[r] - base);
        m[r] = mnew;
        l[r] *= alpha;
#pragma unroll
        for (int c = 0; c < NO; c++) {
            o[c][2 * r] *= alpha;
            o[c][2 * r + 1] *= alpha;
        }
#pragma unroll
        for (int n = 0; n < NS; n++) {
            const float p0 = fast_exp2(s[n][2 * r] - base), p1 = fast_exp2(s[n][2 * r + 1] - base);
            s[n][2 * r] = p0;
            s[n][2 * r + 1] = p1;
            l[r] += p0 + p1;
        }
    }
}

} // namespace swin_attn

#endif
