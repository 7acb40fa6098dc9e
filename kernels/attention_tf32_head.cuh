/* attention_tf32_head.cuh - fused window attention of fp32 data on TF32 tensor cores for windows
 * of 49 to 64 tokens (7x7, 8x8) with head_dim 32, V1 and V2: attention_head.cuh's scheme (a head
 * per CTA, its relative-position bias in registers, the CTA walking windows with the next
 * window's rows copied while the current one computes) on attention_tf32.cuh's TF32 steps.
 * Included by attention.cu, which takes it for precision tf32 (not for 3xTF32) unless
 * SWIN_ATTN_TF32_HEAD=0 (then attn_tf32_kernel, a CTA per (window, head), runs them).
 *
 * Why: attn_tf32_kernel stages a (window, head) per CTA: its Q, K, V, the window's token table and
 * the head's bias table, then one barrier, then the MMAs, with nothing in flight while it computes;
 * per score it looks the bias up in shared memory (an index load, an address, a load, an FMA).
 * On Swin-T tf32 at batch 256 its 12 launches took 3.31 of 18.98 ms (--breakdown, H200), 2.6 times
 * the fp16 head kernel's 1.26 for twice the bytes. Here, as in the fp16 head kernel, each warp
 * looks the bias of its 16 query rows and all keys up once per head (bias' [row, key], -inf for
 * pad keys), and the scores of a window are one MMA chain starting from it:
 *   V1: D = Q K^T + bias / scale (+ mask / scale on the shifted border), log2-domain D scale log2(e)
 *   V2: D = Q K^T, then D / (|q| |k|) scale log2(e) + bias log2(e) (+ mask log2(e))
 * and the softmax is one pass over the window's keys (max, exp2, sum; no rescaling).
 * TF32 steps (attention_tf32.cuh): m16n8k8 with operands rounded by cvt.rna (tf32_qk_tile), P V
 * with the k index permuted (tf32_pv_tile), the output stored by tf32_store; rows HD + 4 floats
 * apart as there (conflict-free fragment loads). Numerics are the TF32 kernel's: only the order of
 * the bias and scale operations differs (fp32 rounding).
 * Shared memory: two buffers of {Q, K, V rows, key regions} (27.9 KB each) and V2's 1 / |k|:
 * 56 KB a CTA, 4 CTAs an SM (the opt-in above 48 KB). Registers: 128 (V1) and 124 (V2), no spills.
 * The measurements below ran the first form of this kernel, whose V1 spilled 24 bytes and which
 * guarded its body with warp < tiles (always true here: 4 warps, 4 query tiles), for which ptxas
 * also built a divergent copy of the shuffles; the steps it shares with attn_head_kernel are now
 * attention_head.cuh's head_* functions (not re-timed since).
 * Measured on the H200 (2026-11-28, one build, SWIN_ATTN_TF32_HEAD=0 / default in one run,
 * `swin bench --precision tf32 --iters 20`, median ms; the attention ops alone, the bench's
 * `attn fused` column, in brackets; two runs at Swin-T batch 256):
 *   Swin-T     batch 1      0.615 (0.076)  ->  0.593 (0.068)
 *              batch 64     4.562 (0.667)  ->  4.462 (0.583)
 *              batch 256   16.710 (2.648)  -> 16.121 (2.325)   15,320 -> 15,880 img/s
 *                          16.479 (2.527)  -> 16.150 (2.156)   15,535 -> 15,851 img/s
 *   SwinV2-T   batch 256   21.390 (3.562)  -> 21.026 (2.870)   11,968 -> 12,176 img/s
 * Verify (tools/gpu_check.sh, every fixture: 205 of 205 pass): the random full-size Swin-T in tf32
 * against timm 6.7e-4 (attn_tf32_kernel: 7.0e-4), SwinV2-T 9.6e-4 (9.5e-4), top-1 4/4 each;
 * racecheck and memcheck of test_gpu_attention: 0 errors.
 * Test: tests/test_gpu_attention.c (impl "tf32" on the head_dim-32 windows of 49 to 64 tokens:
 * Swin-T-like and SwinV2-T-like, shifted, and the "many" cases whose CTAs walk several windows);
 * test_gpu_attention_tf32head0 runs attn_tf32_kernel there instead.
 */
#ifndef SWIN_ATTENTION_TF32_HEAD_CUH
#define SWIN_ATTENTION_TF32_HEAD_CUH

#include "attention_head.cuh"
#include "attention_tf32.cuh"

namespace swin_attn {

/* shared memory, byte offsets: two buffers of {Q, K, V rows, key regions}, then V2's 1/|k| */
struct Tf32HeadSmem {
    static constexpr int LD = HeadTiles::kHd + Tf32Tiles::kPad;              // floats a row
    static constexpr int kMat = HeadTiles::kMaxN * LD * 4;                   // one matrix of a window
    static constexpr int kBuf = 3 * kMat + HeadTiles::kMaxN * 4;             // Q, K, V, regions
    static constexpr int kRk = 2 * kBuf;
    static constexpr int kTotal = kRk + HeadTiles::kMaxN * 4;
};

struct Tf32HeadArgs : AttnIO<float> {   // a window's 4 query tiles are the CTA's 4 warps
    int nwin;    // windows B*nW
};

template <bool V2>
__global__ void __launch_bounds__(HeadTiles::kWarps * 32, HeadTiles::kMinCtas)
attn_tf32_head_kernel(Tf32HeadArgs a) {
    swin_pdl_begin();
    constexpr int HD = HeadTiles::kHd, LD = Tf32HeadSmem::LD, NT = HeadTiles::kMaxN / 8;   // NT: key tiles of 8
    constexpr int nthr = HeadTiles::kWarps * 32;
    extern __shared__ __align__(16) unsigned char smem[];
    const Geom &g = a.g;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tid = threadIdx.x, gq = lane >> 2, t4 = lane & 3;
    const int h = blockIdx.y, r0 = warp * Tiles::kRows, nkt = (g.N + 7) / 8;
    const HeadScale hs = head_scale<V2>(a.scale, h);
    const float sc = hs.sc, bmul = hs.bmul, mask = hs.mask;

    /* this lane's bias' (rows r0 + gq, + 8; keys 8 n + 2 t4, + 1), in the accumulator layout */
    float bias[NT][4];
    head_bias<NT>(bias, g, a.bias_table, h, r0 + gq, t4, bmul);

    /* window w's rows into buffer b */
    auto issue = [&](int w, int b) {
        head_issue<float, HD, LD, Tf32HeadSmem::kMat, nthr>(smem + b * Tf32HeadSmem::kBuf, a.qkv, g, w, h, tid);
    };

    int w = blockIdx.x, b = 0;
    if (w < a.nwin) issue(w, 0);
    for (; w < a.nwin; w += gridDim.x, b ^= 1) {
        head_next(issue, w, b, a.nwin);
        const unsigned char *buf = smem + b * Tf32HeadSmem::kBuf;
        const float *qs = reinterpret_cast<const float *>(buf);
        const float *ks = reinterpret_cast<const float *>(buf + Tf32HeadSmem::kMat);
        const float *vs = reinterpret_cast<const float *>(buf + 2 * Tf32HeadSmem::kMat);
        float *rk = reinterpret_cast<float *>(smem + Tf32HeadSmem::kRk);
        if constexpr (V2) {   /* 1 / |k| of the window's keys (pad keys: zero rows, their scores -inf) */
            if (tid < HeadTiles::kMaxN) rk[tid] = inv_norm_f32<HD>(ks + tid * LD);
            __syncthreads();
        }
        int wy, wx;
        window_pos(g, w, &wy, &wx);
        const bool masked = window_masked(g, wy, wx);
        const int *reg = reinterpret_cast<const int *>(buf + 3 * Tf32HeadSmem::kMat);
        uint32_t qa[HD / 8][4];
        QTail<HD, false> ql;
        tf32_q_frags<HD, false>(qs, r0, gq, t4, qa, ql);
        /* S: key tiles past the window's keys are left as they start (V1: -inf; V2: 0, then -inf
         * from the bias) */
        float s[NT][4];
        float ssc = sc;   /* the softmax's factor from s to the log2 domain */
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) s[n][i] = V2 ? 0.f : bias[n][i];
        if (!V2 && masked) head_mask<NT>(s, s, reg, r0 + gq, t4, mask);
#pragma unroll
        for (int n = 0; n < NT; n++)
            if (n < nkt) tf32_qk_tile<HD, false>(s[n], qa, ql, ks, n, gq, t4);
        if constexpr (V2) {
            const float rq = inv_norm_f32<HD>(qs + (r0 + (lane & 15)) * LD);
            head_cosine<NT>(s, bias, rk, t4, sc * __shfl_sync(0xffffffffu, rq, gq),
                            sc * __shfl_sync(0xffffffffu, rq, gq + 8));
            if (masked) head_mask<NT>(s, s, reg, r0 + gq, t4, mask);
            ssc = 1.0f;
        }
        float l[2];
        head_softmax<NT>(s, ssc, l);
        l[0] = swin_quad_sum(l[0]), l[1] = swin_quad_sum(l[1]);
        /* O = P V, k permuted (tf32_pv_tile) */
        float o[HD / 8][4];
        OTail<HD, false> ol;
        tf32_o_zero<HD, false>(o, ol);
#pragma unroll
        for (int n = 0; n < NT; n++)
            if (n < nkt) tf32_pv_tile<HD, false>(o, ol, s[n], vs, n, gq, t4);
        tf32_store<HD>(a, g, o, l, w, h, r0, gq, t4);
        __syncthreads();   // every warp is done with buffer b before the next iteration refills it
    }
}

} // namespace swin_attn

#endif
