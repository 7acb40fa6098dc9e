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

/* Timing for a test's printed figures (never asserted): the median over 20 rounds of the last of 4
 * back-to-back calls of run(ctx, st), which enqueues one launch (or a few) and returns 0 or its
 * error status; the first failure's status goes to *err (0 when every call succeeded). Uses
 * tu_median (testutil.h). */
typedef int (*tu_enqueue_fn)(void *ctx, cudaStream_t st);
static inline float tu_time_enqueue(tu_enqueue_fn run, void *ctx, cudaStream_t st, int *err) {
    cudaEvent_t e0, e1;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    float t[20];
    *err = 0;
    for (int it = 0; it < 20; it++) {
        for (int k = 0; k < 4 && !*err; k++) {
            if (k == 3) CUDA_OK(cudaEventRecord(e0, st));
            *err = run(ctx, st);
        }
        CUDA_OK(cudaEventRecord(e1, st));
        CUDA_OK(cudaEventSynchronize(e1));
        t[it] = 0.0f;
        if (!*err) CUDA_OK(cudaEventElapsedTime(&t[it], e0, e1));
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return tu_median(t, 20);
}

#endif
