/* gemm_tma_fold.cuh - LayerNorms in the epilogues of gemm_tma.cu's kernel:
 *   POST_LN (V2's res-post-norm, src/cuda/engine.c fc2_post_ln): x += LN(acc + bias) where one
 *     128-column tile holds a row (N <= 128), the residual staged as RESID stages it; the row's
 *     values rounded to the data type first (the GEMM's output as the two-op path stores it),
 *     then two quad reductions for the mean and the squared deviations (post_ln_stats) and the
 *     arithmetic of kernels/row.cuh's row kernel, so the result is the two ops' up to the order
 *     of the fp32 sums.
 * and V1's norm2 folded into the GEMMs around it (SWIN_LN_FOLD=1, src/cuda/engine.c; opt-in): the
 * SCATTER and LN_GELU epilogues.
 *
 *   SCATTER (proj): no staging and no TMA store; each thread adds bias and residual to its own
 *     accumulators and stores them in place at the window row's token (token_src, win_geom.cuh),
 *     a quarter of the tile's columns at a time with the residual pairs loaded first; then a quad
 *     reduction per row gives the tile's (mean, M2) of the rounded values into part [tile, token].
 *   LN_GELU (fc1 on weights diag(gamma)-scaled, ops.h swin_ln_fold_weights_cuda): each thread
 *     combines its rows' partial statistics (Chan's pairwise formula, tile order: deterministic)
 *     and the epilogue computes gelu(rstd acc + (b' - rstd mean colsum)), one FMA an element more
 *     than GELU. Exact in 16 bits: x is the MMA's operand as stored; the mean's cancellation is in
 *     the fp32 accumulators.
 * Slower than the unfused path so far (numbers in engine.c above ln_fold_wanted): the scatter at
 * 1.447 ms for all of Swin-T's blocks at batch 256 against proj on cuBLASLt + the row pass 1.373
 * (stage 0 0.534 against 0.551, but stage 1's C = 192 wastes a third of its second column tile:
 * 0.328 against 0.260); LN_GELU 34% slower than GELU: ptxas caps 544 threads at 96 registers and
 * it spills 60 bytes (the scatter 64), on an epilogue that was already issue-bound (gemm_tma.cu's
 * header).
 * BN: the kernel's tile columns (gemm_tma.cu). Test: tests/test_gpu_lnfold.c, tests/test_gpu_post_ln.c.
 */
#ifndef SWIN_GEMM_TMA_FOLD_CUH
#define SWIN_GEMM_TMA_FOLD_CUH

#include "common.cuh"
#include "sm90/gemm_sm90.cuh"
#include "win_geom.cuh"

namespace sm90 {

/* The LayerNorm folded into the GEMMs around it (SCATTER, LN_GELU): per token, the (mean, M2 =
 * sum of squared deviations) of its values in each 128-column output tile of the scatter, part
 * [parts, T]: deterministic (no atomics), combined in a fixed order by LN_GELU. */
struct LnFold {
    void *x;        /* SCATTER: the image rows [T, N], residual in, output out */
    float2 *part;   /* [parts, T] */
    int M, T;       /* the GEMM's rows (SCATTER: window rows); token rows */
    int parts, C;   /* LN_GELU: tiles per token, the normalised width (K) */
    float inv_c, eps;
    win_geom g;     /* SCATTER: window row -> token */
    const float *gamma, *beta;   /* POST_LN: the LayerNorm's weight and bias [N], fp32 */
};

/* POST_LN: each of the thread's rows (m64 block mi, rows r_lo and r_lo + 8: h) of a tile that
 * holds the whole row (columns 0 .. N - 1, N <= BN): pk <- its values acc (* col_scale: E4M3) +
 * bias rounded to the output type, two a register as stored (0 past N; d is dead after this, so
 * the values take 32 registers, not 64: ptxas had spilled, or serialised the MMAs, while d stayed
 * live or was rewritten in place), mu and rs <- the row's mean and 1 / sqrt(var + eps), two-pass
 * as row.cuh's row_normalize (a row's 128 columns are a quad of lanes' 32 values each) */
template <int BN, class E, int MI>
__device__ __forceinline__ void post_ln_stats(const float (&d)[MI][64], const Epi &ep, int N, float eps, int lane,
                                              uint32_t (&pk)[MI][2][BN / 8], float (&mu)[MI][2], float (&rs)[MI][2]) {
    typedef OutT<E, POST_LN> T;
    float s[MI][2], q[MI][2];
#pragma unroll
    for (int mi = 0; mi < MI; mi++) s[mi][0] = s[mi][1] = q[mi][0] = q[mi][1] = 0.0f;
#pragma unroll
    for (int jn = 0; jn < BN / 8; jn++) {
        const int c = jn * 8 + 2 * (lane & 3);
        float2 b, cs;
        epi_coeffs<E, POST_LN>(ep, c, N, b, cs);
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int i = 4 * jn + 2 * h;
                pk[mi][h][jn] = c < N ? pack2<T>(fmaf(d[mi][i], cs.x, b.x), fmaf(d[mi][i + 1], cs.y, b.y)) : 0u;
                const float2 v = unpack2<T>(pk[mi][h][jn]);
                s[mi][h] += v.x + v.y;
            }
    }
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) mu[mi][h] = swin_quad_sum(s[mi][h]) / (float)N;
#pragma unroll
    for (int jn = 0; jn < BN / 8; jn++) {
        const int c = jn * 8 + 2 * (lane & 3);
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                if (c < N) {
                    const float2 v = unpack2<T>(pk[mi][h][jn]);
                    const float d0 = v.x - mu[mi][h], d1 = v.y - mu[mi][h];
                    q[mi][h] += d0 * d0;
                    q[mi][h] += d1 * d1;
                }
    }
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) rs[mi][h] = rsqrtf(swin_quad_sum(q[mi][h]) / (float)N + eps);
}

/* LN_GELU: the mean and 1 / sqrt(var + eps) of token row `row` from its partial statistics
 * (Chan et al.'s pairwise combination, in tile order) */
template <int BN>
__device__ __forceinline__ void ln_row_stats(const LnFold &ln, int row, float &mu, float &rs) {
    mu = 0.0f, rs = 1.0f;
    if (row >= ln.M) return;
    const float2 *q = ln.part + row;
    if (ln.parts == 1) {   /* C <= 128: the one tile's statistics are the row's */
        const float2 v = *q;
        mu = v.x, rs = rsqrtf(v.y * ln.inv_c + ln.eps);
        return;
    }
    float s = 0.0f, m2 = 0.0f;
    for (int p = 0; p < ln.parts; p++) s += (float)min(BN, ln.C - p * BN) * q[(size_t)p * ln.T].x;
    mu = s * ln.inv_c;
    for (int p = 0; p < ln.parts; p++) {
        const float2 v = q[(size_t)p * ln.T];
        const float dm = v.x - mu;
        m2 += v.y + (float)min(BN, ln.C - p * BN) * dm * dm;
    }
    rs = rsqrtf(m2 * ln.inv_c + ln.eps);
}

/* SCATTER's epilogue, one warpgroup's RW rows (row0 ..) of the tile at column n0: each window row's
 * values + bias + the residual, rounded once, stored in place at the row's token (padding rows
 * dropped); then the tile's (mean, M2) of those rounded values per token into part. A row's 128
 * columns are held by a quad of lanes (32 values each): two quad reductions. */
template <int BN, class E, int MI>
__device__ __forceinline__ void scatter_epilogue(float (&d)[MI][64], const LnFold &ln, const Epi &ep, int row0,
                                                 int n0, int N, int lane, int wq) {
    typedef typename E::T T;
    T *x = static_cast<T *>(ln.x);
    const int r_lo = wq * 16 + (lane >> 2);
    int tok[MI][2];   /* T < 2^31 (the entry checks) */
    float s[MI][2];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int gr = row0 + 64 * mi + r_lo + 8 * h;
            tok[mi][h] = gr < ln.M ? (int)token_src(ln.g, gr) : -1;
            s[mi][h] = 0.0f;
        }
    /* in quarters of the tile's columns: each quarter's residual pairs loaded before any of its
     * stores (the compiler cannot move a load of x past a store to x), then added and stored */
#pragma unroll
    for (int qr = 0; qr < 4; qr++) {
        constexpr int JH = BN / 32;   /* column octets a quarter */
        uint32_t res[JH][MI][2];
#pragma unroll
        for (int jj = 0; jj < JH; jj++) {
            const int c = n0 + (qr * JH + jj) * 8 + 2 * (lane & 3);
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    res[jj][mi][h] = c < N && tok[mi][h] >= 0
                                         ? *reinterpret_cast<const uint32_t *>(x + (size_t)tok[mi][h] * N + c)
                                         : 0u;
        }
#pragma unroll
        for (int jj = 0; jj < JH; jj++) {
            const int jn = qr * JH + jj, c = n0 + jn * 8 + 2 * (lane & 3);
            float2 b, cs;
            epi_coeffs<E, SCATTER>(ep, c, N, b, cs);
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int i = 4 * jn + 2 * h;
                    float2 v = make_float2(0.0f, 0.0f);   /* columns past N, padding rows: out of the sums */
                    if (c < N && tok[mi][h] >= 0) {
                        const float2 r = unpack2<T>(res[jj][mi][h]);
                        const uint32_t o = pack2<T>(d[mi][i] + b.x + r.x, d[mi][i + 1] + b.y + r.y);
                        *reinterpret_cast<uint32_t *>(x + (size_t)tok[mi][h] * N + c) = o;
                        v = unpack2<T>(o);
                    }
                    d[mi][i] = v.x, d[mi][i + 1] = v.y;
                    s[mi][h] += v.x + v.y;
                }
        }
    }
    const float inv = 1.0f / (float)min(BN, N - n0);
    float q[MI][2];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            s[mi][h] = swin_quad_sum(s[mi][h]) * inv;   /* the tile's mean */
            q[mi][h] = 0.0f;
        }
#pragma unroll
    for (int jn = 0; jn < BN / 8; jn++) {
        const int c = n0 + jn * 8 + 2 * (lane & 3);
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                if (c < N) {
                    const float d0 = d[mi][4 * jn + 2 * h] - s[mi][h], d1 = d[mi][4 * jn + 2 * h + 1] - s[mi][h];
                    q[mi][h] = fmaf(d0, d0, fmaf(d1, d1, q[mi][h]));
                }
    }
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            q[mi][h] = swin_quad_sum(q[mi][h]);
            if ((lane & 3) == 0 && tok[mi][h] >= 0)
                ln.part[(size_t)(n0 / BN) * ln.T + tok[mi][h]] = make_float2(s[mi][h], q[mi][h]);
        }
}

} // namespace sm90

#endif
