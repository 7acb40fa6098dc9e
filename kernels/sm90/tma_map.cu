/* tma_map.cu - tma_map.h: cuTensorMapEncodeTiled taken once from the driver through the runtime,
 * and the one map shape the TMA kernels use (128-byte boxes, 128-byte swizzle). */
#include <cudaTypedefs.h>

#include "common.cuh"
#include "sm90/tma_map.h"

namespace {

typedef PFN_cuTensorMapEncodeTiled_v12000 encode_fn;

/* cuTensorMapEncodeTiled from the driver (NULL when it has none) */
encode_fn tensor_map_encoder(void) {
    static const encode_fn fn = []() -> encode_fn {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            return (void)cudaGetLastError(), (encode_fn)NULL;
        return (encode_fn)p;
    }();
    return fn;
}

} // namespace

int swin_tma_available(void) { return tensor_map_encoder() != NULL; }

swin_status swin_tma_map_2d(CUtensorMap *map, const char *op, const char *what, const void *p, int rows, int cols,
                            int esz, int box_rows) {
    const encode_fn enc = tensor_map_encoder();
    if (!enc) return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: the CUDA driver has no cuTensorMapEncodeTiled", op);
    const CUtensorMapDataType type = esz == 4   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                     : esz == 2 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                : CU_TENSOR_MAP_DATA_TYPE_UINT8;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)cols * esz};
    const cuuint32_t box[2] = {(cuuint32_t)(128 / esz), (cuuint32_t)box_rows}, step[2] = {1, 1};
    /* bf16 is described as fp16: the map only moves bytes (no out-of-bounds NaN fill asked) */
    const CUresult r = enc(map, type, 2, const_cast<void *>(p), dims, strides, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                           CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return swin_fail(SWIN_ERR_CUDA, "%s: cuTensorMapEncodeTiled failed (%d) for %s [%d, %d] at %p", op, (int)r, what,
                         rows, cols, p);
    return SWIN_OK;
}
