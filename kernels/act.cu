/* act.cu - activation op (kernels/ops.h): x = GELU(x) (+ residual), the erf form of PyTorch's
 * nn.GELU() (not the tanh approximation), computed in fp32 like PyTorch's fp16/bf16 kernels:
 * 0.5 x (1 + erff(x / sqrt 2)). It runs after the fc1 GEMM (cuBLASLt's GELU epilogue is the tanh
 * approximation). 16-byte packs when n and the pointers allow.
 * Cost: the kernel issues ~60 instructions per element (erff alone ~25), so it is bound by
 * instruction issue more than by memory. Two cheaper erfc approximations (Abramowitz & Stegun
 * 7.1.26, Numerical Recipes erfcc) were measured on an H200 and were not faster; the real fix is
 * to fuse GELU into the fc1 GEMM's epilogue (a GEMM of our own), not done yet.
 * Also here: swin_gelu_form_cuda, which evaluates each GELU formula of common.cuh for its test.
 * Test: tests/test_gpu_kernels.c (cases "gelu", "gelu ulp" and "gelu form"), tests/test_gpu_gemm.c
 * (fc1 shapes).
 */
#include "row.cuh"

template <typename T, int V>
static __global__ void gelu_kernel(T *__restrict__ x, const T *__restrict__ residual, size_t packs) {
    swin_pdl_begin();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += (size_t)gridDim.x * blockDim.x) {
        float a[V];
        pack_load<T, V>(a, x + i * V);
#pragma unroll
        for (int k = 0; k < V; k++) a[k] = swin_gelu_erf(a[k]);
        if (residual) {
            float r[V];
            pack_load<T, V>(r, residual + i * V);
#pragma unroll
            for (int k = 0; k < V; k++) a[k] += r[k];
        }
        pack_store<T, V>(x + i * V, a);
    }
}

template <typename T>
static swin_status gelu_launch(T *x, const T *residual, size_t n, cudaStream_t st) {
    constexpr int VV = swin_vec<T>::n;
    if (n % VV == 0 && swin_aligned16(x) && (!residual || swin_aligned16(residual)))
        swin_launch(gelu_kernel<T, VV>, swin_grid_for(n / VV), 256, 0, st, x, residual, n / VV);
    else
        swin_launch(gelu_kernel<T, 1>, swin_grid_for(n), 256, 0, st, x, residual, n);
    SWIN_LAUNCH_CHECK("gelu_kernel", st);
    return SWIN_OK;
}

extern "C" swin_status swin_gelu_cuda(void *x, const void *residual, size_t n, swin_dtype dt, cudaStream_t st) {
    static const char op[] = "swin_gelu_cuda";
    SWIN_TRY(swin_check_dtype(op, dt));
    if (n == 0) return swin_fail(SWIN_ERR_ARGUMENT, "%s: n is 0", op);
    SWIN_TRY(swin_check_ptr(op, "x", x, swin_dtype_size(dt)));
    if (residual) SWIN_TRY(swin_check_ptr(op, "residual", residual, swin_dtype_size(dt)));
    if (residual == x) return swin_fail(SWIN_ERR_ARGUMENT, "%s: residual aliases x", op);
    SWIN_DISPATCH(dt, T, return gelu_launch<T>((T *)x, (const T *)residual, n, st));
    return SWIN_OK;
}

// ---- each GELU formula alone, for its test

template <int F>   /* swin_gelu_kind */
static __global__ void gelu_form_kernel(float *__restrict__ y, const float *__restrict__ x, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = F == SWIN_GELU_AS ? swin_gelu_erf16(x[i]) : swin_gelu_erfc(x[i]);
}

extern "C" swin_status swin_gelu_form_cuda(float *y, const float *x, size_t n, swin_gelu_kind form, cudaStream_t st) {
    static const char op[] = "swin_gelu_form_cuda";
    if (n == 0) return swin_fail(SWIN_ERR_ARGUMENT, "%s: n is 0", op);
    SWIN_TRY(swin_check_ptr(op, "y", y, sizeof(float)));
    SWIN_TRY(swin_check_ptr(op, "x", x, sizeof(float)));
    if (form != SWIN_GELU_ERFC && form != SWIN_GELU_AS)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: unknown GELU form %d", op, (int)form);
    auto kern = form == SWIN_GELU_AS ? gelu_form_kernel<SWIN_GELU_AS> : gelu_form_kernel<SWIN_GELU_ERFC>;
    kern<<<swin_grid_for(n), 256, 0, st>>>(y, x, n);
    SWIN_LAUNCH_CHECK("gelu_form_kernel", st);
    return SWIN_OK;
}
