/* session.c - a session runs a model on one device: the CPU reference or the CUDA engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "internal.h"
#include "layers.h"

struct swin_session {
    const swin_model *model;
    swin_session_options opt;
    float *scratch;          /* CPU: activations for max_batch (one arena) */
    size_t scratch_floats;
    swin_engine *engine;     /* CUDA */
};

swin_session_options swin_session_options_default(void) {
    swin_session_options o;
    memset(&o, 0, sizeof o);
    o.device = SWIN_DEVICE_CPU;
    o.precision = SWIN_FP32;
    o.attention = SWIN_ATTN_FUSED;
    o.graphs = 1;
    o.max_batch = 1;
    return o;
}

swin_status swin_session_create(const swin_model *m, const swin_session_options *o, swin_session **out) {
    if (!m || !o || !out) return swin_fail(SWIN_ERR_ARGUMENT, "swin_session_create: NULL argument");
    *out = NULL;
    if (o->max_batch < 1 || o->max_batch > 65536)
        return swin_fail(SWIN_ERR_ARGUMENT, "max batch %d out of range [1, 65536]", o->max_batch);
    swin_session *s = calloc(1, sizeof *s);
    if (!s) return swin_fail(SWIN_ERR_MEMORY, "out of memory");
    s->model = m;
    s->opt = *o;
    if (o->device == SWIN_DEVICE_CPU) {
        if (o->precision != SWIN_FP32) {
            free(s);
            return swin_fail(SWIN_ERR_UNSUPPORTED, "the CPU reference runs in fp32 only (asked for %s)",
                             swin_precision_str(o->precision));
        }
        s->scratch_floats = swin_forward_cpu_scratch(m, o->max_batch);
        s->scratch = malloc(s->scratch_floats * sizeof(float));
        if (!s->scratch) {
            size_t mb = s->scratch_floats * sizeof(float) >> 20;
            free(s);
            return swin_fail(SWIN_ERR_MEMORY, "cannot allocate %zu MB of CPU activations for batch %d",
                             mb, o->max_batch);
        }
    } else {
#ifdef SWIN_HAVE_CUDA
        swin_status st = swin_engine_create(m, o, &s->engine);
        if (st != SWIN_OK) { free(s); return st; }
#else
        free(s);
        return swin_fail(SWIN_ERR_NO_DEVICE, "this swin was built without CUDA (nvcc was not found at configure time)");
#endif
    }
    *out = s;
    return SWIN_OK;
}

void swin_session_free(swin_session *s) {
    if (!s) return;
#ifdef SWIN_HAVE_CUDA
    swin_engine_free(s->engine);
#endif
    free(s->scratch);
    free(s);
}

swin_status swin_forward(swin_session *s, const float *input, int batch, float *logits) {
    if (!s || !input || !logits) return swin_fail(SWIN_ERR_ARGUMENT, "swin_forward: NULL argument");
    if (batch < 1 || batch > s->opt.max_batch)
        return swin_fail(SWIN_ERR_ARGUMENT, "batch %d out of range [1, %d] (the session's max batch)",
                         batch, s->opt.max_batch);
#ifdef SWIN_HAVE_CUDA
    if (s->engine) return swin_engine_forward(s->engine, input, batch, logits);
#endif
    swin_forward_cpu(logits, input, s->model, batch, s->scratch);
    return SWIN_OK;
}

swin_status swin_session_describe(const swin_session *s, char *buf, size_t size) {
    if (!s || !buf || !size) return swin_fail(SWIN_ERR_ARGUMENT, "swin_session_describe: NULL argument");
#ifdef SWIN_HAVE_CUDA
    if (s->engine) return swin_engine_describe(s->engine, buf, size);
#endif
    snprintf(buf, size, "device cpu, fp32, max batch %d\n  activations  %12zu bytes\n",
             s->opt.max_batch, s->scratch_floats * sizeof(float));
    return SWIN_OK;
}
