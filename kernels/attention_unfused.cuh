/* attention_unfused.cuh - the unfused window attention (baseline and cross-check of the fused
 * kernels), included by attention.cu.
 *
 *   1. a tiny kernel writes the per-(window, head) pointer arrays into the workspace;
 *   2. cublasGemmBatchedEx: S = Q K^T into a materialised fp32 score tensor [B*nW*heads, N, N];
 *   3. (V2) a kernel computes 1/|q| and 1/|k| per token and head;
 *   4. one softmax kernel (a warp per score row) scales, adds the bias looked up in the compact
 *      table and the shift mask computed from the token regions, and writes P in the data dtype
 *      (in place over S for fp32);
 *   5. cublasGemmBatchedEx: out = P V.
 * When a head's rows in qkv / out are not 16-byte aligned (head_dim * sizeof(T) not a multiple of
 * 16: cuBLAS reads the batch pointers on the device and cannot check them), q, k and v are first
 * packed into [nb, N, hp] blocks (hp = head_dim rounded up to 8, zero-padded), both GEMMs are
 * strided-batched over the blocks, and O goes through one more block that a kernel scatters into out.
 * Workspace layout: UnfusedWs (the same carving sizes and places). Test: tests/test_gpu_attention.c.
 */
#ifndef SWIN_ATTENTION_UNFUSED_CUH
#define SWIN_ATTENTION_UNFUSED_CUH

#include <cublas_v2.h>
#include "attention_common.cuh"

namespace swin_attn {

/* packed mode: a head's rows are not 16-byte aligned */
static inline bool unf_packed(const Geom &g, swin_dtype dt) {
    return access_bytes(g.hd, (int)swin_dtype_size(dt)) < 16;
}

/* workspace carving: base == NULL sizes it */
struct UnfusedWs {
    float *S;        // [nb, N, N] fp32 scores
    void *P;         // [nb, N, N] probabilities in dt (== S for fp32)
    float *rnorm;    // [nb, 2, N] 1/|q|, 1/|k| (V2)
    void **ptrs;     // [6, nb]: K, Q, S, V, P, O
    int hp;          // packed mode: head_dim rounded up to 8; 0 otherwise
    void *pk;        // packed mode: [3, nb, N, hp] q, k, v in dt, pad columns 0
    void *po;        // packed mode: [nb, N, hp] O in dt
    size_t bytes;
    UnfusedWs(char *base, const Geom &g, int nwin, swin_dtype dt) {
        size_t nb = (size_t)nwin * g.heads, nn = (size_t)g.N * g.N, off = 0, es = swin_dtype_size(dt);
        S = (float *)swin_carve(base, &off, nb * nn * 4);
        P = dt == SWIN_DT_F32 ? (void *)S : swin_carve(base, &off, nb * nn * 2);
        rnorm = (float *)swin_carve(base, &off, nb * 2 * g.N * 4);
        ptrs = (void **)swin_carve(base, &off, 6 * nb * sizeof(void *));
        hp = unf_packed(g, dt) ? (g.hd + 7) / 8 * 8 : 0;
        pk = hp ? swin_carve(base, &off, 3 * nb * g.N * hp * es) : NULL;
        po = hp ? swin_carve(base, &off, nb * g.N * hp * es) : NULL;
        bytes = off;
    }
};

/* pk[which][b][i][c] = qkv[w, i, which, h, c] for c < hd, 0 for hd <= c < hp */
template <typename T>
__global__ void unf_pack_kernel(T *pk, const T *qkv, Geom g, int nb, int hp) {
    swin_pdl_begin();
    const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x, per = (size_t)nb * g.N * hp;
    if (idx >= 3 * per) return;
    const int c = (int)(idx % hp), i = (int)(idx / hp % g.N);
    const size_t bw = idx / hp / g.N;   // which * nb + b
    const int b = (int)(bw % nb), which = (int)(bw / nb), w = b / g.heads, h = b % g.heads;
    float x = 0.f;
    if (c < g.hd) x = load_f(qkv, ((size_t)w * g.N + i) * 3 * g.C + (size_t)which * g.C + (size_t)h * g.hd + c);
    store_f(pk, idx, x);   // exact: x is a value of T
}

/* out[w, i, h, c] = po[b][i][c] for c < hd */
template <typename T>
__global__ void unf_scatter_kernel(T *out, const T *po, Geom g, int nb, int hp) {
    swin_pdl_begin();
    const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)nb * g.N * g.hd) return;
    const int c = (int)(idx % g.hd), i = (int)(idx / g.hd % g.N), b = (int)(idx / g.hd / g.N);
    const int w = b / g.heads, h = b % g.heads;
    out[((size_t)w * g.N + i) * g.C + (size_t)h * g.hd + c] = po[((size_t)b * g.N + i) * hp + c];
}

template <typename T>
__global__ void unf_ptrs_kernel(void **ptrs, const T *qkv, T *out, float *S, T *P, Geom g, int nb) {
    swin_pdl_begin();
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nb) return;
    int w = b / g.heads, h = b % g.heads, hd = g.hd;
    size_t nn = (size_t)g.N * g.N;
    const T *q = qkv + (size_t)w * g.N * 3 * g.C + h * hd;
    ptrs[0 * nb + b] = (void *)(q + g.C);
    ptrs[1 * nb + b] = (void *)q;
    ptrs[2 * nb + b] = (void *)(S + b * nn);
    ptrs[3 * nb + b] = (void *)(q + 2 * g.C);
    ptrs[4 * nb + b] = (void *)(P + b * nn);
    ptrs[5 * nb + b] = (void *)(out + (size_t)w * g.N * g.C + h * hd);
}

/* rnorm[(b*2 + 0)*N + i] = 1/max(|q_i|, 1e-12), [(b*2 + 1)*N + i] the same for k */
template <typename T>
__global__ void unf_rnorm_kernel(float *rnorm, const T *qkv, Geom g, int nb) {
    swin_pdl_begin();
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)nb * 2 * g.N) return;
    int i = (int)(idx % g.N), which = (int)(idx / g.N % 2), b = (int)(idx / g.N / 2);
    int w = b / g.heads, h = b % g.heads, hd = g.hd;
    const T *x = qkv + ((size_t)w * g.N + i) * 3 * g.C + which * g.C + h * hd;
    float ss = 0.f;
    for (int c = 0; c < hd; c++) {
        float f = load_f(x, c);
        ss = fmaf(f, f, ss);
    }
    rnorm[idx] = 1.0f / fmaxf(sqrtf(ss), 1e-12f);
}

/* one warp per score row (b, i); JPL = keys per lane (>= N/32) */
template <typename T, int JPL>
__global__ void __launch_bounds__(Tiles::kSoftmaxWarps * 32)
unf_softmax_kernel(T *P, const float *S, const float *rnorm, const float *bias_table, const float *scale,
                   Geom g, int v2, int nb) {
    swin_pdl_begin();
    const int lane = threadIdx.x & 31;
    const size_t row = (size_t)blockIdx.x * Tiles::kSoftmaxWarps + (threadIdx.x >> 5);
    if (row >= (size_t)nb * g.N) return;
    const int i = (int)(row % g.N), b = (int)(row / g.N), w = b / g.heads, h = b % g.heads;
    int wy, wx;
    window_pos(g, w, &wy, &wx);
    const int qi = token_info(g, wy, wx, i), qb = info_qbase(g, qi);
    float sc = __ldg(scale + h);
    if (v2) sc *= rnorm[(size_t)b * 2 * g.N + i];
    const float *srow = S + row * g.N;
    float val[JPL], mx = -INFINITY;
#pragma unroll
    for (int u = 0; u < JPL; u++) {
        int j = lane + 32 * u;
        val[u] = -INFINITY;
        if (j < g.N) {
            int kj = token_info(g, wy, wx, j);
            float s = srow[j] * sc;
            if (v2) s *= rnorm[((size_t)b * 2 + 1) * g.N + j];
            s += __ldg(bias_table + (size_t)(qb - info_koff(kj)) * g.heads + h);
            if (info_region(kj) != info_region(qi)) s += kMask;
            val[u] = s;
        }
        mx = fmaxf(mx, val[u]);
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.f;
#pragma unroll
    for (int u = 0; u < JPL; u++) {
        val[u] = expf(val[u] - mx);
        sum += val[u];
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = 1.0f / sum;
    T *prow = P + row * g.N;   // for fp32 this is srow: every lane has read its values above
#pragma unroll
    for (int u = 0; u < JPL; u++) {
        int j = lane + 32 * u;
        if (j < g.N) store_f(prow, j, val[u] * inv);
    }
}

template <typename T> struct CudaType;
template <> struct CudaType<float> { static constexpr cudaDataType_t v = CUDA_R_32F; };
template <> struct CudaType<__half> { static constexpr cudaDataType_t v = CUDA_R_16F; };
template <> struct CudaType<__nv_bfloat16> { static constexpr cudaDataType_t v = CUDA_R_16BF; };

template <typename T, int JPL>
static swin_status launch_unf_softmax(T *P, const UnfusedWs &ws, const float *bias_table, const float *scale,
                                      const Geom &g, int v2, int nb, cudaStream_t st) {
    size_t rows = (size_t)nb * g.N, blocks = (rows + Tiles::kSoftmaxWarps - 1) / Tiles::kSoftmaxWarps;
    swin_launch(unf_softmax_kernel<T, JPL>, (unsigned)blocks, Tiles::kSoftmaxWarps * 32, 0, st, P, ws.S, ws.rnorm,
                bias_table, scale, g, v2, nb);
    SWIN_LAUNCH_CHECK("unf_softmax_kernel", st);
    return SWIN_OK;
}

template <typename T>
static swin_status launch_unfused(T *out, const T *qkv, const float *bias_table, const float *scale,
                                  const Geom &g, int nwin, int v2, swin_dtype dt, void *workspace,
                                  cublasHandle_t handle, cudaStream_t st) {
    const int nb = nwin * g.heads, hd = g.hd, ld3 = 3 * g.C;
    UnfusedWs ws((char *)workspace, g, nwin, dt);
    SWIN_CUBLAS_TRY(cublasSetStream(handle, st));
    const float one = 1.f, zero = 0.f;
    const cudaDataType_t ct = CudaType<T>::v;
    void **p = ws.ptrs;
    const int hp = ws.hp;
    const long long sqk = (long long)g.N * hp, snn = (long long)g.N * g.N;   // packed-mode batch strides
    if (hp) {
        const T *pq = (const T *)ws.pk, *pk = pq + (size_t)nb * sqk;
        size_t n = (size_t)3 * nb * sqk;
        swin_launch(unf_pack_kernel<T>, (unsigned)((n + 255) / 256), 256, 0, st, (T *)ws.pk, qkv, g, nb, hp);
        SWIN_LAUNCH_CHECK("unf_pack_kernel", st);
        /* column-major view: S^T (N x N, ld N) = K (N x hp) . Q^T, packed blocks with ld hp */
        SWIN_CUBLAS_TRY(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, g.N, g.N, hp, &one, pk, ct, hp,
                                                   sqk, pq, ct, hp, sqk, &zero, ws.S, CUDA_R_32F, g.N, snn, nb,
                                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    } else {
        swin_launch(unf_ptrs_kernel<T>, (nb + 255) / 256, 256, 0, st, ws.ptrs, qkv, out, ws.S, (T *)ws.P, g, nb);
        SWIN_LAUNCH_CHECK("unf_ptrs_kernel", st);
        /* column-major view: S^T (N x N, ld N) = K (N x hd) . Q^T, K and Q read with ld 3C */
        SWIN_CUBLAS_TRY(cublasGemmBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, g.N, g.N, hd, &one,
                                            (const void *const *)(p + 0 * (size_t)nb), ct, ld3,
                                            (const void *const *)(p + 1 * (size_t)nb), ct, ld3, &zero,
                                            p + 2 * (size_t)nb, CUDA_R_32F, g.N, nb, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT));
    }
    if (v2) {
        size_t n = (size_t)nb * 2 * g.N;
        swin_launch(unf_rnorm_kernel<T>, (unsigned)((n + 255) / 256), 256, 0, st, ws.rnorm, qkv, g, nb);
        SWIN_LAUNCH_CHECK("unf_rnorm_kernel", st);
    }
    swin_status s;
    if (g.N <= 64) s = launch_unf_softmax<T, 2>((T *)ws.P, ws, bias_table, scale, g, v2, nb, st);
    else if (g.N <= 256) s = launch_unf_softmax<T, 8>((T *)ws.P, ws, bias_table, scale, g, v2, nb, st);
    else if (g.N <= 576) s = launch_unf_softmax<T, 18>((T *)ws.P, ws, bias_table, scale, g, v2, nb, st);
    else s = launch_unf_softmax<T, 32>((T *)ws.P, ws, bias_table, scale, g, v2, nb, st);
    if (s != SWIN_OK) return s;
    if (hp) {
        const T *pv = (const T *)ws.pk + (size_t)2 * nb * sqk;
        /* column-major view: O^T (hp x N, ld hp) = V^T (hp x N, ld hp) . P^T (N x N, ld N), then scattered */
        SWIN_CUBLAS_TRY(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, hp, g.N, g.N, &one, pv, ct, hp,
                                                   sqk, ws.P, ct, g.N, snn, &zero, ws.po, ct, hp, sqk, nb,
                                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        size_t n = (size_t)nb * g.N * hd;
        swin_launch(unf_scatter_kernel<T>, (unsigned)((n + 255) / 256), 256, 0, st, out, (const T *)ws.po, g, nb, hp);
        SWIN_LAUNCH_CHECK("unf_scatter_kernel", st);
        return SWIN_OK;
    }
    /* column-major view: out^T (hd x N, ld C) = V^T (hd x N, ld 3C) . P^T (N x N, ld N) */
    SWIN_CUBLAS_TRY(cublasGemmBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, hd, g.N, g.N, &one,
                                        (const void *const *)(p + 3 * (size_t)nb), ct, ld3,
                                        (const void *const *)(p + 4 * (size_t)nb), ct, g.N, &zero,
                                        p + 5 * (size_t)nb, ct, g.C, nb, CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT));
    return SWIN_OK;
}

} // namespace swin_attn

#endif
