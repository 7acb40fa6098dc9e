/* session.c - a session runs a model on one device: the CPU reference or the CUDA engine.
 * FP8 (src/fp8.h): a CPU session in SWIN_FP8 runs the reference with emulated FP8 sites, a CUDA
 * one gives the engine its input scales; either way from options.fp8_scales or, without it, from
 * the default calibration on random images. A calibrating session (options.calibrate) records
 * every site's max |input| and every qkv output channel's max |value| (CPU: here; CUDA: the
 * engine) for swin_session_save_scales. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "fp8_session.h"
#include "internal.h"
#include "layers.h"
#include "preprocess.h"

struct swin_session {
    const swin_model *model;
    swin_session_options opt;
    float *scratch;          /* CPU: activations for max_batch (one arena) */
    size_t scratch_floats;
    swin_engine *engine;     /* CUDA */
    float *images_in;        /* swin_forward_images on the host: [max_batch, 3, S, S], lazily */
    int in_flight;           /* a *_begin awaits swin_forward_end */
    int on_engine;           /* ... and the engine runs it (else it is done: done_timing) */
    swin_images_timing done_timing;
    /* FP8 sites (fp8.h) */
    int n_sites;
    int n_scales;            /* entries of a scale or amax array: swin_fp8_scale_count */
    int calibrated;          /* images forwarded by a calibrating session */
    swin_fp8_forward fp8;    /* CPU: amax (calibrate) or sites (SWIN_FP8) for every forward */
    size_t fp8_bytes;        /* CPU SWIN_FP8: the quantised weights and their scratch */
};

swin_session_options swin_session_options_default(void) {
    swin_session_options o;
    memset(&o, 0, sizeof o);
    o.device = SWIN_DEVICE_CPU;
    o.precision = SWIN_FP32;
    o.attention = SWIN_ATTN_FUSED;
    o.mlp = SWIN_MLP_AUTO;
    o.graphs = 1;
    o.max_batch = 1;
    return o;
}

#ifndef SWIN_HAVE_CUDA
#define NO_CUDA "this swin was built without CUDA (nvcc was not found at configure time)"
#endif

swin_status swin_cuda_device_count(int *count) {
    if (!count) return swin_fail(SWIN_ERR_ARGUMENT, "swin_cuda_device_count: NULL argument");
#ifdef SWIN_HAVE_CUDA
    return swin_engine_device_count(count);
#else
    *count = 0;
    return swin_fail(SWIN_ERR_NO_DEVICE, NO_CUDA);
#endif
}

// ---- FP8: the input scales (fp8_session.c)

/* the CPU's recording forward for the default calibration: fp32, amax per site and qkv channel */
static swin_status cpu_record(void *ctx, const float *x, int n, float *amax) {
    swin_session *s = ctx;
    float *logits = malloc(sizeof(float) * (size_t)s->model->cfg.num_classes * n);
    if (!logits) return swin_fail(SWIN_ERR_MEMORY, "out of memory for the FP8 calibration");
    swin_fp8_forward record = {amax, NULL, NULL};
    swin_forward_cpu_fp8(logits, x, s->model, n, s->scratch, NULL, &record);
    free(logits);
    return SWIN_OK;
}

/* An SWIN_FP8 session's scales, then its device's part: the engine's scales, or the CPU's
 * quantised weights. */
static swin_status fp8_setup(swin_session *s) {
#ifdef SWIN_HAVE_CUDA
    if (s->engine) return swin_fp8_engine_setup(s->engine, s->model, &s->opt);
#endif
    float *scale = calloc((size_t)s->n_scales + 1, sizeof(float));
    if (!scale) return swin_fail(SWIN_ERR_MEMORY, "out of memory for the FP8 scales");
    swin_status st = swin_fp8_input_scales(s->model, &s->opt, cpu_record, s, scale);
    if (st == SWIN_OK) st = swin_fp8_emulation_create(s->model, s->opt.max_batch, scale, &s->fp8, &s->fp8_bytes);
    free(scale);
    return st;
}

static swin_status check_fp8_options(const swin_session_options *o) {
    if (o->calibrate && o->precision == SWIN_FP8)
        return swin_fail(SWIN_ERR_ARGUMENT, "a calibrating session records the inputs of the FP8 GEMMs in higher "
                         "precision: calibrate in fp32 (or fp16/bf16/tf32 on the GPU), not fp8");
    if (o->fp8_scales && o->precision != SWIN_FP8)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: a scales file is for precision fp8, the session runs in %s",
                         o->fp8_scales, swin_precision_str(o->precision));
    return SWIN_OK;
}

// ---- sessions

swin_status swin_session_create(const swin_model *m, const swin_session_options *o, swin_session **out) {
    if (!m || !o || !out) return swin_fail(SWIN_ERR_ARGUMENT, "swin_session_create: NULL argument");
    *out = NULL;
    if (o->max_batch < 1 || o->max_batch > 65536)
        return swin_fail(SWIN_ERR_ARGUMENT, "max batch %d out of range [1, 65536]", o->max_batch);
    SWIN_TRY(check_fp8_options(o));
    swin_session *s = calloc(1, sizeof *s);
    if (!s) return swin_fail(SWIN_ERR_MEMORY, "out of memory");
    s->model = m;
    s->opt = *o;
    s->n_sites = swin_fp8_sites(m, NULL);
    s->n_scales = swin_fp8_scale_count(m);
    if (o->device == SWIN_DEVICE_CPU) {
        if (o->precision != SWIN_FP32 && o->precision != SWIN_FP8) {
            free(s);
            return swin_fail(SWIN_ERR_UNSUPPORTED, "the CPU reference runs in fp32 only, or fp8 as an emulation "
                             "(asked for %s)", swin_precision_str(o->precision));
        }
        s->scratch_floats = swin_forward_cpu_scratch(m, o->max_batch);
        s->scratch = malloc(s->scratch_floats * sizeof(float));
        if (o->calibrate) s->fp8.amax = calloc((size_t)s->n_scales + 1, sizeof(float));
        if (!s->scratch || (o->calibrate && !s->fp8.amax)) {
            size_t mb = s->scratch_floats * sizeof(float) >> 20;
            swin_session_free(s);
            return swin_fail(SWIN_ERR_MEMORY, "cannot allocate %zu MB of CPU activations for batch %d",
                             mb, o->max_batch);
        }
    } else {
#ifdef SWIN_HAVE_CUDA
        swin_status st = swin_engine_create(m, o, &s->engine);
        if (st != SWIN_OK) { free(s); return st; }
#else
        free(s);
        return swin_fail(SWIN_ERR_NO_DEVICE, NO_CUDA);
#endif
    }
    if (o->precision == SWIN_FP8) {
        swin_status st = fp8_setup(s);
        if (st != SWIN_OK) { swin_session_free(s); return st; }
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
    free(s->images_in);
    free(s->fp8.amax);
    swin_fp8_emulation_free(&s->fp8);
    free(s);
}

// ---- calibration

/* after a forward of n images that succeeded (st) */
static swin_status counted(swin_session *s, int n, swin_status st) {
    if (st == SWIN_OK && s->opt.calibrate) s->calibrated += n;
    return st;
}

int swin_session_calibrated_images(const swin_session *s) { return s ? s->calibrated : 0; }

swin_status swin_session_save_scales(const swin_session *s, const char *path, float margin, const char *source) {
    if (!s || !path || !source) return swin_fail(SWIN_ERR_ARGUMENT, "swin_session_save_scales: NULL argument");
    if (!s->opt.calibrate)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: the session does not calibrate (options.calibrate = 0)", path);
    if (s->calibrated == 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: the session has forwarded no image yet: nothing to calibrate on", path);
#ifdef SWIN_HAVE_CUDA
    if (s->engine) {
        float *amax = calloc((size_t)s->n_scales + 1, sizeof(float));
        if (!amax) return swin_fail(SWIN_ERR_MEMORY, "out of memory");
        swin_status st = swin_engine_amax(s->engine, amax, s->n_scales);
        if (st == SWIN_OK) st = swin_fp8_scales_write(s->model, path, amax, margin, source, s->calibrated);
        free(amax);
        return st;
    }
#endif
    return swin_fp8_scales_write(s->model, path, s->fp8.amax, margin, source, s->calibrated);
}

/* the CPU forward of every entry point, with the session's FP8 sites (calibration or emulation) */
static void cpu_forward(swin_session *s, const float *input, int n, float *logits, float *const *stage_out) {
    int fp8 = s->fp8.amax || s->fp8.sites;
    swin_forward_cpu_fp8(logits, input, s->model, n, s->scratch, stage_out, fp8 ? &s->fp8 : NULL);
    counted(s, n, SWIN_OK);
}

const swin_session_options *swin_session_get_options(const swin_session *s) { return s ? &s->opt : NULL; }
const swin_model *swin_session_get_model(const swin_session *s) { return s ? s->model : NULL; }

swin_status swin_forward(swin_session *s, const float *input, int batch, float *logits) {
    if (!s || !input || !logits) return swin_fail(SWIN_ERR_ARGUMENT, "swin_forward: NULL argument");
    if (batch < 1 || batch > s->opt.max_batch)
        return swin_fail(SWIN_ERR_ARGUMENT, "batch %d out of range [1, %d] (the session's max batch)",
                         batch, s->opt.max_batch);
#ifdef SWIN_HAVE_CUDA
    if (s->engine) return counted(s, batch, swin_engine_forward(s->engine, input, batch, logits));
#endif
    cpu_forward(s, input, batch, logits, NULL);
    return SWIN_OK;
}

swin_status swin_model_stage_shape(const swin_model *m, int stage, int batch, int64_t shape[4]) {
    if (!m || !shape) return swin_fail(SWIN_ERR_ARGUMENT, "swin_model_stage_shape: NULL argument");
    if (stage < 0 || stage >= m->cfg.num_stages)
        return swin_fail(SWIN_ERR_ARGUMENT, "stage %d out of range [0, %d)", stage, m->cfg.num_stages);
    const swin_stage_w *st = &m->w.stages[stage];
    shape[0] = batch;
    shape[1] = st->res_h;
    shape[2] = st->res_w;
    shape[3] = st->dim;
    return SWIN_OK;
}

swin_status swin_forward_stages(swin_session *s, const float *input, int batch, float *logits,
                                float *const *stage_out) {
    if (!stage_out) return swin_forward(s, input, batch, logits);
    if (!s || !input || !logits) return swin_fail(SWIN_ERR_ARGUMENT, "swin_forward_stages: NULL argument");
    if (batch < 1 || batch > s->opt.max_batch)
        return swin_fail(SWIN_ERR_ARGUMENT, "batch %d out of range [1, %d] (the session's max batch)",
                         batch, s->opt.max_batch);
#ifdef SWIN_HAVE_CUDA
    if (s->engine) {
        SWIN_TRY(swin_engine_forward(s->engine, input, batch, logits));   /* graphs as configured */
        return counted(s, batch, swin_engine_forward_stages(s->engine, input, batch, stage_out));
    }
#endif
    cpu_forward(s, input, batch, logits, stage_out);
    return SWIN_OK;
}

swin_status swin_session_describe(const swin_session *s, char *buf, size_t size) {
    if (!s || !buf || !size) return swin_fail(SWIN_ERR_ARGUMENT, "swin_session_describe: NULL argument");
#ifdef SWIN_HAVE_CUDA
    if (s->engine) return swin_engine_describe(s->engine, buf, size);
#endif
    int n = snprintf(buf, size, "device cpu, %s%s, max batch %d\n  activations  %12zu bytes\n",
                     swin_precision_str(s->opt.precision), s->fp8.sites ? " (emulated)" : "", s->opt.max_batch,
                     s->scratch_floats * sizeof(float));
    int qkv_e4m3 = 0;   /* the scales carry q, k and v's channel scales (not a version 1 file) */
    for (int i = 0; s->fp8.sites && i < s->n_sites; i++) qkv_e4m3 |= s->fp8.sites[i].out_s != NULL;
    if (s->fp8.sites && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "  fp8 weights  %12zu bytes (%d sites, decoded to fp32, and their input "
                 "scratch)%s\n", s->fp8_bytes, s->n_sites, qkv_e4m3 ? "; q, k, v in E4M3" : "");
    return SWIN_OK;
}

// ---- images in: preprocessing on the session's device, then the forward

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* CPU preprocessing into a host buffer, then swin_forward (any session) */
static swin_status forward_images_host(swin_session *s, const swin_preprocess_params *p,
                                       const swin_image *imgs, int n, float *logits,
                                       swin_images_timing *timing) {
    size_t per = swin_preprocess_floats(p);
    if (!s->images_in) {
        size_t bytes;
        if (swin_mul_size(per * sizeof(float), (size_t)s->opt.max_batch, &bytes) ||
            !(s->images_in = malloc(bytes)))
            return swin_fail(SWIN_ERR_MEMORY, "cannot allocate the input of %d images of %dx%d",
                             s->opt.max_batch, swin_preprocess_height(p), swin_preprocess_width(p));
    }
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
        SWIN_TRY(swin_preprocess_image(p, &imgs[i], s->images_in + (size_t)i * per));
    double t1 = now_ms();
    SWIN_TRY(swin_forward(s, s->images_in, n, logits));
    if (timing) *timing = (swin_images_timing){0.0, t1 - t0, now_ms() - t1};
    return SWIN_OK;
}

swin_status swin_forward_images(swin_session *s, const swin_preprocess_params *p,
                                const swin_image *imgs, int n, swin_preprocess_device where,
                                float *logits, swin_images_timing *timing) {
    if (!s || !p || !imgs || !logits)
        return swin_fail(SWIN_ERR_ARGUMENT, "swin_forward_images: NULL argument");
    if (n < 1 || n > s->opt.max_batch)
        return swin_fail(SWIN_ERR_ARGUMENT, "batch %d out of range [1, %d] (the session's max batch)",
                         n, s->opt.max_batch);
    const swin_config *c = &s->model->cfg;
    if (swin_preprocess_height(p) != c->img_h || swin_preprocess_width(p) != c->img_w)
        return swin_fail(SWIN_ERR_ARGUMENT, "preprocessing makes %dx%d inputs; the model takes %dx%d",
                         swin_preprocess_height(p), swin_preprocess_width(p), c->img_h, c->img_w);
    for (int i = 0; i < n; i++)
        if (!imgs[i].rgb || imgs[i].width < 1 || imgs[i].height < 1)
            return swin_fail(SWIN_ERR_ARGUMENT, "swin_forward_images: image %d is empty", i);
    if (where == SWIN_PRE_DEVICE_AUTO)   /* GPU preprocessing makes square inputs only */
        where = s->engine && c->img_h == c->img_w ? SWIN_PRE_DEVICE_GPU : SWIN_PRE_DEVICE_CPU;
    if (where == SWIN_PRE_DEVICE_GPU) {
        if (!s->engine)
            return swin_fail(SWIN_ERR_ARGUMENT, "GPU preprocessing needs a CUDA session (this one runs on the CPU)");
#ifdef SWIN_HAVE_CUDA
        return counted(s, n, swin_engine_forward_images(s->engine, p, imgs, n, logits, timing));
#endif
    }
    if (where != SWIN_PRE_DEVICE_CPU)
        return swin_fail(SWIN_ERR_ARGUMENT, "unknown preprocessing device %d", (int)where);
    return forward_images_host(s, p, imgs, n, logits, timing);
}

// ---- the same in two halves (preprocess.h): the engine's async forward, or done at once on the host

static swin_status begin_check(swin_session *s, int n, int pad_to, const void *logits) {
    if (!s || !logits) return swin_fail(SWIN_ERR_ARGUMENT, "swin_forward_begin: NULL argument");
    if (s->in_flight) return swin_fail(SWIN_ERR_ARGUMENT, "a batch is already in flight (call swin_forward_end)");
    if (n < 1 || n > s->opt.max_batch)
        return swin_fail(SWIN_ERR_ARGUMENT, "batch %d out of range [1, %d] (the session's max batch)",
                         n, s->opt.max_batch);
    if (pad_to != 0 && (pad_to < n || pad_to > s->opt.max_batch))
        return swin_fail(SWIN_ERR_ARGUMENT, "batch %d padded to %d: expected %d to %d", n, pad_to, n,
                         s->opt.max_batch);
    return SWIN_OK;
}

static swin_status begun(swin_session *s, swin_status st, int on_engine) {
    if (st == SWIN_OK) {
        s->in_flight = 1;
        s->on_engine = on_engine;
    }
    return st;
}

swin_status swin_forward_images_begin(swin_session *s, const swin_preprocess_params *p, const swin_image *imgs,
                                      const int *on_device, int n, swin_preprocess_device where, int pad_to,
                                      float *logits) {
    SWIN_TRY(begin_check(s, n, pad_to, logits));
    if (!p || !imgs) return swin_fail(SWIN_ERR_ARGUMENT, "swin_forward_images_begin: NULL argument");
    const swin_config *c = &s->model->cfg;
    if (where == SWIN_PRE_DEVICE_AUTO)
        where = s->engine && c->img_h == c->img_w ? SWIN_PRE_DEVICE_GPU : SWIN_PRE_DEVICE_CPU;
#ifdef SWIN_HAVE_CUDA
    if (s->engine && where == SWIN_PRE_DEVICE_GPU)
        return begun(s, counted(s, n, swin_engine_begin_images(s->engine, p, imgs, on_device, n, pad_to, logits)), 1);
#endif
    if (on_device)
        for (int i = 0; i < n; i++)
            if (on_device[i])
                return swin_fail(SWIN_ERR_ARGUMENT, "image %d is in device memory: it needs GPU preprocessing", i);
    s->done_timing = (swin_images_timing){0};
    return begun(s, swin_forward_images(s, p, imgs, n, where, logits, &s->done_timing), 0);
}

swin_status swin_forward_input_begin(swin_session *s, const float *input, int n, int pad_to, float *logits) {
    SWIN_TRY(begin_check(s, n, pad_to, logits));
    if (!input) return swin_fail(SWIN_ERR_ARGUMENT, "swin_forward_input_begin: NULL input");
#ifdef SWIN_HAVE_CUDA
    if (s->engine) return begun(s, counted(s, n, swin_engine_begin_input(s->engine, input, n, pad_to, logits)), 1);
#endif
    double t0 = now_ms();
    cpu_forward(s, input, n, logits, NULL);
    s->done_timing = (swin_images_timing){0.0, 0.0, now_ms() - t0};
    return begun(s, SWIN_OK, 0);
}

swin_status swin_forward_end(swin_session *s, swin_images_timing *timing) {
    if (!s) return swin_fail(SWIN_ERR_ARGUMENT, "swin_forward_end: NULL session");
    if (!s->in_flight) return swin_fail(SWIN_ERR_ARGUMENT, "swin_forward_end: no batch in flight");
    s->in_flight = 0;
#ifdef SWIN_HAVE_CUDA
    if (s->on_engine) return swin_engine_end(s->engine, timing);
#endif
    if (timing) *timing = s->done_timing;
    return SWIN_OK;
}

swin_status swin_forward_images_on(swin_session *s, const swin_preprocess_params *p, const swin_image *imgs,
                                   const int *on_device, int n, float *logits, swin_images_timing *timing) {
    if (!on_device) return swin_forward_images(s, p, imgs, n, SWIN_PRE_DEVICE_AUTO, logits, timing);
    if (!s || !p || !imgs || !logits) return swin_fail(SWIN_ERR_ARGUMENT, "swin_forward_images_on: NULL argument");
#ifdef SWIN_HAVE_CUDA
    if (s->engine) /* the engine checks the batch against its max batch */
        return counted(s, n, swin_engine_forward_images_on(s->engine, p, imgs, on_device, n, logits, timing));
#endif
    return swin_fail(SWIN_ERR_ARGUMENT, "images in device memory need a CUDA session (this one runs on the CPU)");
}

void *swin_session_host_alloc(swin_session *s, size_t bytes) {
    if (!s || !bytes) return NULL;
#ifdef SWIN_HAVE_CUDA
    if (s->engine) return swin_engine_host_alloc(s->engine, bytes);
#endif
    return malloc(bytes);
}

void swin_session_host_free(swin_session *s, void *ptr) {
    if (!s || !ptr) return;
#ifdef SWIN_HAVE_CUDA
    if (s->engine) { swin_engine_host_free(s->engine, ptr); return; }
#endif
    free(ptr);
}
