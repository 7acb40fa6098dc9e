/* convert.cu - dtype conversion op (kernels/ops.h), the definition of swin_cuda_debug_sync and the
 * PDL switch (swin_pdl_enabled, swin_pdl_set; the launch helper is in common.cuh).
 *
 *   swin_convert_cuda: dst[n] (dt_dst) <- src[n] (dt_src); a device-to-device copy when the
 *   dtypes agree. Used for the input image, the logits and weight uploads; not on a hot path.
 * Test: tests/test_gpu_kernels.c (cases "convert").
 */
#include "row.cuh"

int swin_cuda_debug_sync = 0;

// ---- the PDL switch

static int pdl_override = -1;   /* swin_pdl_set: -1 the environment's */

extern "C" void swin_pdl_set(int on) { pdl_override = on < 0 ? -1 : on != 0; }

/* a kernel built like every kernel of kernels/ but sm90/ (which is sm_90a only) */
static __global__ void pdl_probe_kernel() {}

/* SWIN_PDL not 0 (on by default), compute capability 9.0+, and the kernels the device runs compiled for a virtual
 * architecture of 90 or more: kernels JIT-compiled from older PTX would lack swin_pdl_wait */
extern "C" int swin_pdl_enabled(void) {
    static int env = -1;
    if (env < 0) env = swin_env_on("SWIN_PDL", 1);
    if (!(pdl_override < 0 ? env : pdl_override)) return 0;
    static int known[64];
    return swin_device_once(known, [](int dev) {
        int major = 0;
        cudaFuncAttributes fa;
        return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major >= 9 &&
               cudaFuncGetAttributes(&fa, pdl_probe_kernel) == cudaSuccess && fa.ptxVersion >= 90;
    });
}

template <typename D, typename S>
static __global__ void convert_kernel(D *__restrict__ dst, const S *__restrict__ src, size_t n) {
    swin_pdl_begin();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        store_f(dst, i, load_f(src, i));
}

template <typename D, typename S>
static swin_status convert_launch(D *dst, const S *src, size_t n, cudaStream_t st) {
    swin_launch(convert_kernel<D, S>, swin_grid_for(n), 256, 0, st, dst, src, n);
    SWIN_LAUNCH_CHECK("convert_kernel", st);
    return SWIN_OK;
}

extern "C" swin_status swin_convert_cuda(void *dst, swin_dtype dt_dst, const void *src, swin_dtype dt_src,
                                         size_t n, cudaStream_t st) {
    static const char op[] = "swin_convert_cuda";
    SWIN_TRY(swin_check_dtype(op, dt_dst));
    SWIN_TRY(swin_check_dtype(op, dt_src));
    if (n == 0) return SWIN_OK;
    SWIN_TRY(swin_check_ptr(op, "dst", dst, swin_dtype_size(dt_dst)));
    SWIN_TRY(swin_check_ptr(op, "src", src, swin_dtype_size(dt_src)));
    if (dt_dst == dt_src) {
        if (dst != src)
            SWIN_CUDA_TRY(cudaMemcpyAsync(dst, src, n * swin_dtype_size(dt_dst), cudaMemcpyDeviceToDevice, st));
        return SWIN_OK;
    }
    if (dst == src) return swin_fail(SWIN_ERR_ARGUMENT, "%s: in-place conversion between dtypes", op);
    SWIN_DISPATCH(dt_dst, D, SWIN_DISPATCH(dt_src, S, return convert_launch<D, S>((D *)dst, (const S *)src, n, st)));
    return SWIN_OK;
}
