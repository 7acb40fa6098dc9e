/* images.c - RGB8 host images into the engine: upload, GPU preprocessing, forward (engine.h).
 * Placeholder until the GPU preprocessing kernels land: reports unsupported. */
#include <stdlib.h>

#include "arena.h"

swin_status swin_engine_forward_images(swin_engine *e, const swin_preprocess_params *p,
                                       const swin_image *imgs, int n, float *logits,
                                       swin_images_timing *timing) {
    (void)e; (void)p; (void)imgs; (void)n; (void)logits; (void)timing;
    return swin_fail(SWIN_ERR_UNSUPPORTED, "GPU preprocessing is not built yet (use --preprocess-device cpu)");
}

void *swin_engine_host_alloc(swin_engine *e, size_t bytes) {
    void *p = NULL;
    if (cudaSetDevice(e->dev) != cudaSuccess || cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return p;
}

void swin_engine_host_free(swin_engine *e, void *ptr) {
    (void)e;
    if (ptr) cudaFreeHost(ptr);
}
