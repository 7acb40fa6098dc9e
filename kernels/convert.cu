/* convert.cu - dtype conversion op (kernels/ops.h) and the definition of swin_cuda_debug_sync.
 *
 *   swin_convert_cuda: dst[n] (dt_dst) <- src[n] (dt_src); a device-to-device copy when the
 *   dtypes agree. Used for the input image, the logits and weight uploads; not on a hot path.
 * Test: tests/test_gpu_kernels.c (cases "convert").
 */
#include "row.cuh"

int swin_cuda_debug_sync = 0;

template <typename D, typename S>
static __global__ void convert_kernel(D *__restrict__ dst, const S *__restrict__ src, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        store_f(dst, i, load_f(src, i));
}

template <typename D, typename S>
static swin_status convert_launch(D *dst, const S *src, size_t n, cudaStream_t st) {
    convert_kernel<D, S><<<swin_grid_for(n), 256, 0, st>>>(dst, src, n);
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
