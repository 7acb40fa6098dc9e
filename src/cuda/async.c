/* async.c - one forward in flight: begin enqueues, end waits (src/engine.h, "asynchronous
 * forwards"). The image pipeline (src/image/pipeline.c) formats the results of batch k while the
 * GPU runs batch k + 1.
 *
 *   begin   [images: upload + GPU preprocessing into e->input (images.c) | input: one copy]
 *           -> the forward of run_batch rows (engine.c: graph replay or capture)
 *           -> n rows of logits into page-locked staging -> event `done`
 *   end     cudaEventSynchronize(done) (the event blocks instead of spinning, so the decoder
 *           threads keep the cores) -> logits copied to the caller -> timing from the events
 * Test: tests/test_gpu_pipeline.c (through the pipeline), tests/test_gpu_engine.c.
 */
#include <string.h>

#include "arena.h"

static swin_status async_init(swin_engine *e) {
    swin_async *a = &e->async;
    if (a->logits_host) return SWIN_OK;
    for (int i = 0; i < 4; i++) {
        if (a->ev[i]) continue;
        cudaError_t ce = cudaEventCreateWithFlags(&a->ev[i], i == 3 ? cudaEventBlockingSync : cudaEventDefault);
        if (ce != cudaSuccess) {
            a->ev[i] = NULL;
            return swin_fail(SWIN_ERR_CUDA, "cuda:%d: cudaEventCreate: %s", e->dev, cudaGetErrorString(ce));
        }
    }
    size_t bytes = (size_t)e->opt.max_batch * e->m->cfg.num_classes * sizeof(float);
    cudaError_t ce = swin_cuda_alloc((void **)&a->logits_host, bytes, 1);
    if (ce != cudaSuccess) {
        a->logits_host = NULL;
        cudaGetLastError();
        return swin_fail(SWIN_ERR_MEMORY, "cuda:%d: cannot allocate %.1f MiB of page-locked memory for the logits: %s",
                         e->dev, bytes / 1048576.0, cudaGetErrorString(ce));
    }
    return SWIN_OK;
}

void swin_engine_async_free(swin_engine *e) {
    swin_async *a = &e->async;
    for (int i = 0; i < 4; i++)
        if (a->ev[i]) cudaEventDestroy(a->ev[i]);
    if (a->logits_host) cudaFreeHost(a->logits_host);
    memset(a, 0, sizeof *a);
}

static swin_status check_begin(swin_engine *e, int n, int *run_batch, const void *logits) {
    if (!e || !logits) return swin_fail(SWIN_ERR_ARGUMENT, "swin_engine_begin: NULL argument");
    if (e->async.active) return swin_fail(SWIN_ERR_ARGUMENT, "a forward is already in flight on cuda:%d", e->dev);
    if (*run_batch == 0) *run_batch = n;
    if (n < 1 || n > *run_batch || *run_batch > e->opt.max_batch)
        return swin_fail(SWIN_ERR_ARGUMENT, "batch %d run as %d: out of range (1 <= batch <= run <= %d, the "
                         "session's max batch)", n, *run_batch, e->opt.max_batch);
    /* a recording (calibrating) engine runs exactly the n real rows: padding rows hold stale or
     * never-written input, whose values must not reach the amax (its forwards are never captured,
     * so padding buys nothing there) */
    if (e->recording) *run_batch = n;
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    return async_init(e);
}

/* The forward of run_batch rows from e->input, n rows of logits to the staging, `done`. */
static swin_status enqueue_forward(swin_engine *e, int n, int run_batch) {
    swin_async *a = &e->async;
    SWIN_TRY(swin_engine_enqueue(e, run_batch));
    SWIN_CUDA_TRY(cudaMemcpyAsync(a->logits_host, e->logits, (size_t)n * e->m->cfg.num_classes * sizeof(float),
                                  cudaMemcpyDeviceToHost, e->stream));
    SWIN_CUDA_TRY(cudaEventRecord(a->ev[3], e->stream));
    return SWIN_OK;
}

/* After the enqueue: in flight, or drained and cleared on failure. */
static swin_status started(swin_engine *e, swin_status st, int n, float *logits) {
    if (st != SWIN_OK) {
        cudaStreamSynchronize(e->stream);
        cudaGetLastError();
        return st;
    }
    e->async.active = 1;
    e->async.n = n;
    e->async.out = logits;
    return SWIN_OK;
}

swin_status swin_engine_begin_images(swin_engine *e, const swin_preprocess_params *p, const swin_image *imgs,
                                     const int *on_device, int n, int run_batch, float *logits) {
    SWIN_TRY(check_begin(e, n, &run_batch, logits));
    swin_status st = swin_engine_enqueue_images(e, p, imgs, on_device, n, e->async.ev);
    if (st == SWIN_OK) st = enqueue_forward(e, n, run_batch);
    return started(e, st, n, logits);
}

swin_status swin_engine_begin_input(swin_engine *e, const float *input, int n, int run_batch, float *logits) {
    if (!input) return swin_fail(SWIN_ERR_ARGUMENT, "swin_engine_begin_input: NULL input");
    SWIN_TRY(check_begin(e, n, &run_batch, logits));
    const swin_config *c = &e->m->cfg;
    swin_async *a = &e->async;
    size_t bytes = (size_t)n * 3 * c->img_h * c->img_w * sizeof(float);
    swin_status st = SWIN_OK;
    cudaError_t ce = cudaEventRecord(a->ev[0], e->stream);
    if (ce == cudaSuccess) ce = cudaMemcpyAsync(e->input, input, bytes, cudaMemcpyHostToDevice, e->stream);
    if (ce == cudaSuccess) ce = cudaEventRecord(a->ev[1], e->stream);
    if (ce == cudaSuccess) ce = cudaEventRecord(a->ev[2], e->stream);   /* no preprocessing */
    if (ce != cudaSuccess)
        st = swin_fail(SWIN_ERR_CUDA, "cuda:%d: copying the input of batch %d: %s", e->dev, n, cudaGetErrorString(ce));
    if (st == SWIN_OK) st = enqueue_forward(e, n, run_batch);
    return started(e, st, n, logits);
}

static float elapsed(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
        cudaGetLastError();
        return 0.0f;
    }
    return ms;
}

swin_status swin_engine_end(swin_engine *e, swin_images_timing *timing) {
    if (!e) return swin_fail(SWIN_ERR_ARGUMENT, "swin_engine_end: NULL engine");
    swin_async *a = &e->async;
    if (!a->active) return swin_fail(SWIN_ERR_ARGUMENT, "no forward in flight on cuda:%d", e->dev);
    a->active = 0;
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    cudaError_t ce = cudaEventSynchronize(a->ev[3]);
    if (ce == cudaSuccess) ce = cudaStreamSynchronize(e->stream);   /* done is the last op: returns at once */
    if (ce != cudaSuccess)
        return swin_fail(SWIN_ERR_CUDA, "forward of batch %d on cuda:%d failed: %s (SWIN_CUDA_SYNC=1 names the op)",
                         a->n, e->dev, cudaGetErrorString(ce));
    memcpy(a->out, a->logits_host, (size_t)a->n * e->m->cfg.num_classes * sizeof(float));
    if (timing) {
        timing->upload_ms = elapsed(a->ev[0], a->ev[1]);
        timing->preprocess_ms = elapsed(a->ev[1], a->ev[2]);
        timing->forward_ms = elapsed(a->ev[2], a->ev[3]);
    }
    return SWIN_OK;
}
