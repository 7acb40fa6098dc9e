/* layernorm.cu - LayerNorm ops (kernels/ops.h): plain, residual (x += LN(y), V2 res-post-norm)
 * and the head's LayerNorm + mean over tokens; and the weights of a linear layer with the
 * LayerNorm before it folded in (swin_ln_fold_weights_cuda, for the LN_GELU GEMM of
 * kernels/sm90/gemm_tma.cu).
 *
 * Row ops use the generic row kernel of row.cuh (one 8/16/32-lane group per row, fp32 two-pass
 * statistics in registers, 16-byte packs). CPU counterparts: swin_layernorm_cpu,
 * swin_layernorm_residual_cpu, swin_ln_pool_cpu in src/layers_cpu.c.
 * Test: tests/test_gpu_kernels.c (cases "layernorm", "ln_residual", "ln_pool").
 */
#include "row.cuh"

// ---- row maps

template <typename T, bool Acc> struct ln_map {   /* out[r] (+)= LN(in[r]); without Acc out may alias in */
    static constexpr bool kAccumulate = Acc;
    static constexpr bool kAddThenNorm = false;
    static constexpr bool kQ8 = false;
    const T *in;
    T *out;
    int C;
    typedef int Row;
    __device__ Row row(int r) const { return r; }
    __device__ bool skip(Row) const { return false; }
    __device__ bool zero(Row, int) const { return false; }
    __device__ const T *src(Row r, int e) const { return in + (size_t)r * C + e; }
    __device__ T *dst(Row r, int e) const { return out + (size_t)r * C + e; }
};

// ---- LN + mean over tokens: one block per image

/* out[b, c] = mean_l((x[b, l, c] - mean_l) * rstd_l) * w[c] + b[c]. Groups of LPR lanes take
 * tokens g, g + G, ...; their per-lane sums are added into shared memory group after group (fixed
 * order: deterministic). Dynamic shared memory: C floats. BLOCK threads: 512 by default (G = 16
 * groups of 32 lanes for Swin-T's C = 768: its 49 tokens in 4 rounds of loads and row reductions
 * instead of 13 with 128 threads, which made this one block the slowest op of a batch-1 forward:
 * 16 us of 0.71 ms in --breakdown); SWIN_POOL_BLOCK=128 in the environment (read once) keeps the
 * 128 of the other row kernels, to compare. H200 (2026-11-27, SWIN_POOL_BLOCK=512 / 128
 * alternating, three runs each, build/swin bench --precision fp16 --batch 1,8,256 --iters 100):
 * Swin-T batch 1 0.451 / 0.449 / 0.449 against 0.453 / 0.459 / 0.454 ms, batch 8 0.662 / 0.641 /
 * 0.646 against 0.660 / 0.659 / 0.658, batch 256 unchanged (9.40 / 9.41); SwinV2-T batch 1 0.476
 * against 0.489; the op in --breakdown at batch 1: 12 against 16 us. Above C = 1536 (NV 8 packs a
 * lane in 16 bits, 16 in fp32) ptxas spills at 512 threads' 128 registers; no Swin model has it. */
template <typename T, int V, int NV, int LPR, int BLOCK>
static __global__ void __launch_bounds__(BLOCK)
ln_pool_kernel(T *__restrict__ out, const T *__restrict__ x, const float *__restrict__ w,
               const float *__restrict__ b, int L, int C, float eps) {
    swin_pdl_begin();
    extern __shared__ float acc[];
    const int G = BLOCK / LPR, g = threadIdx.x / LPR, lane = threadIdx.x % LPR;
    const T *xb = x + (size_t)blockIdx.x * L * C;
    for (int c = threadIdx.x; c < C; c += BLOCK) acc[c] = 0.f;
    float sum[NV][V];
#pragma unroll
    for (int i = 0; i < NV; i++)
#pragma unroll
        for (int k = 0; k < V; k++) sum[i][k] = 0.f;
    for (int l0 = 0; l0 < L; l0 += G) {   /* same trip count for every group: shuffles stay uniform */
        const int l = l0 + g;
        float v[NV][V];
#pragma unroll
        for (int i = 0; i < NV; i++) {
            const int e = (lane + LPR * i) * V;
            if (l < L && e < C) pack_load<T, V>(v[i], xb + (size_t)l * C + e);
            else
#pragma unroll
                for (int k = 0; k < V; k++) v[i][k] = 0.f;
        }
        row_normalize<V, NV, LPR>(v, C, lane, eps);
        if (l < L)
#pragma unroll
            for (int i = 0; i < NV; i++)
#pragma unroll
                for (int k = 0; k < V; k++) sum[i][k] += v[i][k];
    }
    __syncthreads();
    for (int r = 0; r < G; r++) {
        if (g == r)
#pragma unroll
            for (int i = 0; i < NV; i++) {
                const int e = (lane + LPR * i) * V;
                if (e < C)
#pragma unroll
                    for (int k = 0; k < V; k++) acc[e + k] += sum[i][k];
            }
        __syncthreads();
    }
    for (int c = threadIdx.x; c < C; c += BLOCK)
        store_f(out, (size_t)blockIdx.x * C + c, acc[c] / (float)L * w[c] + b[c]);
}

static int pool_block(void) {
    static int n = -1;
    if (n < 0) n = swin_env_is("SWIN_POOL_BLOCK", "128") ? 128 : 512;
    return n;
}

template <typename T>
static swin_status ln_pool_launch(T *out, const T *x, const float *w, const float *b, int B, int L,
                                  int C, float eps, cudaStream_t st) {
    int vec_ok = swin_aligned16(x);
    const int block = pool_block();
    int ok = swin_row_dispatch<T>(C, vec_ok, [&](auto cfg) {
        typedef decltype(cfg) Cfg;
        auto kern = block == 128 ? ln_pool_kernel<T, Cfg::V, Cfg::NV, Cfg::LPR, 128>
                                 : ln_pool_kernel<T, Cfg::V, Cfg::NV, Cfg::LPR, 512>;
        swin_launch(kern, (unsigned)B, block, (size_t)C * sizeof(float), st, out, x, w, b, L, C, eps);
    });
    if (!ok) return swin_fail(SWIN_ERR_UNSUPPORTED, "swin_ln_pool_cuda: %d channels are too many "
                                  "(at most 2048, or 1024 when not 16-byte aligned)", C);
    SWIN_LAUNCH_CHECK("ln_pool_kernel", st);
    return SWIN_OK;
}

// ---- op entries

static swin_status check_rows(const char *op, int rows, int C, swin_dtype dt) {
    SWIN_TRY(swin_check_dtype(op, dt));
    if (rows <= 0 || C <= 0) return swin_fail(SWIN_ERR_ARGUMENT, "%s: rows %d and C %d must be positive", op, rows, C);
    return SWIN_OK;
}

/* The two row-wise entries: out (+)= LN(in) over rows of C; names are the op's argument names. */
template <bool Acc>
static swin_status ln_rows(const char *op, const char *kernel, const char *out_name, const char *in_name,
                           void *out, const void *in, const float *ln_w, const float *ln_b, int rows, int C,
                           float eps, swin_dtype dt, cudaStream_t st) {
    SWIN_TRY(check_rows(op, rows, C, dt));
    SWIN_TRY(swin_check_ptr(op, out_name, out, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ptr(op, in_name, in, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ln(op, ln_w, ln_b, 0));
    int vec_ok = swin_aligned16(out) && swin_aligned16(in);
    SWIN_DISPATCH(dt, T, {
        ln_map<T, Acc> m = {(const T *)in, (T *)out, C};
        return swin_row_ln_launch<T>(kernel, m, vec_ok, ln_w, ln_b, rows, C, eps, st);
    });
    return SWIN_OK;
}

extern "C" swin_status swin_layernorm_cuda(void *out, const void *in, const float *ln_w,
                                           const float *ln_b, int rows, int C, float eps,
                                           swin_dtype dt, cudaStream_t st) {
    return ln_rows<false>("swin_layernorm_cuda", "layernorm_kernel", "out", "in", out, in, ln_w, ln_b, rows,
                          C, eps, dt, st);
}

/* x[r] += LN(y[r]) */
extern "C" swin_status swin_layernorm_residual_cuda(void *x, const void *y, const float *ln_w,
                                                    const float *ln_b, int rows, int C, float eps,
                                                    swin_dtype dt, cudaStream_t st) {
    return ln_rows<true>("swin_layernorm_residual_cuda", "layernorm_residual_kernel", "x", "y", x, y, ln_w,
                         ln_b, rows, C, eps, dt, st);
}

extern "C" swin_status swin_ln_pool_cuda(void *out, const void *x, const float *ln_w, const float *ln_b,
                                         int B, int L, int C, float eps, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_ln_pool_cuda";
    SWIN_TRY(swin_check_dtype(op, dt));
    if (B <= 0 || L <= 0 || C <= 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: B %d, L %d and C %d must be positive", op, B, L, C);
    SWIN_TRY(swin_check_ptr(op, "out", out, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ptr(op, "x", x, swin_dtype_size(dt)));
    SWIN_TRY(swin_check_ln(op, ln_w, ln_b, 0));
    SWIN_DISPATCH(dt, T, return ln_pool_launch<T>((T *)out, (const T *)x, ln_w, ln_b, B, L, C, eps, st));
    return SWIN_OK;
}

// ---- a LayerNorm folded into the linear layer after it

/* One block a row n of w: w_fold[n, k] = dt(w[n, k] gamma[k]); colsum[n] = sum_k w_fold[n, k] (as
 * stored); b_fold[n] = bias[n] + sum_k w[n, k] beta[k]. Sums in a fixed order (deterministic). */
template <typename T>
static __global__ void __launch_bounds__(128)
ln_fold_kernel(T *__restrict__ w_fold, float *__restrict__ colsum, float *__restrict__ b_fold,
               const float *__restrict__ w, const T *__restrict__ bias, const float *__restrict__ gamma,
               const float *__restrict__ beta, int K) {
    __shared__ float red[2][128];
    const int n = blockIdx.x, t = threadIdx.x;
    const float *wr = w + (size_t)n * K;
    float cs = 0.0f, bb = 0.0f;
    for (int k = t; k < K; k += 128) {
        store_f(w_fold, (size_t)n * K + k, wr[k] * gamma[k]);
        cs += load_f(w_fold, (size_t)n * K + k);
        bb = fmaf(wr[k], beta[k], bb);
    }
    red[0][t] = cs, red[1][t] = bb;
    __syncthreads();
    for (int h = 64; h > 0; h >>= 1) {
        if (t < h) red[0][t] += red[0][t + h], red[1][t] += red[1][t + h];
        __syncthreads();
    }
    if (t == 0) colsum[n] = red[0][0], b_fold[n] = red[1][0] + (bias ? load_f(bias, n) : 0.0f);
}

extern "C" swin_status swin_ln_fold_weights_cuda(void *w_fold, float *colsum, float *b_fold, const float *w,
                                                 const void *bias, const float *gamma, const float *beta, int N,
                                                 int K, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_ln_fold_weights_cuda";
    if (dt != SWIN_DT_F16 && dt != SWIN_DT_BF16)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: fp16 or bf16 weights only (dtype %d)", op, (int)dt);
    if (!w_fold || !colsum || !b_fold || !w || !gamma || !beta)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: NULL argument (only bias may be NULL)", op);
    if (N <= 0 || K <= 0) return swin_fail(SWIN_ERR_ARGUMENT, "%s: N %d and K %d must be positive", op, N, K);
    SWIN_DISPATCH(dt, T, {
        ln_fold_kernel<T><<<N, 128, 0, st>>>((T *)w_fold, colsum, b_fold, w, (const T *)bias, gamma, beta, K);
        SWIN_LAUNCH_CHECK("ln_fold_kernel", st);
    });
    return SWIN_OK;
}
