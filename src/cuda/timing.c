/* timing.c - what `swin bench` measures on the CUDA engine (src/engine.h, bench section):
 * CUDA events around whole forwards or the attention ops alone on device-resident input, and a
 * profiled un-captured forward with an event before every op (per op class, per stage and per
 * named op).
 * Timing only: nothing here judges a time. Used by src/cli/cmd_bench.c.
 */
#include <stdlib.h>
#include <string.h>

#include "arena.h"

swin_status swin_cuda_device_info(int index, char *name, size_t size, int *driver, int *runtime) {
    struct cudaDeviceProp prop;
    *driver = 0;
    *runtime = 0;
    cudaDriverGetVersion(driver);
    cudaRuntimeGetVersion(runtime);
    SWIN_CUDA_TRY(cudaGetDeviceProperties(&prop, index));
    if (size) {
        strncpy(name, prop.name, size - 1);
        name[size - 1] = '\0';
    }
    return SWIN_OK;
}

static swin_status check_batch(const swin_engine *e, int B) {
    if (!e) return swin_fail(SWIN_ERR_ARGUMENT, "NULL engine");
    if (B < 1 || B > e->opt.max_batch)
        return swin_fail(SWIN_ERR_ARGUMENT, "batch %d out of range [1, %d]", B, e->opt.max_batch);
    return SWIN_OK;
}

swin_status swin_engine_set_input(swin_engine *e, const float *input, int B) {
    SWIN_TRY(check_batch(e, B));
    size_t bytes = (size_t)B * 3 * e->m->cfg.img_h * e->m->cfg.img_w * sizeof(float);
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    SWIN_CUDA_TRY(cudaMemcpyAsync(e->input, input, bytes, cudaMemcpyHostToDevice, e->stream));
    SWIN_CUDA_TRY(cudaStreamSynchronize(e->stream));
    return SWIN_OK;
}

// ---- event-timed loops

typedef swin_status (*enqueue_fn)(swin_engine *e, int B);

static swin_status timed(swin_engine *e, int B, int warmup, int iters, float *ms, enqueue_fn fn,
                         cudaEvent_t a, cudaEvent_t b) {
    for (int i = 0; i < warmup + iters; i++) {
        SWIN_CUDA_TRY(cudaEventRecord(a, e->stream));
        SWIN_TRY(fn(e, B));
        SWIN_CUDA_TRY(cudaEventRecord(b, e->stream));
        SWIN_CUDA_TRY(cudaEventSynchronize(b));
        if (i >= warmup) SWIN_CUDA_TRY(cudaEventElapsedTime(&ms[i - warmup], a, b));
    }
    return SWIN_OK;
}

static swin_status time_loop(swin_engine *e, int B, int warmup, int iters, float *ms, enqueue_fn fn) {
    SWIN_TRY(check_batch(e, B));
    if (warmup < 0 || iters < 1 || !ms) return swin_fail(SWIN_ERR_ARGUMENT, "bad iteration counts");
    cudaEvent_t a = NULL, b = NULL;
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    SWIN_CUDA_TRY(cudaEventCreate(&a));
    cudaError_t ce = cudaEventCreate(&b);
    swin_status st = ce == cudaSuccess ? timed(e, B, warmup, iters, ms, fn, a, b)
                                       : swin_fail(SWIN_ERR_CUDA, "cudaEventCreate: %s", cudaGetErrorString(ce));
    cudaStreamSynchronize(e->stream);
    cudaEventDestroy(a);
    if (b) cudaEventDestroy(b);
    return st;
}

swin_status swin_engine_time_forward(swin_engine *e, int B, int warmup, int iters, float *ms) {
    return time_loop(e, B, warmup, iters, ms, swin_engine_enqueue);
}

swin_status swin_engine_time_attention(swin_engine *e, int B, int warmup, int iters, float *ms) {
    return time_loop(e, B, warmup, iters, ms, swin_engine_enqueue_attention);
}

// ---- profile: an event before every op of un-captured forwards

static int op_bound(const swin_model *m) {
    int n = 8 + 3 * m->cfg.num_stages;   /* patch embed, merges, head, slack */
    for (int s = 0; s < m->cfg.num_stages; s++) n += 10 * m->w.stages[s].depth;
    return n + 8;
}

/* The entry of op `name` in out->ops (added on first sight; NULL when the table is full). */
static swin_op_time *op_entry(swin_engine_profile *out, const char *name, int cls) {
    for (int i = 0; i < out->n_ops; i++)
        if (out->ops[i].cls == (swin_op_class)cls && strcmp(out->ops[i].name, name) == 0) return &out->ops[i];
    if (out->n_ops == SWIN_PROFILE_MAX_OPS) return NULL;
    swin_op_time *o = &out->ops[out->n_ops++];
    o->name = name;
    o->cls = (swin_op_class)cls;
    return o;
}

static swin_status profile_passes(swin_engine *e, int B, int passes, swin_prof *p, swin_engine_profile *out) {
    int last = e->m->cfg.num_stages - 1;
    SWIN_TRY(swin_engine_enqueue_direct(e, B));   /* warm: GEMM plans settled */
    for (int pass = 0; pass < passes; pass++) {
        p->n = 0;
        e->prof = p;
        swin_status st = swin_engine_enqueue_direct(e, B);
        e->prof = NULL;
        SWIN_TRY(st);
        SWIN_CUDA_TRY(cudaEventRecord(p->ev[p->n], e->stream));
        SWIN_CUDA_TRY(cudaEventSynchronize(p->ev[p->n]));
        for (int i = 0; i < p->n; i++) {
            float t = 0;
            SWIN_CUDA_TRY(cudaEventElapsedTime(&t, p->ev[i], p->ev[i + 1]));
            int s = p->stage[i] < 0 ? 0 : p->stage[i] > last ? last : p->stage[i];
            out->class_ms[p->cls[i]] += t / passes;
            out->stage_ms[s] += t / passes;
            out->total_ms += t / passes;
            swin_op_time *o = op_entry(out, p->name[i] ? p->name[i] : "?", p->cls[i]);
            if (o) {
                o->ms += t / passes;
                o->stage_ms[s] += t / passes;
                if (pass == 0) o->calls++;
            }
        }
    }
    return SWIN_OK;
}

swin_status swin_engine_profile_forward(swin_engine *e, int B, int passes, swin_engine_profile *out) {
    SWIN_TRY(check_batch(e, B));
    if (passes < 1 || !out) return swin_fail(SWIN_ERR_ARGUMENT, "profile: bad arguments");
    memset(out, 0, sizeof *out);
    SWIN_CUDA_TRY(cudaSetDevice(e->dev));
    swin_prof p = {0};
    p.cap = op_bound(e->m);
    p.ev = calloc((size_t)p.cap + 1, sizeof *p.ev);
    p.cls = calloc((size_t)p.cap, 1);
    p.stage = calloc((size_t)p.cap, 1);
    p.name = calloc((size_t)p.cap, sizeof *p.name);
    swin_status st = p.ev && p.cls && p.stage && p.name ? SWIN_OK : swin_fail(SWIN_ERR_MEMORY, "out of memory");
    int made = 0;
    for (; st == SWIN_OK && made <= p.cap; made++) {
        cudaError_t ce = cudaEventCreate(&p.ev[made]);
        if (ce != cudaSuccess) st = swin_fail(SWIN_ERR_CUDA, "cudaEventCreate: %s", cudaGetErrorString(ce));
    }
    if (st == SWIN_OK) st = profile_passes(e, B, passes, &p, out);
    cudaStreamSynchronize(e->stream);
    for (int i = 0; i < made && p.ev; i++)
        if (p.ev[i]) cudaEventDestroy(p.ev[i]);
    free(p.ev);
    free(p.cls);
    free(p.stage);
    free(p.name);
    return st;
}
