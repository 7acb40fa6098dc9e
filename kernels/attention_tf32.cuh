/* attention_tf32.cuh - fused window attention of fp32 data on TF32 tensor cores, included by
 * attention.cu: in TF32 (precision tf32, SWIN_ATTN_IMPL_TF32) and, as "3xTF32" with fp32's
 * accuracy, for precision fp32 (SWIN_ATTN_IMPL_X3; the template flag X3, at the end of this
 * comment).
 *
 * One CTA (4 warps) = one (window, head) of a window of at most 64 tokens (Swin's 7x7 and 8x8
 * windows), head_dim 16, 32, 48 or 64; windows of 65 to 144 tokens (12x12) run on
 * attn_tf32_win_kernel at the end of this file; attention.cu runs anything else on the true-fp32
 * SIMT kernel (attention_simt.cuh), which TF32 permits. Q, K and V of the head are copied whole into
 * shared memory (16-byte cp.async, rows past N zero); a warp owns 16 query rows:
 *   S = Q K^T   mma.sync m16n8k8 tf32 (operands rounded to TF32 with cvt.rna, fp32 accumulate),
 *               then scale (V2: cosine), bias, shift mask and pad keys as the fp16 kernel does them;
 *   softmax     fp32 over the row's keys, all in registers (no online rescaling: 64 keys at most);
 *   O = P V     P straight from the S registers. An m16n8 accumulator holds keys 2t and 2t+1 of
 *               its 8 where the A operand of m16n8k8 wants keys t and t+4, so the k index of the
 *               P V product is permuted instead (k = t <-> key 2t, k = t + 4 <-> key 2t + 1), with
 *               the V rows read in the same order: the sum over keys does not depend on it.
 * Fragments are read from shared memory with 32-bit loads; rows are HD + 4 floats apart, which
 * makes the loads of Q and K (lane = 4 row + column) and of V (rows 2t, 2t+1, column g) hit 32
 * different banks.
 * The two kernels share their steps as functions (tf32_stage, tf32_query, tf32_qk_tile,
 * tf32_score, tf32_pv_tile, tf32_store); they differ in the softmax (whole rows here, an online
 * one over key blocks there). Written so that the compiled kernels are what they were as two
 * separate bodies (the SASS of every instantiation compared identical when the steps moved out);
 * adding the X3 flag left the TF32 (X3 false) instantiations' PTX identical to before.
 * Numerics: TF32 keeps 10 mantissa bits, as fp16 does, so the error is that of the fp16 kernel's
 * rounded P; the inputs keep fp32's range.
 * X3 (3xTF32): every operand value x of both products (Q, K, P, V) is split in registers into a
 * TF32 head h = rna_tf32(x) and a TF32 tail l = rna_tf32(x - h) (split_tf32; x - h is exact), and
 * each product is summed as a_l b_h + a_h b_l + a_h b_h; the dropped a_l b_l and the tail's
 * rounding leave about 3 x 2^-22 |a b| a product, fp32's own rounding. The tensor cores' fp32
 * accumulation truncates (gemm_x3.cu measured it), so the small products are not added to the
 * large running sums: S takes all tail products of a key tile first, then the head products
 * (a chain of HD / 8 truncating additions to large values, not 3 HD / 8), and O collects the
 * tail products of P V in an accumulator of their own (ol), added to O's head products (o) in
 * fp32 at the end (the 12x12 kernel: after each key block, before the online softmax rescales O).
 * A non-finite input gives NaN (its tail is inf - inf). Against the true-fp32 SIMT kernel this
 * runs a head on the tensor cores at three TF32 products' cost; the measurements are in
 * attention.cu (launch_tf32).
 * Test: tests/test_gpu_attention.c (impls "tf32" and "x3"; x3 also on inputs that are not exact
 * in TF32, against the fp32 tolerance).
 */
#ifndef SWIN_ATTENTION_TF32_CUH
#define SWIN_ATTENTION_TF32_CUH

#include "attention_common.cuh"

namespace swin_attn {

struct Tf32Tiles {
    static constexpr int kWarps = 4;    // a warp per 16 query rows
    static constexpr int kKeys = 64;    // keys (and query rows) of a window, at most
    static constexpr int kPad = 4;      // row padding in floats: HD + 4 = 4 x odd (conflict-free)
};

/* head_dims the TF32 kernel is built for (head_dim == HD exactly) */
__host__ __device__ constexpr bool tf32_width(int hd) { return hd == 16 || hd == 32 || hd == 48 || hd == 64; }

/* windows of 65 to 144 tokens (Swin-B/L 384's 12x12): attn_tf32_win_kernel below */
struct Tf32WinTiles {
    static constexpr int kWarps = 9;    // a warp per 16 query rows
    static constexpr int kKeys = 144;   // keys (and query rows) of a window, at most
    static constexpr int kBlock = 6;    // key tiles of 8 per online-softmax step (144 = 3 x 48)
};

/* shared-memory layout (bytes): Q, K, V [keys][HD + 4] floats, kinfo [keys], 1/|k| [keys],
 * bias [nb]; keys: Tf32Tiles::kKeys or Tf32WinTiles::kKeys */
struct Tf32Smem {
    int q, k, v, kinfo, rk, bias, total;
    __host__ __device__ Tf32Smem(int hd, int nb, int keys = Tf32Tiles::kKeys) {
        const int mat = keys * (hd + Tf32Tiles::kPad) * 4;
        q = 0;
        k = q + mat;
        v = k + mat;
        kinfo = v + mat;
        rk = kinfo + keys * 4;
        bias = rk + keys * 4;
        total = bias + nb * 4;
    }
};

__device__ __forceinline__ uint32_t to_tf32(float x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}

/* x = hi + lo to about 2^-22 |x|: hi = x rounded to TF32 (swin_tf32_rna: x - hi is exact in
 * fp32), lo = x - hi rounded to TF32; as mma operand bits */
__device__ __forceinline__ void split_tf32(float x, uint32_t &hi, uint32_t &lo) {
    const float h = swin_tf32_rna(x);
    hi = __float_as_uint(h);
    lo = to_tf32(x - h);
}

/* d[4] += a[4] (16x8, row) * b (8x8, col): TF32 operands, fp32 accumulate */
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* 1 / max(|row|, 1e-12) of an smem row of HD floats (V2's cosine attention) */
template <int HD>
__device__ __forceinline__ float inv_norm_f32(const float *row) {
    float ss = 0.f;
#pragma unroll
    for (int c = 0; c < HD; c++) ss = fmaf(row[c], row[c], ss);
    return 1.0f / fmaxf(sqrtf(ss), 1e-12f);
}

// ---- what both TF32 kernels do: stage the head, set up the query rows, score / apply a key
// tile of 8, store

/* the head's shared memory: Q, K, V rows, 1 / |k| (V2), the bias table and the key table at
 * Tf32Smem's offsets */
struct Tf32Shared {
    float *qs, *ks, *vs, *rk, *bias;
    int *kinfo;
    __device__ __forceinline__ Tf32Shared(unsigned char *smem, const Tf32Smem &L)
        : qs(reinterpret_cast<float *>(smem + L.q)), ks(reinterpret_cast<float *>(smem + L.k)),
          vs(reinterpret_cast<float *>(smem + L.v)), rk(reinterpret_cast<float *>(smem + L.rk)),
          bias(reinterpret_cast<float *>(smem + L.bias)), kinfo(reinterpret_cast<int *>(smem + L.kinfo)) {}
};

/* q, k, v rows of the head into shared memory (rows >= N zero-filled, so that pad keys' P (0) x V
 * stays 0), the key tables (stage_tables) and, for V2, 1 / max(|k|, 1e-12) of every key row in
 * fp32; ends with a barrier */
template <int HD, int KEYS, int NTHR>
__device__ __forceinline__ void tf32_stage(const AttnIO<float> &a, const Geom &g, const Tf32Shared &sh, int w, int h,
                                           int wy, int wx, int tid) {
    constexpr int LD = HD + Tf32Tiles::kPad, CPR = HD / 4;
    float *qs = sh.qs, *ks = sh.ks, *vs = sh.vs, *rk = sh.rk;
    const size_t ldg = (size_t)3 * g.C;
    const float *src = a.qkv + (size_t)w * g.N * ldg + (size_t)h * HD;
    for (int i = tid; i < 3 * KEYS * CPR; i += NTHR) {
        const int m = i / (KEYS * CPR), r = (i / CPR) % KEYS, c = (i % CPR) * 4;
        const bool ok = r < g.N;
        float *dst = (m == 0 ? qs : m == 1 ? ks : vs) + r * LD + c;
        cp_async16(dst, src + (size_t)(ok ? r : 0) * ldg + m * g.C + c, ok);
    }
    cp_async_commit();
    stage_tables(sh.kinfo, KEYS, sh.bias, a.bias_table, h, kLog2e, g, wy, wx, tid, NTHR);
    cp_async_wait_all();
    __syncthreads();
    if (a.v2) {
        for (int j = tid; j < KEYS; j += NTHR) rk[j] = inv_norm_f32<HD>(ks + j * LD);
        __syncthreads();
    }
}

/* Q's tail fragments: X3 only (one unused row otherwise) */
template <int HD, bool X3>
using QTail = uint32_t[X3 ? HD / 8 : 1][4];

/* Q A-fragments of a warp's query rows r0 + gq (+ 8), rows HD + 4 floats apart (X3: heads qa,
 * tails ql) */
template <int HD, bool X3>
__device__ __forceinline__ void tf32_q_frags(const float *qs, int r0, int gq, int t4, uint32_t (&qa)[HD / 8][4],
                                             QTail<HD, X3> &ql) {
    constexpr int LD = HD + Tf32Tiles::kPad;
#pragma unroll
    for (int kk = 0; kk < HD / 8; kk++) {
        const float *p = qs + (r0 + gq) * LD + kk * 8 + t4;
        if constexpr (X3) {
            const float x[4] = {p[0], p[8 * LD], p[4], p[8 * LD + 4]};
#pragma unroll
            for (int i = 0; i < 4; i++) split_tf32(x[i], qa[kk][i], ql[kk][i]);
        } else {
            qa[kk][0] = to_tf32(p[0]);
            qa[kk][1] = to_tf32(p[8 * LD]);
            qa[kk][2] = to_tf32(p[4]);
            qa[kk][3] = to_tf32(p[8 * LD + 4]);
        }
    }
}

/* a warp's query rows r0 + gq (+ 8): Q A-fragments (tf32_q_frags), the rows' scale (V2: / |q|),
 * bias base and region */
template <int HD, bool X3>
__device__ __forceinline__ void tf32_query(const AttnIO<float> &a, const Geom &g, const float *qs, const int *kinfo,
                                           int h, int r0, int gq, int t4, uint32_t (&qa)[HD / 8][4],
                                           QTail<HD, X3> &ql, float (&sc)[2], int (&qb)[2], int (&qr)[2]) {
    constexpr int LD = HD + Tf32Tiles::kPad;
    tf32_q_frags<HD, X3>(qs, r0, gq, t4, qa, ql);
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = r0 + gq + 8 * r;
        const float rq = a.v2 ? inv_norm_f32<HD>(qs + row * LD) : 1.f;
        sc[r] = __ldg(a.scale + h) * kLog2e * rq;
        const int info = kinfo[row];   // rows past N read as token 0; never stored
        qb[r] = info_qbase(g, info);
        qr[r] = info_region(info);
    }
}

/* s += Q K^T of key tile n (keys 8 n ..); X3: the tail products of every k step first, then the
 * head products */
template <int HD, bool X3>
__device__ __forceinline__ void tf32_qk_tile(float (&s)[4], const uint32_t (&qa)[HD / 8][4], const QTail<HD, X3> &ql,
                                             const float *ks, int n, int gq, int t4) {
    constexpr int LD = HD + Tf32Tiles::kPad;
    if constexpr (X3) {
        uint32_t bh[HD / 8][2], bl[HD / 8][2];
#pragma unroll
        for (int kk = 0; kk < HD / 8; kk++) {
            const float *p = ks + (n * 8 + gq) * LD + kk * 8 + t4;
            split_tf32(p[0], bh[kk][0], bl[kk][0]);
            split_tf32(p[4], bh[kk][1], bl[kk][1]);
            mma_tf32(s, ql[kk], bh[kk][0], bh[kk][1]);
            mma_tf32(s, qa[kk], bl[kk][0], bl[kk][1]);
        }
#pragma unroll
        for (int kk = 0; kk < HD / 8; kk++) mma_tf32(s, qa[kk], bh[kk][0], bh[kk][1]);
    } else {
#pragma unroll
        for (int kk = 0; kk < HD / 8; kk++) {
            const float *p = ks + (n * 8 + gq) * LD + kk * 8 + t4;
            mma_tf32(s, qa[kk], to_tf32(p[0]), to_tf32(p[4]));
        }
    }
}

/* The scores of a row pair's keys j, j + 1 (s of a tile holding keys < N, else all -inf) into the
 * log2 domain: s * scale sc (V2: / |k|) + bias (the rows' bases br0, br1), shift mask (rows'
 * regions qr), -inf for pad keys */
__device__ __forceinline__ void tf32_score(float (&s)[4], bool tile_ok, int j, const AttnIO<float> &a, const Geom &g,
                                          const int *kinfo, const float *rk, const float (&sc)[2], const float *br0,
                                          const float *br1, bool masked, float mask, const int (&qr)[2]) {
    if (tile_ok) {
        const int k0 = kinfo[j], k1 = kinfo[j + 1];
        if (a.v2) {
            const float q0 = rk[j], q1 = rk[j + 1];
            s[0] *= q0, s[1] *= q1, s[2] *= q0, s[3] *= q1;
        }
        s[0] = fmaf(s[0], sc[0], br0[-info_koff(k0)]);
        s[1] = fmaf(s[1], sc[0], br0[-info_koff(k1)]);
        s[2] = fmaf(s[2], sc[1], br1[-info_koff(k0)]);
        s[3] = fmaf(s[3], sc[1], br1[-info_koff(k1)]);
        if (masked) {
            const int g0 = info_region(k0), g1 = info_region(k1);
            if (g0 != qr[0]) s[0] += mask;
            if (g1 != qr[0]) s[1] += mask;
            if (g0 != qr[1]) s[2] += mask;
            if (g1 != qr[1]) s[3] += mask;
        }
        if (j >= g.N) s[0] = s[2] = -INFINITY;
        if (j + 1 >= g.N) s[1] = s[3] = -INFINITY;
    } else {
        s[0] = s[1] = s[2] = s[3] = -INFINITY;
    }
}

/* O's accumulators: heads' products o, and for X3 the tail products ol (one unused tile otherwise) */
template <int HD, bool X3>
using OTail = float[X3 ? HD / 8 : 1][4];

/* o += P V of key tile n, k permuted: A = {P[g][2t], P[g+8][2t], P[g][2t+1], P[g+8][2t+1]},
 * B = {V[8n + 2t][col g], V[8n + 2t + 1][col g]}; X3: the tail products into ol */
template <int HD, bool X3>
__device__ __forceinline__ void tf32_pv_tile(float (&o)[HD / 8][4], OTail<HD, X3> &ol, const float (&s)[4],
                                             const float *vs, int n, int gq, int t4) {
    constexpr int LD = HD + Tf32Tiles::kPad;
    const float *p = vs + (n * 8 + 2 * t4) * LD + gq;
    if constexpr (X3) {
        const float x[4] = {s[0], s[2], s[1], s[3]};
        uint32_t ph[4], pl[4];
#pragma unroll
        for (int i = 0; i < 4; i++) split_tf32(x[i], ph[i], pl[i]);
#pragma unroll
        for (int c = 0; c < HD / 8; c++) {
            uint32_t b0h, b0l, b1h, b1l;
            split_tf32(p[c * 8], b0h, b0l);
            split_tf32(p[LD + c * 8], b1h, b1l);
            mma_tf32(ol[c], pl, b0h, b1h);
            mma_tf32(ol[c], ph, b0l, b1l);
            mma_tf32(o[c], ph, b0h, b1h);
        }
    } else {
        const uint32_t pa[4] = {to_tf32(s[0]), to_tf32(s[2]), to_tf32(s[1]), to_tf32(s[3])};
#pragma unroll
        for (int c = 0; c < HD / 8; c++) mma_tf32(o[c], pa, to_tf32(p[c * 8]), to_tf32(p[LD + c * 8]));
    }
}

/* o and ol zeroed */
template <int HD, bool X3>
__device__ __forceinline__ void tf32_o_zero(float (&o)[HD / 8][4], OTail<HD, X3> &ol) {
#pragma unroll
    for (int c = 0; c < HD / 8; c++) o[c][0] = o[c][1] = o[c][2] = o[c][3] = 0.f;
#pragma unroll
    for (int c = 0; c < (X3 ? HD / 8 : 1); c++) ol[c][0] = ol[c][1] = ol[c][2] = ol[c][3] = 0.f;
}
/* X3: o += ol (the tail products) and ol = 0, before a rescale or the store; nothing otherwise */
template <int HD, bool X3>
__device__ __forceinline__ void tf32_o_merge(float (&o)[HD / 8][4], OTail<HD, X3> &ol) {
    if constexpr (X3) {
#pragma unroll
        for (int c = 0; c < HD / 8; c++)
#pragma unroll
            for (int i = 0; i < 4; i++) o[c][i] += ol[c][i], ol[c][i] = 0.f;
    }
}

/* normalise, store rows < N: row gq (+8), columns 8c + 2t, +1 */
template <int HD>
__device__ __forceinline__ void tf32_store(const AttnIO<float> &a, const Geom &g, const float (&o)[HD / 8][4],
                                           const float (&l)[2], int w, int h, int r0, int gq, int t4) {
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = r0 + gq + 8 * r;
        if (row >= g.N) continue;
        const float inv = 1.0f / l[r];
        float *dst = a.out + ((size_t)w * g.N + row) * g.C + (size_t)h * HD + 2 * t4;
#pragma unroll
        for (int c = 0; c < HD / 8; c++)
            *reinterpret_cast<float2 *>(dst + c * 8) = make_float2(o[c][2 * r] * inv, o[c][2 * r + 1] * inv);
    }
}

// ---- the kernels

template <int HD, bool X3>
__global__ void __launch_bounds__(Tf32Tiles::kWarps * 32) attn_tf32_kernel(AttnIO<float> a) {
    swin_pdl_begin();
    constexpr int NT = Tf32Tiles::kKeys / 8, nthr = Tf32Tiles::kWarps * 32;
    extern __shared__ __align__(16) unsigned char smem[];
    const Geom &g = a.g;
    const Tf32Smem L(HD, g.nb);
    const Tf32Shared sh(smem, L);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, t4 = lane & 3;
    const int w = g.div_heads.div(blockIdx.x), h = g.div_heads.mod(blockIdx.x, w);
    int wy, wx;
    window_pos(g, w, &wy, &wx);

    tf32_stage<HD, Tf32Tiles::kKeys, nthr>(a, g, sh, w, h, wy, wx, tid);
    const int r0 = warp * 16;
    if (r0 >= g.N) return;   /* no barrier below */

    uint32_t qa[HD / 8][4];
    QTail<HD, X3> ql;
    float sc[2];
    int qb[2], qr[2];
    tf32_query<HD, X3>(a, g, sh.qs, sh.kinfo, h, r0, gq, t4, qa, ql, sc, qb, qr);

    /* S = Q K^T for the key tiles that hold keys < N (uniform) */
    const int nkt = (g.N + 7) / 8;
    float s[NT][4];
#pragma unroll
    for (int n = 0; n < NT; n++) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        if (n < nkt) tf32_qk_tile<HD, X3>(s[n], qa, ql, sh.ks, n, gq, t4);
    }

    /* log2-domain scores: s * scale (V2: / |k|) + bias, shift mask, pad keys; then the row max */
    const bool masked = window_masked(g, wy, wx);
    const float mask = kMask * kLog2e;
    const float *br0 = sh.bias + qb[0], *br1 = sh.bias + qb[1];
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < NT; n++) {
        tf32_score(s[n], n < nkt, n * 8 + 2 * t4, a, g, sh.kinfo, sh.rk, sc, br0, br1, masked, mask, qr);
        mx[0] = fmaxf(mx[0], fmaxf(s[n][0], s[n][1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[n][2], s[n][3]));
    }
    float l[2] = {0.f, 0.f};
#pragma unroll
    for (int r = 0; r < 2; r++) {   /* a row's scores live in the 4 lanes of a quad */
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
#pragma unroll
        for (int n = 0; n < NT; n++) {
            const float p0 = fast_exp2(s[n][2 * r] - mx[r]), p1 = fast_exp2(s[n][2 * r + 1] - mx[r]);
            s[n][2 * r] = p0, s[n][2 * r + 1] = p1;
            l[r] += p0 + p1;
        }
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }

    /* O = P V, k permuted (tf32_pv_tile) */
    float o[HD / 8][4];
    OTail<HD, X3> ol;
    tf32_o_zero<HD, X3>(o, ol);
#pragma unroll
    for (int n = 0; n < NT; n++) {
        if (n < nkt) tf32_pv_tile<HD, X3>(o, ol, s[n], sh.vs, n, gq, t4);
    }
    tf32_o_merge<HD, X3>(o, ol);

    tf32_store<HD>(a, g, o, l, w, h, r0, gq, t4);
}

/* Windows of 65 to 144 tokens: 9 warps, a warp per 16 query rows, Q, K and V of the head in
 * shared memory as above; the keys in blocks of Tf32WinTiles::kBlock tiles of 8 with an online
 * softmax between blocks (the running max m and sum l rescale O: online_softmax_step, as the fp16
 * kernel does); the scores of a block as in attn_tf32_kernel.
 * Against the true-fp32 kernel these windows ran on before (SWIN_ATTN_TF32_WIN=0), measured on the
 * H200 (2026-11-26, SWIN_ATTN_TF32_WIN=E build/swin bench --arch swin_base_patch4_window12_384
 * --precision tf32 --batch 1,64 -n 10, E = 0 / default): batch 1 2.293 / 1.716 ms, batch 64
 * 1,013 / 1,803 img/s; attention ops at batch 64 37.0 / 7.0 ms, 0.71x / 3.72x of unfused.
 * X3 runs one CTA an SM at head_dim 32 (130 registers; bounded to two CTAs, ptxas spilled 124 bytes
 * at 96). */
template <int HD, bool X3>
__global__ void __launch_bounds__(Tf32WinTiles::kWarps * 32, HD <= 32 && !X3 ? 2 : 1)
    attn_tf32_win_kernel(AttnIO<float> a) {
    swin_pdl_begin();
    constexpr int KEYS = Tf32WinTiles::kKeys, NB = Tf32WinTiles::kBlock, nthr = Tf32WinTiles::kWarps * 32;
    extern __shared__ __align__(16) unsigned char smem[];
    const Geom &g = a.g;
    const Tf32Smem L(HD, g.nb, KEYS);
    const Tf32Shared sh(smem, L);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, t4 = lane & 3;
    const int w = g.div_heads.div(blockIdx.x), h = g.div_heads.mod(blockIdx.x, w);
    int wy, wx;
    window_pos(g, w, &wy, &wx);

    tf32_stage<HD, KEYS, nthr>(a, g, sh, w, h, wy, wx, tid);
    const int r0 = warp * 16;
    if (r0 >= g.N) return;   /* no barrier below */

    uint32_t qa[HD / 8][4];
    QTail<HD, X3> ql;
    float sc[2], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
    int qb[2], qr[2];
    tf32_query<HD, X3>(a, g, sh.qs, sh.kinfo, h, r0, gq, t4, qa, ql, sc, qb, qr);
    float o[HD / 8][4];
    OTail<HD, X3> ol;
    tf32_o_zero<HD, X3>(o, ol);
    const bool masked = window_masked(g, wy, wx);
    const float mask = kMask * kLog2e;
    const float *br0 = sh.bias + qb[0], *br1 = sh.bias + qb[1];
    const int nkt = (g.N + 7) / 8;   // key tiles that hold keys < N

    for (int kb = 0; kb < nkt; kb += NB) {
        /* S = Q K^T of the block's key tiles (tiles past nkt: -inf) */
        float s[NB][4];
#pragma unroll
        for (int n = 0; n < NB; n++) {
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
            if (kb + n < nkt) tf32_qk_tile<HD, X3>(s[n], qa, ql, sh.ks, kb + n, gq, t4);
        }
        /* log2-domain scores: s * scale (V2: / |k|) + bias, shift mask, pad keys; the block max */
        float bmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int n = 0; n < NB; n++) {
            tf32_score(s[n], kb + n < nkt, (kb + n) * 8 + 2 * t4, a, g, sh.kinfo, sh.rk, sc, br0, br1, masked, mask, qr);
            bmax[0] = fmaxf(bmax[0], fmaxf(s[n][0], s[n][1]));
            bmax[1] = fmaxf(bmax[1], fmaxf(s[n][2], s[n][3]));
        }
        online_softmax_step(m, l, o, s, bmax);
        /* O += P V, k permuted as in attn_tf32_kernel; X3: the block's tail products into O
         * before the next rescale */
#pragma unroll
        for (int n = 0; n < NB; n++) {
            if (kb + n < nkt) tf32_pv_tile<HD, X3>(o, ol, s[n], sh.vs, kb + n, gq, t4);
        }
        tf32_o_merge<HD, X3>(o, ol);
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }

    tf32_store<HD>(a, g, o, l, w, h, r0, gq, t4);
}

} // namespace swin_attn

#endif
