/* testutil_cuda.h - what the GPU tests that call the CUDA runtime directly share. */
#ifndef SWIN_TESTUTIL_CUDA_H
#define SWIN_TESTUTIL_CUDA_H
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

/* a CUDA runtime call the test cannot go on without (allocations, copies): on failure the call
 * and the error are printed and the test exits 1 */
#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
