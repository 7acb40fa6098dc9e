/* fp8.cu - FP8 (E4M3) ops (kernels/ops.h), the arithmetic of src/fp8.h on the device:
 *   swin_amax_cuda               *amax = max(*amax, max |x|): calibration, NaN kept (it wins)
 *   swin_quantize_fp8_cuda       q = e4m3(x * inv_scale)                  (a site's GEMM input)
 *   swin_gelu_quantize_fp8_cuda  q = e4m3(GELU(x) * inv_scale)            (fc1 -> fc2, one pass)
 *   swin_qdq_fp8_cuda            y = dt(e4m3(x * inv_scale) * scale), optionally after GELU
 *                                (sites cuBLASLt cannot run in FP8: K or N not a multiple of 16)
 *   swin_fp8_weights_cuda        per output channel: ws[n] = max |w[n,:]| / 448 (1 when 0),
 *                                q = e4m3(w * (1 / ws[n])), from the fp32 weights; deq = dt(q * ws)
 *   swin_scale_vec_cuda          dst[n] = src[n] * s;   swin_fill_cuda  dst[n] = v
 * e4m3() (swin_e4m3, common.cuh) is the hardware conversion with __NV_SATFINITE (round to
 * nearest even, +-448 at most, NaN stays NaN), which src/fp8.c reproduces on the CPU bit for bit.
 * Test: tests/test_gpu_kernels.c (case "fp8"), tests/test_gpu_engine.c (fp8 against the CPU emulation).
 */
#include "row.cuh"

static __device__ __forceinline__ float e4m3_to_f(unsigned char q) {
    __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)q, __NV_E4M3);
    return __half2float(__half(h));
}


// ---- amax: per-thread max of the bit patterns of |x| (non-negative floats order as unsigned
// integers, and a NaN's pattern is above +inf's, so a NaN is never hidden), warp, block, atomic

template <typename T>
static __global__ void amax_kernel(float *__restrict__ amax, const T *__restrict__ x, size_t n) {
    swin_pdl_begin();
    unsigned m = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        m = max(m, __float_as_uint(fabsf(load_f(x, i))));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    __shared__ unsigned red[32];
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x < 32) {
        m = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : 0u;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (threadIdx.x == 0) atomicMax((unsigned *)amax, m);
    }
}

extern "C" swin_status swin_amax_cuda(float *amax, const void *x, size_t n, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_amax_cuda";
    SWIN_TRY(swin_check_dtype(op, dt));
    if (n == 0) return swin_fail(SWIN_ERR_ARGUMENT, "%s: n is 0", op);
    SWIN_TRY(swin_check_ptr(op, "amax", amax, 4));
    SWIN_TRY(swin_check_ptr(op, "x", x, swin_dtype_size(dt)));
    unsigned grid = swin_grid_for(n);
    if (grid > 1024) grid = 1024;
    SWIN_DISPATCH(dt, T, swin_launch(amax_kernel<T>, grid, 256, 0, st, amax, (const T *)x, n));
    SWIN_LAUNCH_CHECK("amax_kernel", st);
    return SWIN_OK;
}

// ---- column amax: amax[n] = max(amax[n], max_m |x[m, n]|) over x [M, N] (the qkv output's channels,
// calibration). A thread walks one column over a slice of rows (consecutive threads, consecutive
// columns: coalesced), then one atomicMax a column and thread, on the same bit patterns as above.

template <typename T>
static __global__ void col_amax_kernel(float *__restrict__ amax, const T *__restrict__ x, int M, int N, int rows) {
    swin_pdl_begin();
    const int n = blockIdx.x * blockDim.x + threadIdx.x, m0 = blockIdx.y * rows;
    if (n >= N) return;
    const int m1 = min(M, m0 + rows);
    unsigned m = 0;
    for (int r = m0; r < m1; r++) m = max(m, __float_as_uint(fabsf(load_f(x, (size_t)r * N + n))));
    atomicMax((unsigned *)amax + n, m);
}

extern "C" swin_status swin_col_amax_cuda(float *amax, const void *x, int M, int N, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_col_amax_cuda";
    SWIN_TRY(swin_check_dtype(op, dt));
    if (M < 1 || N < 1) return swin_fail(SWIN_ERR_ARGUMENT, "%s: M %d, N %d", op, M, N);
    SWIN_TRY(swin_check_ptr(op, "amax", amax, 4));
    SWIN_TRY(swin_check_ptr(op, "x", x, swin_dtype_size(dt)));
    const int rows = 256, gy = (M + rows - 1) / rows;
    if (gy > 65535) return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: M %d: too many rows", op, M);
    const dim3 grid((unsigned)((N + 127) / 128), (unsigned)gy);
    SWIN_DISPATCH(dt, T, swin_launch(col_amax_kernel<T>, grid, 128, 0, st, amax, (const T *)x, M, N, rows));
    SWIN_LAUNCH_CHECK("col_amax_kernel", st);
    return SWIN_OK;
}

// ---- quantise (optionally after GELU): 8 elements per thread, read as one 16-byte pack (fp32: two)
// and written as 8 bytes, when the pointers allow (the ops that write an FP8 site's input write
// its E4M3 copy themselves where they can: swin_q8_dst)

template <typename T, int V, bool Gelu>
static __global__ void quantize_kernel(unsigned char *__restrict__ q, const T *__restrict__ x, size_t packs,
                                       float inv) {
    swin_pdl_begin();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += (size_t)gridDim.x * blockDim.x) {
        float a[V];
        if constexpr (V == 8) pack_load<T, V>(a, x + i * V);
        else a[0] = load_f(x, i);
        if constexpr (Gelu) {
#pragma unroll
            for (int k = 0; k < V; k++) a[k] = swin_gelu_erf(a[k]);
        }
        swin_e4m3_store<V>(q + i * V, a, inv);
    }
}

template <typename T, bool Gelu>
static swin_status quantize_launch(unsigned char *q, const T *x, size_t n, float inv, cudaStream_t st) {
    if (n % 8 == 0 && ((uintptr_t)q & 7u) == 0 && (uintptr_t)x % (8 * sizeof(T)) == 0)   /* a pack's alignment */
        swin_launch(quantize_kernel<T, 8, Gelu>, swin_grid_for(n / 8), 256, 0, st, q, x, n / 8, inv);
    else
        swin_launch(quantize_kernel<T, 1, Gelu>, swin_grid_for(n), 256, 0, st, q, x, n, inv);
    SWIN_LAUNCH_CHECK("quantize_kernel", st);
    return SWIN_OK;
}

static swin_status quantize_args(const char *op, const void *q, const void *x, size_t n, float inv, swin_dtype dt) {
    SWIN_TRY(swin_check_dtype(op, dt));
    if (n == 0) return swin_fail(SWIN_ERR_ARGUMENT, "%s: n is 0", op);
    if (!(inv > 0.0f) || isinf(inv)) return swin_fail(SWIN_ERR_ARGUMENT, "%s: 1 / scale is %g", op, (double)inv);
    SWIN_TRY(swin_check_ptr(op, "q", q, 1));
    return swin_check_ptr(op, "x", x, swin_dtype_size(dt));
}

extern "C" swin_status swin_quantize_fp8_cuda(uint8_t *q, const void *x, size_t n, float inv_scale, swin_dtype dt,
                                              cudaStream_t st) {
    SWIN_TRY(quantize_args("swin_quantize_fp8_cuda", q, x, n, inv_scale, dt));
    SWIN_DISPATCH(dt, T, return quantize_launch<T, false>(q, (const T *)x, n, inv_scale, st));
    return SWIN_OK;
}

extern "C" swin_status swin_gelu_quantize_fp8_cuda(uint8_t *q, const void *x, size_t n, float inv_scale,
                                                   swin_dtype dt, cudaStream_t st) {
    SWIN_TRY(quantize_args("swin_gelu_quantize_fp8_cuda", q, x, n, inv_scale, dt));
    SWIN_DISPATCH(dt, T, return quantize_launch<T, true>(q, (const T *)x, n, inv_scale, st));
    return SWIN_OK;
}

// ---- quantise-dequantise into the session dtype (sites run as a 16-bit GEMM on E4M3 values)

template <typename T>
static __global__ void qdq_kernel(T *__restrict__ y, const T *__restrict__ x, size_t n, float inv, float scale,
                                  int gelu) {
    swin_pdl_begin();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float a = load_f(x, i);
        if (gelu) a = swin_gelu_erf(a);
        store_f(y, i, e4m3_to_f(swin_e4m3(a * inv)) * scale);
    }
}

extern "C" swin_status swin_qdq_fp8_cuda(void *y, const void *x, size_t n, float scale, int gelu, swin_dtype dt,
                                         cudaStream_t st) {
    static const char op[] = "swin_qdq_fp8_cuda";
    float inv = 1.0f / scale;
    SWIN_TRY(quantize_args(op, y, x, n, inv, dt));
    if (y == x) return swin_fail(SWIN_ERR_ARGUMENT, "%s: y aliases x", op);
    SWIN_DISPATCH(dt, T, swin_launch(qdq_kernel<T>, swin_grid_for(n), 256, 0, st, (T *)y, (const T *)x, n, inv, scale,
                                     gelu));
    SWIN_LAUNCH_CHECK("qdq_kernel", st);
    return SWIN_OK;
}

// ---- weights: one block per output channel

template <typename T>
static __global__ void weights_kernel(unsigned char *__restrict__ q, float *__restrict__ ws, T *__restrict__ deq,
                                      const float *__restrict__ w, int K) {
    swin_pdl_begin();
    const float *row = w + (size_t)blockIdx.x * K;
    float m = 0.0f;
    for (int k = threadIdx.x; k < K; k += blockDim.x) m = fmaxf(m, fabsf(row[k]));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    __shared__ float red[32];
    __shared__ float s_scale;
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 1; i < (int)(blockDim.x >> 5); i++) m = fmaxf(m, red[i]);
        m = fmaxf(m, red[0]);
        float s = m > 0.0f ? m / 448.0f : 1.0f;
        s_scale = s;
        ws[blockIdx.x] = s;
    }
    __syncthreads();
    float s = s_scale, inv = 1.0f / s;
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
        unsigned char v = swin_e4m3(row[k] * inv);
        q[(size_t)blockIdx.x * K + k] = v;
        if (deq) store_f(deq, (size_t)blockIdx.x * K + k, e4m3_to_f(v) * s);
    }
}

extern "C" swin_status swin_fp8_weights_cuda(uint8_t *q, float *ws, void *deq, const float *w, int N, int K,
                                             swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_fp8_weights_cuda";
    if (N < 1 || K < 1) return swin_fail(SWIN_ERR_ARGUMENT, "%s: N %d and K %d must be positive", op, N, K);
    SWIN_TRY(swin_check_dtype(op, dt));
    SWIN_TRY(swin_check_ptr(op, "q", q, 1));
    SWIN_TRY(swin_check_ptr(op, "ws", ws, 4));
    SWIN_TRY(swin_check_ptr(op, "w", w, 4));
    SWIN_DISPATCH(dt, T, swin_launch(weights_kernel<T>, N, 256, 0, st, q, ws, (T *)deq, w, K));
    SWIN_LAUNCH_CHECK("weights_kernel", st);
    return SWIN_OK;
}

// ---- small vectors

static __global__ void scale_vec_kernel(float *dst, const float *src, float s, int n) {
    swin_pdl_begin();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src ? src[i] * s : s;
}

/* the qkv GEMM writing E4M3 (src/fp8.h): with deq[n] its output scales, cs[n] = wsx[n] / deq[n] and
 * bq[n] = fp16(b[n] / deq[n]) (0 without a bias), each 1 / deq[n] in fp32 as the CPU takes it */
static __global__ void fold_out_kernel(float *cs, __half *bq, const float *wsx, const __half *b, const float *deq,
                                       int n) {
    swin_pdl_begin();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float inv = 1.0f / deq[i];
    cs[i] = wsx[i] * inv;
    bq[i] = __float2half_rn(b ? __half2float(b[i]) * inv : 0.0f);
}

extern "C" swin_status swin_fp8_fold_out_cuda(float *cs, void *bq, const float *wsx, const void *b, const float *deq,
                                              int n, cudaStream_t st) {
    static const char op[] = "swin_fp8_fold_out_cuda";
    if (n < 1 || !cs || !bq || !wsx || !deq) return swin_fail(SWIN_ERR_ARGUMENT, "%s: n %d or a NULL vector", op, n);
    swin_launch(fold_out_kernel, (n + 255) / 256, 256, 0, st, cs, (__half *)bq, wsx, (const __half *)b, deq, n);
    SWIN_LAUNCH_CHECK("fold_out_kernel", st);
    return SWIN_OK;
}

extern "C" swin_status swin_scale_vec_cuda(float *dst, const float *src, float s, int n, cudaStream_t st) {
    static const char op[] = "swin_scale_vec_cuda";
    if (n < 1) return swin_fail(SWIN_ERR_ARGUMENT, "%s: n %d", op, n);
    SWIN_TRY(swin_check_ptr(op, "dst", dst, 4));
    swin_launch(scale_vec_kernel, (n + 255) / 256, 256, 0, st, dst, src, s, n);
    SWIN_LAUNCH_CHECK("scale_vec_kernel", st);
    return SWIN_OK;
}
