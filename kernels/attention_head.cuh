/* attention_head.cuh - fused window attention for windows of 49 to 64 tokens (7x7, 8x8) with head_dim
 * 32, fp16/bf16, V1 and V2: a head per CTA with its relative-position bias in registers; included
 * by attention.cu, which takes it for V1 and V2 unless SWIN_ATTN_HEAD says otherwise (0: neither,
 * attention_mma.cuh's kernel runs them; 1: V1 only; attention.cu, head_mode).
 *
 * Why: attention_mma.cuh's kernel (one CTA per (window, head)) is issue-bound (ncu, H200, Swin-T
 * fp16 batch 256, stage 1: 80% of the issue slots used, DRAM 31%): per score it spends an add, a
 * shared load and an FMA on the bias lookup, and per CTA it stages the head's bias table and the
 * window's token tables. Here a CTA keeps one head and walks windows (blockIdx.x, + gridDim.x,
 * ...), so each warp looks its bias up once, for its 16 query rows and every key, and holds it in
 * registers for all its windows:
 *   bias' [row, key] = bias[rel(row, key)] / scale       (-inf for pad keys, key >= N)
 * The scores are then one mma with bias' as the accumulator's initial value,
 *   D = Q K^T + bias'          and   log2-domain score = D * scale * log2(e),
 * so the bias costs no instruction per score, the pad keys none either, and with all keys of the
 * window in one block the softmax is a single pass (max, then exp2(D sc - max sc), no rescaling).
 * Windows on the shifted border add mask / scale where the regions of row and key differ (the
 * regions staged per window in shared memory, only for those windows).
 * V2 (cosine attention, V2 template flag): the MMA starts from zero and each score is then
 * (q.k) / (|q| |k|) scale log2(e) + bias log2(e) (+ mask log2(e)), as attention_mma.cuh computes
 * it: 1/|k| of the window's keys in shared memory (a second barrier a window), 1/|q| of the lane's
 * two rows from its tile's Q rows.
 * Pipeline: the Q, K, V rows of the next window are copied (cp.async) into the other of two
 * buffers while the current window computes; two CTA barriers a window (its rows have arrived;
 * every warp is done with the buffer before it is refilled).
 * A warp owns query tile `warp` (rows 16 warp ..); the output goes through tile_end
 * (attention_mma.cuh), with its E4M3 copy for an FP8 proj.
 * Registers: 128 a thread (the bias 32, the scores 32, O 16; no spills), so 4 CTAs an SM.
 * Measured (H100, 2026-11-27, one build, SWIN_ATTN_HEAD=0 / 1 in one run, `swin bench -n 30`,
 * Swin-T, two runs each): attention ops at batch 256 (all blocks, the bench's column) 1.606 /
 * 1.599 -> 1.380 / 1.387 ms (--breakdown: 1.685 -> 1.467); end to end fp16 batch 256 10.047 /
 * 10.097 -> 9.895 / 9.911 ms, batch 64 2.768 / 2.748 -> 2.723 / 2.711, batch 1 and 8 within
 * noise; bf16 batch 256 9.905 -> 9.762; fp8 batch 256 9.037 -> 8.651 ms (28,328 -> 29,591
 * img/s), batch 64 2.605 -> 2.518. ncu, stage 1 at batch 256: 274 us, DRAM 67% of the H100's
 * bandwidth, issue slots 47% busy, half the cycles without an eligible warp at 3.8 warps a
 * scheduler: latency-bound at this occupancy (the old kernel on an H200: 407 us, issue slots 80%
 * busy, DRAM 31%). Verify (fixtures, H100): fp16 5.3e-4, bf16 5.0e-3, as with the old kernel;
 * tools/gpu_check.sh's random full-size Swin-T against timm (H200): fp16 8.8e-4 (old kernel
 * 8.0e-4), bf16 7.7e-3 (7.7e-3), top-1 4/4.
 * Not yet: other head_dims and windows (the (window, head) kernel runs them).
 * Measured with V2 (H200, 2026-11-27, SWIN_ATTN_HEAD=0 / 2 in one run, `swin bench -n 20`, two
 * runs each): SwinV2-T fp16 batch 256 12.155 / 12.111 -> 11.837 / 11.805 ms, batch 64 3.266 /
 * 3.243 -> 3.166 / 3.153 ms, bf16 batch 256 11.856 -> 11.526 ms; attention ops 1.878 / 1.897 ->
 * 1.576 / 1.587 ms (--breakdown 2.014 -> 1.629). Swin-T in the same runs: fp16 batch 256 9.248 /
 * 9.289 -> 8.908 / 8.862 ms (27,682 -> 28,887 img/s), batch 64 2.527 / 2.533 -> 2.434 / 2.421
 * ms, batch 1 and 8 within noise; attention ops 1.629 / 1.608 -> 1.219 / 1.214 ms; fp8 batch
 * 256 8.361 -> 7.912 ms (30,618 -> 32,355 img/s), batch 64 2.480 -> 2.384 ms.
 * The bias lookup, the window copy and the shift mask are functions (head_bias, head_issue,
 * head_mask) that attention_tf32_head.cuh's TF32 kernel shares; moving them out changed this
 * kernel's SASS only in a few integer address instructions (same MMAs, loads and MUFU ops; not
 * re-timed).
 * E4M3 q, k, v (Q8, swin_window_attention_e4m3_cuda; V1): FP8's qkv GEMM writes them as bytes,
 * q's channels carrying k's channel scales so that each head's scores are f[h] times sums of byte
 * products (src/fp8.h swin_fp8_qkv_scales). The CTA copies a window's bytes (half the fp16 rows'
 * traffic) into E4M3 staging buffers; once they have landed, each warp computes its scores straight
 * from the Q and K bytes with FP8 MMAs (m16n8k32: the whole head_dim in one, bias' = bias / (scale
 * f[h]) the accumulator's start) while the CTA dequantises V into fp16 rows (head_dequant_v: value
 * times its channel's fp16 scale, rounded once); after one barrier, P V as above. Given the bytes'
 * values as q and k, V's dequantised values and scale f[h], the fp16 kernel computes the same;
 * only the tensor cores' summation order of the exact products differs (test_gpu_attention's e4m3
 * cases: each output the fp16 kernel's or its fp16 neighbour).
 * The bytes' products are summed by the FP8 tensor cores' accumulator, which keeps 13 mantissa bits
 * (truncating; public measurements on Ada and Hopper): a score is off by up to 2^-12 of its terms'
 * magnitude, against E4M3's 2^-4 on each q and k value (test_gpu_attention's tolerance says how).
 * The first E4M3 version dequantised q and k as well (a scale per channel each, into fp16 rows, one
 * more barrier a window) and ran the fp16 MMAs. It needs per-channel q scales, which the scores'
 * factorisation replaced, so it is gone; the comparison in one run is against 16-bit q, k, v
 * (SWIN_FP8_QKV=0). Measured (H200, Swin-T fp8, tools/bench_ab.py two rounds, best medians,
 * SWIN_FP8_QKV=0 against E4M3 q, k, v, --breakdown all blocks): the first version (2026-11-29
 * 13:00) batch 256 7.037 / 6.908 ms (1.019x), 64 2.093 / 2.034 (1.029x), attention ops at 256
 * 1.226 / 1.328 ms; this one (later that day, another H200 session) batch 256 7.299 / 7.043 ms
 * (1.036x), 64 2.095 / 2.007 (1.044x), 8 0.616 / 0.612; attention ops at 256 1.240 / 1.262 ms, at
 * 64 0.380 / 0.380 (the qkv GEMM 1.174 / 0.998 and 0.401 / 0.329). A random full-size Swin-T
 * against timm in fp8: 8.2e-2 either way (tolerance 0.22).
 * Test: tests/test_gpu_attention.c (V1 and V2 here, E4M3 V1; test_gpu_attention_head1 V1 only,
 * test_gpu_attention_head0 neither).
 */
#ifndef SWIN_ATTENTION_HEAD_CUH
#define SWIN_ATTENTION_HEAD_CUH

#include "attention_mma.cuh"

namespace swin_attn {

struct HeadTiles {
    static constexpr int kHd = 32;       // head_dim (and tile width) of the kernel
    static constexpr int kMaxN = 64;     // padded window tokens (npad) the kernel is built for: windows
                                         // of 49 to 64 tokens (7x7, 8x8), 4 query tiles, 8 key tiles
    static constexpr int kWarps = 4;     // a warp per query tile
    static constexpr int kMinCtas = 4;   // CTAs per SM the registers are limited to reach
};

/* shared memory, byte offsets: two buffers of {Q, K, V rows, key regions}, then V2's 1/|k| of the
 * current window's keys, then a warp's O tile */
struct HeadSmem {
    static constexpr int LD = HeadTiles::kHd + Tiles::kPad;
    static constexpr int kMat = HeadTiles::kMaxN * LD * 2;                 // one matrix of a window
    static constexpr int kBuf = 3 * kMat + HeadTiles::kMaxN * 4;           // Q, K, V, regions
    static constexpr int kRk = 2 * kBuf;
    static constexpr int kStage = kRk + HeadTiles::kMaxN * 4;
    static constexpr int kTotal = kStage + HeadTiles::kWarps * Tiles::kRows * LD * 2;
    static_assert(kTotal <= 48 * 1024, "launch_head (attention.cu) launches without the opt-in to more");
};

/* The same with q, k, v in E4M3 (MmaArgs::deq, FP8's qkv GEMM writing them so; V1): two buffers
 * of the window's E4M3 rows {Q, K, V, key regions} (rows of 32 bytes), the fp16 V rows they
 * dequantise into (HeadSmem's stride), the head's 32 v scales (fp16), a warp's O tile */
struct HeadSmemQ8 {
    static constexpr int kMatQ = HeadTiles::kMaxN * HeadTiles::kHd;        // one E4M3 matrix of a window
    static constexpr int kBuf = 3 * kMatQ + HeadTiles::kMaxN * 4;          // Q, K, V, regions
    static constexpr int kComp = 2 * kBuf;
    static constexpr int kDeq = kComp + HeadSmem::kMat;
    static constexpr int kStage = kDeq + HeadTiles::kHd * 2;
    static constexpr int kTotal = kStage + HeadTiles::kWarps * Tiles::kRows * HeadSmem::LD * 2;
    static_assert(kTotal <= 48 * 1024, "launch_head (attention.cu) launches without the opt-in to more");
};

// ---- what both head kernels (this one and attention_tf32_head.cuh's) do

/* head h's factors: sc = scale log2(e), from scores to the log2 domain; bmul the bias' (V1: 1 /
 * scale, as bias and mask go into the MMA's accumulator; V2: log2(e), both added after the cosine
 * scores are scaled) and mask = kMask bmul */
struct HeadScale {
    float sc, bmul, mask;
};
template <bool V2>
__device__ __forceinline__ HeadScale head_scale(const float *scale, int h, float f = 1.0f) {   /* f: Q8's f[h] */
    const float scale_h = __ldg(scale + h) * f, bmul = V2 ? kLog2e : 1.0f / scale_h;
    return {scale_h * kLog2e, bmul, kMask * bmul};
}

/* a lane's bias' = bias[rel(row, key)] * bmul of rows row0, row0 + 8 and keys 8 n + 2 q4 (+ 1), in
 * the mma accumulator layout (-inf for pad keys, key >= N) */
template <int NT>
__device__ __forceinline__ void head_bias(float (&bias)[NT][4], const Geom &g, const float *bias_table, int h,
                                          int row0, int q4, float bmul) {
    const int qb0 = info_qbase(g, token_info(g, 0, 0, row0));
    const int qb1 = info_qbase(g, token_info(g, 0, 0, row0 + 8));
    const float *tb = bias_table + h;
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int key = n * 8 + 2 * q4 + e;
            const int ko = info_koff(token_info(g, 0, 0, key));
            const bool in = key < g.N;
            bias[n][e] = in ? __ldg(tb + (size_t)(qb0 - ko) * g.heads) * bmul : -INFINITY;
            bias[n][2 + e] = in ? __ldg(tb + (size_t)(qb1 - ko) * g.heads) * bmul : -INFINITY;
        }
}

/* copy window w's Q, K, V rows of head h (HD elements of T, rows LD apart, matrices MAT bytes
 * apart) into buf (one cp.async group; rows past N zero-filled); its key regions after the
 * matrices when it is on the shifted border. T uint8_t: E4M3 rows (the Q8 kernel below). */
template <typename T, int HD, int LD, int MAT, int NTHR>
__device__ __forceinline__ void head_issue(unsigned char *buf, const T *qkv, const Geom &g, int w, int h, int tid) {
    constexpr int EPC = 16 / (int)sizeof(T), CPR = HD / EPC;   // elements a 16-byte chunk, chunks a row
    constexpr int CPT = HeadTiles::kMaxN * CPR / NTHR;          // chunks a thread
    const size_t ldg = (size_t)3 * g.C;
    const T *q = qkv + (size_t)w * g.N * ldg + (size_t)h * HD;
#pragma unroll
    for (int j = 0; j < CPT; j++) {
        const int i = tid + j * NTHR, r = i / CPR, c = (i % CPR) * EPC, so = (r * LD + c) * (int)sizeof(T);
        const bool ok = r < g.N;
        const T *src = q + (size_t)(ok ? r : 0) * ldg + c;
        cp_async16(buf + so, src, ok);
        cp_async16(buf + MAT + so, src + g.C, ok);
        cp_async16(buf + 2 * MAT + so, src + 2 * g.C, ok);
    }
    cp_async_commit();
    int wy, wx;
    window_pos(g, w, &wy, &wx);
    if (window_masked(g, wy, wx)) {
        int *reg = reinterpret_cast<int *>(buf + 3 * MAT);
        for (int t = tid; t < HeadTiles::kMaxN; t += NTHR) reg[t] = info_region(token_info(g, wy, wx, t));
    }
}

/* the window's E4M3 rows of V (src: V's, rows HD bytes apart) into fp16 rows (dst, LD apart): value
 * times its channel's scale (deq: V's HD scales, fp16: src/fp8.h swin_fp8_qkv_scale), one HMUL2 a
 * pair, the exact product rounded once to fp16; pad rows arrive as zeros and stay zero. A thread
 * takes 16-byte chunks tid, tid + NTHR, ... (a chunk: 16 channels of one row). Q and K stay E4M3
 * (head_attend_e4m3's MMAs read their bytes).
 * Why fp16 scales: the first version multiplied in fp32 (widen, two FMULs, narrow: 6 instructions a
 * pair) and made the kernel slower than the fp16 one it feeds, its loads halved (H200, Swin-T fp8
 * batch 256, --breakdown: attention ops 1.428 against 1.236 ms). */
template <int HD, int LD, int NTHR>
__device__ __forceinline__ void head_dequant_v(unsigned char *dst, const unsigned char *src, const __half *deq, int tid) {
    constexpr int CPR = HD / 16, CPM = HeadTiles::kMaxN * CPR;   // chunks a row, the matrix
#pragma unroll
    for (int i = tid; i < CPM; i += NTHR) {
        const int r = i / CPR, c = (i % CPR) * 16;
        const uint4 v = *reinterpret_cast<const uint4 *>(src + r * HD + c);
        const uint4 *sc = reinterpret_cast<const uint4 *>(deq + c);
        const uint4 s0 = sc[0], s1 = sc[1];
        const uint32_t in[4] = {v.x, v.y, v.z, v.w}, sp[8] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
        uint32_t o[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {   /* bytes 2k, 2k + 1 */
            const __half2_raw hr = __nv_cvt_fp8x2_to_halfraw2(
                (__nv_fp8x2_storage_t)(in[k / 2] >> (16 * (k & 1)) & 0xffffu), __NV_E4M3);
            const __half2 hv = __hmul2(*reinterpret_cast<const __half2 *>(&hr),
                                       *reinterpret_cast<const __half2 *>(&sp[k]));
            o[k] = *reinterpret_cast<const uint32_t *>(&hv);
        }
        uint4 *d = reinterpret_cast<uint4 *>(dst + (r * LD + c) * 2);
        d[0] = make_uint4(o[0], o[1], o[2], o[3]);
        d[1] = make_uint4(o[4], o[5], o[6], o[7]);
    }
}

/* c = from + mask where the regions (reg: the window's key regions) of row and key differ */
template <int NT>
__device__ __forceinline__ void head_mask(float (&c)[NT][4], const float (&from)[NT][4], const int *reg, int row0,
                                          int q4, float mask) {
    const int rr0 = reg[row0], rr1 = reg[row0 + 8];
#pragma unroll
    for (int n = 0; n < NT; n++) {
        const int2 kr = *reinterpret_cast<const int2 *>(reg + n * 8 + 2 * q4);
        c[n][0] = from[n][0] + (kr.x != rr0 ? mask : 0.f);
        c[n][1] = from[n][1] + (kr.y != rr0 ? mask : 0.f);
        c[n][2] = from[n][2] + (kr.x != rr1 ? mask : 0.f);
        c[n][3] = from[n][3] + (kr.y != rr1 ? mask : 0.f);
    }
}

/* a window walk's step: the next window's copies (issue(w + gridDim.x, b ^ 1)) or an empty group,
 * then this window's (buffer b) landed and visible to the whole CTA */
template <typename Issue>
__device__ __forceinline__ void head_next(Issue &issue, int w, int b, int nwin) {
    const int wn = w + gridDim.x;
    if (wn < nwin) issue(wn, b ^ 1);
    else cp_async_commit();   // an empty group: "all but the newest" is then this window's
    cp_async_wait_one();
    __syncthreads();
}

/* V2's scores in the log2 domain: s / (|q| |k|) scale log2(e) + bias', with rk the window's
 * 1 / |k| and sc0, sc1 scale log2(e) / |q| of the lane's rows */
template <int NT>
__device__ __forceinline__ void head_cosine(float (&s)[NT][4], const float (&bias)[NT][4], const float *rk, int q4,
                                           float sc0, float sc1) {
#pragma unroll
    for (int n = 0; n < NT; n++) {
        const float2 r = *reinterpret_cast<const float2 *>(rk + n * 8 + 2 * q4);
        s[n][0] = fmaf(s[n][0] * r.x, sc0, bias[n][0]);
        s[n][1] = fmaf(s[n][1] * r.y, sc0, bias[n][1]);
        s[n][2] = fmaf(s[n][2] * r.x, sc1, bias[n][2]);
        s[n][3] = fmaf(s[n][3] * r.y, sc1, bias[n][3]);
    }
}

/* one-pass softmax over the window's keys, log2 domain s ssc: s becomes exp2(s ssc - max ssc) of
 * its row, l the lane's partial sums of rows row0, row0 + 8 (a row's keys are a quad's) */
template <int NT>
__device__ __forceinline__ void head_softmax(float (&s)[NT][4], float ssc, float (&l)[2]) {
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < NT; n++) {
        mx[0] = fmaxf(mx[0], fmaxf(s[n][0], s[n][1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[n][2], s[n][3]));
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const float nb = -swin_quad_max(mx[r]) * ssc;   /* key 0 is always in the window: finite */
        float sum = 0.f;
#pragma unroll
        for (int n = 0; n < NT; n++) {
            const float p0 = fast_exp2(fmaf(s[n][2 * r], ssc, nb));
            const float p1 = fast_exp2(fmaf(s[n][2 * r + 1], ssc, nb));
            s[n][2 * r] = p0, s[n][2 * r + 1] = p1;
            sum += p0 + p1;
        }
        l[r] = sum;
    }
}

/* warp `warp`'s query tile of a window (rows row0 = 16 warp + lane / 4 and row0 + 8): scores
 * against the window's keys (rows of ks, LD apart), the one-pass softmax and O = P V (rows of vs),
 * stored at out (the window's first row, this head's columns) by tile_end through os. qf: the
 * tile's Q fragments; bias: head_bias's; reg: the window's key regions (read when masked); V2: rk
 * the keys' 1 / |k|, rq0 and rq1 1 / |q| of rows row0 and row0 + 8. V1: S = Q K^T + c, c the bias'
 * (or bias' + mask / scale on the shifted border), in the log2 domain S sc; V2: S = Q K^T, then
 * S / (|q| |k|) scale log2(e) + bias (+ mask). Shared by attn_head_kernel and attention_qkv.cuh's
 * kernel. STAGE: the rows only into os (tile_stage; out unused), where attention_proj.cuh's
 * epilogue reads them. */
template <typename T, bool V2, bool STAGE = false>
__device__ __forceinline__ void head_attend(const uint32_t (&qf)[HeadTiles::kHd / 16][4], const T *ks, const T *vs,
                                            const int *reg, const float *rk, float rq0, float rq1,
                                            const float (&bias)[HeadTiles::kMaxN / 8][4], bool masked,
                                            const HeadScale &hs, T *os, T *out, const MmaArgs &a, int warp,
                                            int lane) {
    constexpr int HD = HeadTiles::kHd, LD = HeadSmem::LD, NT = HeadTiles::kMaxN / 8;   // NT: key tiles of 8
    const int mi = lane >> 3, q4 = lane & 3, row0 = warp * Tiles::kRows + (lane >> 2);
    float s[NT][4];
    const T *kl = ks + ((lane & 7) + (mi >> 1) * 8) * LD + (mi & 1) * 8;
    auto scores = [&](const float(&c)[NT][4]) {
#pragma unroll
        for (int gp = 0; gp < NT / 2; gp++) {   /* keys 16 gp .., head_dim 0..15 then 16..31 */
            uint32_t k0[4], k1[4];
            ldsm_x4(k0, kl + gp * 16 * LD);
            ldsm_x4(k1, kl + gp * 16 * LD + 16);
            mma16816c<T>(s[2 * gp], qf[0], k0[0], k0[1], c[2 * gp]);
            mma16816c<T>(s[2 * gp + 1], qf[0], k0[2], k0[3], c[2 * gp + 1]);
            mma16816<T>(s[2 * gp], qf[1], k1[0], k1[1]);
            mma16816<T>(s[2 * gp + 1], qf[1], k1[2], k1[3]);
        }
    };
    auto add_mask = [&](float(&c)[NT][4], const float(&from)[NT][4]) { head_mask<NT>(c, from, reg, row0, q4, hs.mask); };
    float ssc = hs.sc;   /* the softmax's factor from s to the log2 domain */
    if constexpr (!V2) {
        if (masked) {
            add_mask(s, bias);
            scores(s);
        } else {
            scores(bias);
        }
    } else {
#pragma unroll
        for (int n = 0; n < NT; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        scores(s);
        head_cosine<NT>(s, bias, rk, q4, hs.sc * rq0, hs.sc * rq1);
        if (masked) add_mask(s, s);
        ssc = 1.0f;
    }
    WarpTile<HD> t;
    head_softmax<NT>(s, ssc, t.l);
    /* O = P V */
#pragma unroll
    for (int n = 0; n < HD / 8; n++) t.o[n][0] = t.o[n][1] = t.o[n][2] = t.o[n][3] = 0.f;
    const T *vl = vs + ((lane & 7) + (mi & 1) * 8) * LD + (mi >> 1) * 8;
#pragma unroll
    for (int gp = 0; gp < NT / 2; gp++) pv_group<HD, T>(t.o, s[2 * gp], s[2 * gp + 1], vl + gp * 16 * LD);
    if constexpr (STAGE) tile_stage<HD, T>(t, os, lane);
    else tile_end<HD, T>(t, os, out, warp, a, HD, 16, lane);
}

/* Q8's window for warp `warp` (V1; head_attend's rows and outputs): S = Q K^T + c on the E4M3
 * bytes, q's already carrying k's channel scales (src/fp8.h swin_fp8_qkv_scales), one m16n8k32 MMA
 * a key tile of 8 (the whole head_dim: k 32); hs carries the head's f[h] (head_scale), so the
 * log2-domain score is S sc as in 16 bits. qf: the tile's Q bytes (A fragments, ldmatrix's b16
 * rows hold 4 bytes a lane: k 4 q4 .. 4 q4 + 3, as the MMA wants them); ks the K bytes (rows of 32).
 * Then the one-pass softmax, then sync() (the CTA barrier after which the fp16 V rows, vs, are
 * there: the dequantisation of V overlaps the scores), O = P V and tile_end. */
template <typename Sync>
__device__ __forceinline__ void head_attend_e4m3(const uint32_t (&qf)[4], const uint8_t *ks, const __half *vs,
                                                 const int *reg, const float (&bias)[HeadTiles::kMaxN / 8][4],
                                                 bool masked, const HeadScale &hs, __half *os, __half *out,
                                                 const MmaArgs &a, int warp, int lane, Sync sync) {
    constexpr int HD = HeadTiles::kHd, LD = HeadSmem::LD, NT = HeadTiles::kMaxN / 8;
    const int mi = lane >> 3, q4 = lane & 3, row0 = warp * Tiles::kRows + (lane >> 2);
    float s[NT][4];
    /* ldmatrix x4 over keys 16 gp ..: matrices {keys 0-7, 8-15} x {bytes 0-15, 16-31} give b0, b1 of
     * key tile 2 gp, then of 2 gp + 1 */
    const uint8_t *kl = ks + ((lane & 7) + (mi >> 1) * 8) * HD + (mi & 1) * 16;
    auto scores = [&](const float(&c)[NT][4]) {
#pragma unroll
        for (int gp = 0; gp < NT / 2; gp++) {
            uint32_t k[4];
            ldsm_x4(k, kl + gp * 16 * HD);
            mma_e4m3_16832c(s[2 * gp], qf, k[0], k[1], c[2 * gp]);
            mma_e4m3_16832c(s[2 * gp + 1], qf, k[2], k[3], c[2 * gp + 1]);
        }
    };
    if (masked) {
        head_mask<NT>(s, bias, reg, row0, q4, hs.mask);
        scores(s);
    } else {
        scores(bias);
    }
    WarpTile<HD> t;
    head_softmax<NT>(s, hs.sc, t.l);
    sync();
#pragma unroll
    for (int n = 0; n < HD / 8; n++) t.o[n][0] = t.o[n][1] = t.o[n][2] = t.o[n][3] = 0.f;
    const __half *vl = vs + ((lane & 7) + (mi & 1) * 8) * LD + (mi >> 1) * 8;
#pragma unroll
    for (int gp = 0; gp < NT / 2; gp++) pv_group<HD, __half>(t.o, s[2 * gp], s[2 * gp + 1], vl + gp * 16 * LD);
    tile_end<HD, __half>(t, os, out, warp, a, HD, 16, lane);
}

/* Q8 (V1, T = __half): q, k, v arrive in E4M3 (a.qkv bytes, a.deq their scales [3C], src/fp8.h
 * swin_fp8_qkv_scales); the scores are FP8 MMAs on the q and k bytes (head_attend_e4m3), and v is
 * dequantised into fp16 rows in shared memory once a window has landed (head_dequant_v) for P V */
template <typename T, bool V2, bool Q8 = false>
__global__ void __launch_bounds__(HeadTiles::kWarps * 32, HeadTiles::kMinCtas)
attn_head_kernel(MmaArgs a) {
    swin_pdl_begin();
    constexpr int HD = HeadTiles::kHd, LD = HeadSmem::LD, NT = HeadTiles::kMaxN / 8;   // NT: key tiles of 8
    constexpr int nthr = HeadTiles::kWarps * 32;
    constexpr int BUF = Q8 ? HeadSmemQ8::kBuf : HeadSmem::kBuf, MATB = Q8 ? HeadSmemQ8::kMatQ : HeadSmem::kMat;
    constexpr int RK = HeadSmem::kRk, STAGE = Q8 ? HeadSmemQ8::kStage : HeadSmem::kStage;   // RK: V2 (not Q8)
    static_assert(!Q8 || (std::is_same<T, __half>::value && !V2), "E4M3 q, k, v: V1, v dequantised to fp16");
    extern __shared__ __align__(16) unsigned char smem[];
    const Geom &g = a.g;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tid = threadIdx.x, q4 = lane & 3;
    const int h = blockIdx.y;
    /* Q8: the head's f[h], read back from its first channel's q and k scales (src/fp8.h) */
    const HeadScale hs = head_scale<V2>(a.scale, h, Q8 ? __ldg(a.deq + h * HD) * __ldg(a.deq + g.C + h * HD) : 1.0f);
    T *os = reinterpret_cast<T *>(smem + STAGE) + warp * Tiles::kRows * LD;
    __half *deq = reinterpret_cast<__half *>(smem + HeadSmemQ8::kDeq);
    if constexpr (Q8) {   /* the head's v channel scales, fp16 (read after the first window's barrier) */
        if (tid < HD) deq[tid] = __float2half_rn(__ldg(a.deq + 2 * g.C + h * HD + tid));
    }

    /* this lane's bias' (rows row0, row0 + 8 of its tile; keys 8 n + 2 q4, + 1), in the mma
     * accumulator layout */
    const int row0 = warp * Tiles::kRows + (lane >> 2);
    float bias[NT][4];
    head_bias<NT>(bias, g, a.bias_table, h, row0, q4, hs.bmul);

    /* window w's rows into buffer b */
    auto issue = [&](int w, int b) {
        if constexpr (Q8)   /* E4M3 rows: a byte an element, rows HD bytes apart */
            head_issue<uint8_t, HD, HD, HeadSmemQ8::kMatQ, nthr>(smem + b * BUF, reinterpret_cast<const uint8_t *>(a.qkv),
                                                               g, w, h, tid);
        else
            head_issue<T, HD, LD, HeadSmem::kMat, nthr>(smem + b * BUF, reinterpret_cast<const T *>(a.qkv), g, w, h,
                                                        tid);
    };

    /* Tried (H200, 2026-11-28, fp16 batch 1 and 8, swin bench -n 200, two rounds): issuing the
     * first window's copies before the bias lookup above, so that the latencies overlap. Swin-T
     * 0.419 / 0.420 ms as here against 0.419 / 0.416 at batch 1, 0.666 / 0.669 against 0.656 /
     * 0.677 at 8; SwinV2-T 0.433 / 0.434 against 0.427 / 0.442: within the runs' spread, removed */
    int w = blockIdx.x, b = 0;
    if (w < a.nwin) issue(w, 0);
    for (; w < a.nwin; w += gridDim.x, b ^= 1) {
        head_next(issue, w, b, a.nwin);
        const unsigned char *buf = smem + b * BUF;
        if constexpr (Q8) {
            /* V's fp16 rows (the previous window's readers passed the loop's barrier), then every warp
             * its query tile (a.tiles is kWarps: 49 to 64 tokens), the barrier before P V inside */
            head_dequant_v<HD, LD, nthr>(smem + HeadSmemQ8::kComp, buf + 2 * HeadSmemQ8::kMatQ, deq, tid);
            const int mi = lane >> 3;
            int wy, wx;
            window_pos(g, w, &wy, &wx);
            uint32_t qf[4];   /* rows 16 warp .. + 15, bytes 0-15 then 16-31 */
            ldsm_x4(qf, buf + (warp * Tiles::kRows + (lane & 7) + (mi & 1) * 8) * HD + (mi >> 1) * 16);
            T *out = reinterpret_cast<T *>(a.out) + (size_t)w * g.N * g.C + (size_t)h * HD;
            head_attend_e4m3(qf, buf + HeadSmemQ8::kMatQ, reinterpret_cast<const __half *>(smem + HeadSmemQ8::kComp),
                             reinterpret_cast<const int *>(buf + 3 * MATB), bias, window_masked(g, wy, wx), hs,
                             reinterpret_cast<__half *>(os), reinterpret_cast<__half *>(out), a, warp, lane,
                             [] { __syncthreads(); });
        } else {
            const T *qs = reinterpret_cast<const T *>(buf), *ks = reinterpret_cast<const T *>(buf + HeadSmem::kMat);
            const T *vs = reinterpret_cast<const T *>(buf + 2 * HeadSmem::kMat);
            if constexpr (V2) {   /* 1 / |k| of the window's keys (pad keys: zero rows, never used) */
                if (tid < HeadTiles::kMaxN)
                    reinterpret_cast<float *>(smem + RK)[tid] = inv_norm_row<HD, T>(ks + tid * LD);
                __syncthreads();
            }
            if (warp < a.tiles) {
                const int mi = lane >> 3;
                int wy, wx;
                window_pos(g, w, &wy, &wx);
                uint32_t qf[HD / 16][4];
#pragma unroll
                for (int kk = 0; kk < HD / 16; kk++)
                    ldsm_x4(qf[kk], qs + (warp * Tiles::kRows + (lane & 7) + (mi & 1) * 8) * LD + kk * 16 +
                                        (mi >> 1) * 8);
                float rq0 = 1.0f, rq1 = 1.0f;   /* V2: 1 / |q| of rows row0, row0 + 8 */
                if constexpr (V2) {
                    const float rq = inv_norm_row<HD, T>(qs + (warp * Tiles::kRows + (lane & 15)) * LD);
                    rq0 = __shfl_sync(0xffffffffu, rq, lane >> 2);
                    rq1 = __shfl_sync(0xffffffffu, rq, (lane >> 2) + 8);
                }
                T *out = reinterpret_cast<T *>(a.out) + (size_t)w * g.N * g.C + (size_t)h * HD;
                head_attend<T, V2>(qf, ks, vs, reinterpret_cast<const int *>(buf + 3 * MATB),
                                   reinterpret_cast<const float *>(smem + RK), rq0, rq1, bias,
                                   window_masked(g, wy, wx), hs, os, out, a, warp, lane);
            }
        }
        __syncthreads();   // every warp is done with buffer b (and Q8's V rows) before the next iteration
    }
}

} // namespace swin_attn

#endif
