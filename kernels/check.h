/* check.h - the one place that turns a failed CUDA runtime or cuBLAS(Lt) call into a status:
 * return SWIN_ERR_CUDA with the call's text, file, line and the library's own message.
 * C and CUDA C++ (kernels/, src/cuda/).
 *
 *   SWIN_CUDA_TRY(call)     a cudaError_t call
 *   SWIN_CUBLAS_TRY(call)   a cublasStatus_t call (cuBLAS or cuBLASLt)
 * SWIN_LAUNCH_CHECK (after a kernel launch) lives in common.cuh, next to the kernels.
 */
#ifndef SWIN_CHECK_H
#define SWIN_CHECK_H

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "../src/internal.h"

#define SWIN_CUDA_TRY(call)                                                                    \
    do {                                                                                       \
        cudaError_t swin_e_ = (call);                                                          \
        if (swin_e_ != cudaSuccess)                                                            \
            return swin_fail(SWIN_ERR_CUDA, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, \
                             cudaGetErrorString(swin_e_));                                     \
    } while (0)

#define SWIN_CUBLAS_TRY(call)                                                                  \
    do {                                                                                       \
        cublasStatus_t swin_s_ = (call);                                                       \
        if (swin_s_ != CUBLAS_STATUS_SUCCESS)                                                  \
            return swin_fail(SWIN_ERR_CUDA, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, \
                             cublasGetStatusString(swin_s_));                                  \
    } while (0)

#endif
