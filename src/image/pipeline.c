/* pipeline.c - decoder threads feeding one session or several, batches in input order (see
 * pipeline.h; the slots and lanes are described in pipeline_impl.h).
 *
 * Slots: `depth` of them, each holding one batch: per image the decoded picture (its pixels
 * copied into the slot's page-locked arena when they fit) or its message, and, when the CPU
 * preprocesses, the [batch, 3, S, S] input. A decoder thread takes the next input index, waits
 * until the slot of its batch is handed out, decodes, and counts the batch down. With one
 * session the caller waits for the batch it needs next, runs it, reports every image in order
 * and hands the slot to the batch `depth` further on; with several, one thread per session runs
 * the batches (pipeline_multi.c) and the caller reports them in order. One mutex guards the
 * counters; the work happens outside it.
 * Test: build/tests/test_pipeline (ordering, bad files, both preprocessing paths, several sessions).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sysconf */
#include "pipeline.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "pipeline_impl.h"

/* page-locked bytes per image of a slot: a 640x480 RGB picture; larger ones keep their own
 * (pageable) buffer, which is slower to copy but just as correct */
#define SLOT_BYTES_PER_IMAGE ((size_t)640 * 480 * 3)
/* slots with several sessions: at least one per session and two being decoded */
#define MAX_SLOTS 256

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

double swin_pipe_now_ms(void) { return now_ms(); }

int swin_pipe_batch_len(const pipe_t *q, int k) {
    int start = k * q->B;
    return q->n - start < q->B ? q->n - start : q->B;
}

const char *swin_decoder_str(swin_decoder d) {
    return d == SWIN_DECODER_NVJPEG ? "nvjpeg" : d == SWIN_DECODER_GPU ? "gpu" : d == SWIN_DECODER_AUTO ? "auto" : "cpu";
}

swin_status swin_decoder_parse(const char *s, swin_decoder *out) {
    if (s && (!strcmp(s, "cpu") || !strcmp(s, "libjpeg"))) { *out = SWIN_DECODER_CPU; return SWIN_OK; }
    if (s && !strcmp(s, "nvjpeg")) { *out = SWIN_DECODER_NVJPEG; return SWIN_OK; }
    if (s && !strcmp(s, "gpu")) { *out = SWIN_DECODER_GPU; return SWIN_OK; }
    if (s && !strcmp(s, "auto")) { *out = SWIN_DECODER_AUTO; return SWIN_OK; }
    return swin_fail(SWIN_ERR_ARGUMENT, "decoder '%s': expected auto, cpu (libjpeg), gpu or nvjpeg", s ? s : "(null)");
}

swin_pipeline_options swin_pipeline_options_default(void) {
    swin_pipeline_options o;
    memset(&o, 0, sizeof o);
    o.batch = 8;
    o.depth = 3;
    o.where = SWIN_PRE_DEVICE_AUTO;
    o.decoder = SWIN_DECODER_AUTO;
    o.warmup = 1;
    return o;
}

// ---- decoder threads

typedef struct {
    pipe_t *q;
    pipe_slot *sl;
} slot_alloc;

/* swin_image_alloc_fn: a 64-byte aligned piece of the slot's arena, NULL when it is full */
static void *arena_alloc(void *ctx, size_t bytes) {
    slot_alloc *a = ctx;
    void *p = NULL;
    pthread_mutex_lock(&a->q->mu);
    size_t off = (a->sl->arena_used + 63) & ~(size_t)63;
    if (off <= a->sl->arena_cap && bytes <= a->sl->arena_cap - off) {
        a->sl->arena_used = off + bytes;
        p = a->sl->arena + off;
    }
    pthread_mutex_unlock(&a->q->mu);
    return p;
}

/* a JPEG of batch slot sl with restart intervals: 1 when the CPU threads keep it (libjpeg), the
 * first q->rst_keep of its batch (pipeline.h: the balance of the two), else 0 (the GPU) */
static int keep_restarts(pipe_t *q, pipe_slot *sl) {
    pthread_mutex_lock(&q->mu);
    const int keep = sl->rst_kept < q->rst_keep;
    sl->rst_kept += keep;
    pthread_mutex_unlock(&q->mu);
    return keep;
}

/* SWIN_DECODER_GPU: the JPEG's scan (it->scan) and its entropy-coded data as the GPU decoder
 * reads it (it->ent: unstuffed, restart markers taken out), 1; 0 (nothing kept) when the GPU
 * decoder does not cover it (progressive, markers out of place, ...), or when it has restart
 * intervals and the CPU threads keep it (keep_restarts) */
static int take_scan(pipe_t *q, pipe_slot *sl, pipe_item *it, const uint8_t *buf, size_t len, const char *path) {
    it->scan = malloc(sizeof *it->scan);
    if (it->scan && swin_jpeg_read_scan(buf, len, path, it->scan) == SWIN_OK &&
        !(it->scan->img.restart && keep_restarts(q, sl)) &&
        (it->ent = malloc(swin_jp_stage_cap(&it->scan->img))) && swin_jp_stage(buf, &it->scan->img, it->ent) == 0)
        return 1;
    free(it->scan);
    free(it->ent);
    it->scan = NULL, it->ent = NULL;
    return 0;
}

static void decode_one(pipe_t *q, pipe_slot *sl, pipe_item *it, int i, double *t_read, double *t_dec, double *t_pre) {
    const char *path = q->paths[i];
    double t0 = now_ms();
    uint8_t *buf = NULL;
    size_t len = 0;
    swin_status st = swin_image_read_file(path, &buf, &len);
    double t1 = now_ms();
    int jpeg = st == SWIN_OK && len >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF;
    if (jpeg && (q->decoder == SWIN_DECODER_NVJPEG ||
                 (q->decoder == SWIN_DECODER_GPU && i % q->B < q->gpu_share && take_scan(q, sl, it, buf, len, path)))) {
        it->jpeg = buf;   /* decoded on the GPU; kept for libjpeg, should the GPU not decode it */
        it->jpeg_len = len;
        it->ok = 1;
        *t_read += t1 - t0;
        *t_dec += now_ms() - t1;
        return;
    }
    /* straight into the slot's page-locked arena when there is one and room in it */
    slot_alloc sa = {q, sl};
    int custom = 0;
    if (st == SWIN_OK)
        st = swin_image_decode_part(buf, len, path, q->part ? q->p : NULL,
                                    sl->arena && !q->cpu_pre ? arena_alloc : NULL, &sa, &it->img, &custom);
    it->in_arena = custom;
    free(buf);
    double t2 = now_ms();
    *t_read += t1 - t0;
    *t_dec += t2 - t1;
    if (st == SWIN_OK && q->cpu_pre) {
        float *x = sl->x + (size_t)(i % q->B) * q->per;
        st = swin_preprocess_image(q->p, &it->img, x);
        if (st != SWIN_OK) swin_fail_prefix(st, "%s", path);
        swin_image_free(&it->img);
        *t_pre += now_ms() - t2;
    }
    it->ok = st == SWIN_OK;
    if (!it->ok) snprintf(it->err, sizeof it->err, "%s", swin_last_error());
}

static void *decoder(void *arg) {
    pipe_t *q = arg;
    double t_read = 0, t_dec = 0, t_pre = 0;
    pthread_mutex_lock(&q->mu);
    while (q->next < q->n) {
        int i = q->next++, k = i / q->B;
        pipe_slot *sl = &q->slots[k % q->depth];
        while (sl->batch != k) pthread_cond_wait(&q->slot_free, &q->mu);
        pthread_mutex_unlock(&q->mu);
        decode_one(q, sl, &sl->items[i % q->B], i, &t_read, &t_dec, &t_pre);
        pthread_mutex_lock(&q->mu);
        if (--sl->remaining == 0) pthread_cond_broadcast(&q->batch_done);
    }
    q->read_ms += t_read;
    q->decode_ms += t_dec;
    q->pre_ms += t_pre;
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

// ---- running a batch (the calling thread with one session, a lane thread with several)

static void slot_release_items(pipe_slot *sl, int count) {
    for (int j = 0; j < count; j++) {
        pipe_item *it = &sl->items[j];
        free(it->jpeg);
        free(it->scan);
        free(it->ent);
        if (!it->in_arena && !it->on_device) swin_image_free(&it->img);
        memset(it, 0, sizeof *it);
    }
    sl->arena_used = 0;
}

void swin_pipe_wait_decoded(pipe_t *q, int k) {
    pipe_slot *sl = &q->slots[k % q->depth];
    while (sl->batch != k || sl->remaining > 0) pthread_cond_wait(&q->batch_done, &q->mu);
}

/* Gather decoded batch k's good images and start their forward on lane l (returns at once on a
 * CUDA session). A short batch runs padded to the full batch on the GPU, so that it replays the
 * captured graph (and tuned GEMMs) of the full one instead of capturing another. */
static void start_batch(pipe_t *q, pipe_lane *l, int k) {
    pipe_slot *sl = &q->slots[k % q->depth];
    int nb = swin_pipe_batch_len(q, k), ngood = 0;
    for (int j = 0; j < nb; j++) {
        if (!sl->items[j].ok) continue;
        if (q->cpu_pre) {
            if (ngood != j) memcpy(sl->x + (size_t)ngood * q->per, sl->x + (size_t)j * q->per, q->per * sizeof(float));
        } else {
            l->imgs[ngood] = sl->items[j].img;
            l->on_device[ngood] = sl->items[j].on_device;
        }
        ngood++;
    }
    sl->ngood = ngood;
    sl->begun = 0;
    sl->fs = SWIN_OK;
    sl->fmsg[0] = '\0';
    if (!ngood) return;
    int pad = q->gpu ? q->B : 0;
    double t0 = now_ms();
    sl->fs = q->cpu_pre ? swin_forward_input_begin(l->s, sl->x, ngood, pad, sl->logits)
                        : swin_forward_images_begin(l->s, q->p, l->imgs, q->decoder != SWIN_DECODER_CPU ? l->on_device : NULL, ngood,
                                                    SWIN_PRE_DEVICE_GPU, pad, sl->logits);
    l->st.enqueue_ms += now_ms() - t0;
    sl->begun = sl->fs == SWIN_OK;
    if (sl->fs != SWIN_OK) snprintf(sl->fmsg, sizeof sl->fmsg, "%s", swin_last_error());
}

/* Wait for batch k's forward on lane l; count the batch. */
static void finish_batch(pipe_t *q, pipe_lane *l, int k) {
    pipe_slot *sl = &q->slots[k % q->depth];
    int nb = swin_pipe_batch_len(q, k);
    if (sl->begun) {
        swin_images_timing t = {0};
        double t0 = now_ms();
        sl->fs = swin_forward_end(l->s, &t);
        l->st.forward_wait_ms += now_ms() - t0;
        if (sl->fs != SWIN_OK) snprintf(sl->fmsg, sizeof sl->fmsg, "%s", swin_last_error());
        l->st.upload_ms += t.upload_ms;
        l->st.gpu_preprocess_ms += t.preprocess_ms;
        l->st.forward_ms += t.forward_ms;
        sl->begun = 0;
    }
    l->st.images += nb;
    l->st.failed += (nb - sl->ngood) + (sl->fs != SWIN_OK ? sl->ngood : 0);
    l->st.batches++;
}

void swin_pipe_run_batch(pipe_t *q, pipe_lane *l, int k) {
    if (q->decoder != SWIN_DECODER_CPU) swin_pipe_gpu_decode(q, &l->dec, &l->px[0], k, &l->st.cpu_fallback, &l->st.gpu_decode_ms);
    start_batch(q, l, k);
    finish_batch(q, l, k);
}

void swin_pipe_report_batch(pipe_t *q, int k, swin_pipeline_result_fn on_result, void *ctx,
                            swin_pipeline_stats *stats) {
    pipe_slot *sl = &q->slots[k % q->depth];
    int nb = swin_pipe_batch_len(q, k);
    double t0 = now_ms();
    for (int j = 0, g = 0; j < nb; j++) {
        int i = k * q->B + j;
        swin_pipeline_result r = {i, q->paths[i], NULL, NULL};
        char msg[1400];
        if (!sl->items[j].ok) {
            r.error = sl->items[j].err;
        } else if (sl->fs != SWIN_OK) {
            snprintf(msg, sizeof msg, "%s: forward pass failed: %s", q->paths[i], sl->fmsg);
            r.error = msg;
            g++;
        } else {
            r.logits = sl->logits + (size_t)g++ * q->nc;
        }
        on_result(ctx, &r);
    }
    stats->output_ms += now_ms() - t0;
    slot_release_items(sl, nb);
    pthread_mutex_lock(&q->mu);
    sl->ran = 0;
    sl->gpu_decoded = 0;
    sl->batch = k + q->depth;
    sl->remaining = sl->batch < q->nbatches ? swin_pipe_batch_len(q, sl->batch) : 0;
    sl->rst_kept = 0;
    pthread_cond_broadcast(&q->slot_free);
    pthread_mutex_unlock(&q->mu);
}

/* the first step of batch k with one session: wait until it is decoded (and its JPEGs, where GPU
 * decoder threads decode them), else decode its JPEGs on the GPU here */
static void take_batch(pipe_t *q, pipe_lane *l, int k) {
    pipe_slot *sl = &q->slots[k % q->depth];
    double tw = now_ms();
    pthread_mutex_lock(&q->mu);
    swin_pipe_wait_decoded(q, k);
    while (q->nvj_running && !sl->gpu_decoded) pthread_cond_wait(&q->batch_done, &q->mu);
    pthread_mutex_unlock(&q->mu);
    l->st.wait_ms += now_ms() - tw;
    if (q->decoder != SWIN_DECODER_CPU && !q->nvj_running)
        swin_pipe_gpu_decode(q, &l->dec, &l->px[k % 2], k, &l->st.cpu_fallback, &l->st.gpu_decode_ms);
}

/* One session, on the calling thread. Batch k's nvJPEG decoding and the wait for its files
 * overlap batch k-1's forward, and batch k-1 is reported while batch k's forward runs:
 *   wait decoded(k) -> [nvJPEG(k) into buffer k % 2] -> finish(k-1) -> start(k) -> report(k-1)
 * With nvJPEG decoder threads (pipeline_nvjpeg.c) the wait is for their decoding of batch k. */
static void run_inline(pipe_t *q, swin_pipeline_result_fn on_result, void *ctx, swin_pipeline_stats *stats) {
    pipe_lane *l = &q->lanes[0];
    for (int k = 0; k < q->nbatches; k++) {
        take_batch(q, l, k);
        if (k > 0) finish_batch(q, l, k - 1);
        start_batch(q, l, k);   /* failures are reported per image */
        if (k > 0) swin_pipe_report_batch(q, k - 1, on_result, ctx, stats);
    }
    finish_batch(q, l, q->nbatches - 1);
    swin_pipe_report_batch(q, q->nbatches - 1, on_result, ctx, stats);
}

/* batch k has run (pipeline_impl.h) */
void swin_pipe_mark_ran(pipe_t *q, int k) {
    pthread_mutex_lock(&q->mu);
    q->slots[k % q->depth].ran = 1;
    pthread_cond_broadcast(&q->batch_ran);
    pthread_mutex_unlock(&q->mu);
}

/* q->reporter: the same steps on the session's lane thread, without the report, which the
 * calling thread does (swin_pipe_run_lanes) once a batch's `ran` is set:
 *   wait decoded(k) -> [GPU decode(k) into buffer k % 2] -> finish(k-1), ran(k-1) -> start(k)
 * Waiting for batch k needs its slot, that is batch k - depth reported, which was marked ran
 * at step k - depth + 1 <= k - 1 (depth >= 2): the two threads never wait on each other in a
 * circle. */
void swin_pipe_lane_pipelined(pipe_t *q, pipe_lane *l) {
    for (int k = 0; k < q->nbatches; k++) {
        take_batch(q, l, k);
        if (k > 0) {
            finish_batch(q, l, k - 1);
            swin_pipe_mark_ran(q, k - 1);
        }
        start_batch(q, l, k);
    }
    finish_batch(q, l, q->nbatches - 1);
    swin_pipe_mark_ran(q, q->nbatches - 1);
}

// ---- warm-up: on a GPU, one full batch of a synthetic picture per session before the clock
// starts, so that GEMM tuning, graph capture and the preprocessing buffers are done before the
// first file (as PyTorch's compilation and warm-up are kept out of its timings)

static swin_status warm_up(pipe_t *q, swin_session *s) {
    int w = swin_preprocess_width(q->p) * 9 / 8 + 3, h = swin_preprocess_height(q->p) * 9 / 8 + 1;
    size_t bytes = (size_t)w * h * 3;
    uint8_t *px = swin_session_host_alloc(s, bytes);
    swin_image *imgs = calloc((size_t)q->B, sizeof *imgs);
    float *logits = q->slots[0].logits, *x = q->slots[0].x;   /* the slots are not in use yet */
    swin_status st = px && imgs ? SWIN_OK : swin_fail(SWIN_ERR_MEMORY, "out of memory");
    if (st == SWIN_OK) {
        uint32_t r = 12345u;   /* a gradient plus noise, no constant areas */
        for (size_t i = 0; i < bytes; i++) {
            r = r * 1664525u + 1013904223u;
            px[i] = (uint8_t)((i / 3 % (size_t)w) * 255 / (size_t)w / 2 + (r >> 25));
        }
        for (int i = 0; i < q->B; i++) imgs[i] = (swin_image){.width = w, .height = h, .rgb = px};
        if (q->cpu_pre) {   /* the preprocessed picture in every row of slot 0's input */
            st = swin_preprocess_image(q->p, &imgs[0], x);
            for (int i = 1; st == SWIN_OK && i < q->B; i++) memcpy(x + (size_t)i * q->per, x, q->per * sizeof(float));
            if (st == SWIN_OK) st = swin_forward_input_begin(s, x, q->B, 0, logits);
        } else {
            st = swin_forward_images_begin(s, q->p, imgs, NULL, q->B, SWIN_PRE_DEVICE_GPU, 0, logits);
        }
        if (st == SWIN_OK) st = swin_forward_end(s, NULL);
    }
    free(imgs);
    swin_session_host_free(s, px);
    return st == SWIN_OK ? st : swin_fail_prefix(st, "pipeline warm-up");
}

// ---- set-up

static int online_cores(void) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1 ? 1 : c > 256 ? 256 : (int)c;
}

/* every session runs the same model on the same kind of device, with room for the batch */
static swin_status check_sessions(swin_session *const *ss, int n_sessions, const swin_pipeline_options *o) {
    if (n_sessions < 1 || n_sessions > SWIN_PIPELINE_MAX_SESSIONS)
        return swin_fail(SWIN_ERR_ARGUMENT, "pipeline: %d sessions, expected 1 to %d", n_sessions,
                         SWIN_PIPELINE_MAX_SESSIONS);
    for (int i = 0; i < n_sessions; i++) {
        if (!ss[i]) return swin_fail(SWIN_ERR_ARGUMENT, "pipeline: session %d is NULL", i);
        const swin_session_options *so = swin_session_get_options(ss[i]);
        if (o->batch < 1 || o->batch > so->max_batch)
            return swin_fail(SWIN_ERR_ARGUMENT, "pipeline batch %d out of range [1, %d] (the session's max batch)",
                             o->batch, so->max_batch);
        if (i == 0) continue;
        if (swin_session_get_model(ss[i]) != swin_session_get_model(ss[0]))
            return swin_fail(SWIN_ERR_ARGUMENT, "pipeline: session %d runs another model than session 0", i);
        if (so->device != swin_session_get_options(ss[0])->device)
            return swin_fail(SWIN_ERR_ARGUMENT, "pipeline: session %d runs on another kind of device than session 0", i);
        for (int j = 0; j < i; j++)
            if (ss[j] == ss[i]) return swin_fail(SWIN_ERR_ARGUMENT, "pipeline: session %d is also session %d", i, j);
    }
    return SWIN_OK;
}

swin_status swin_pipeline_run(swin_session *s, const swin_preprocess_params *p, const char *const *paths,
                              int n, const swin_pipeline_options *o, swin_pipeline_result_fn on_result,
                              void *ctx, swin_pipeline_stats *stats) {
    return swin_pipeline_run_multi(&s, 1, p, paths, n, o, on_result, ctx, stats, NULL);
}

swin_status swin_pipeline_run_multi(swin_session *const *sessions, int n_sessions, const swin_preprocess_params *p,
                                    const char *const *paths, int n, const swin_pipeline_options *o,
                                    swin_pipeline_result_fn on_result, void *ctx, swin_pipeline_stats *stats,
                                    swin_pipeline_stats *per_session) {
    if (!sessions || !p || !o || !on_result || !stats || (n > 0 && !paths))
        return swin_fail(SWIN_ERR_ARGUMENT, "swin_pipeline_run: NULL argument");
    memset(stats, 0, sizeof *stats);
    SWIN_TRY(check_sessions(sessions, n_sessions, o));
    swin_session *s = sessions[0];
    const swin_session_options *so = swin_session_get_options(s);
    const swin_config *cfg = swin_model_config(swin_session_get_model(s));
    if (o->depth < 2 || o->depth > 16)
        return swin_fail(SWIN_ERR_ARGUMENT, "pipeline depth %d out of range [2, 16]", o->depth);
    if (o->threads < 0 || o->threads > 1024)
        return swin_fail(SWIN_ERR_ARGUMENT, "pipeline threads %d out of range [0, 1024]", o->threads);
    if (swin_preprocess_height(p) != cfg->img_h || swin_preprocess_width(p) != cfg->img_w)
        return swin_fail(SWIN_ERR_ARGUMENT, "preprocessing makes %dx%d inputs; the model takes %dx%d",
                         swin_preprocess_height(p), swin_preprocess_width(p), cfg->img_h, cfg->img_w);
    swin_preprocess_device where = o->where;
    if (where == SWIN_PRE_DEVICE_AUTO)   /* GPU preprocessing makes square inputs only */
        where = so->device == SWIN_DEVICE_CUDA && cfg->img_h == cfg->img_w ? SWIN_PRE_DEVICE_GPU : SWIN_PRE_DEVICE_CPU;
    if (where == SWIN_PRE_DEVICE_GPU && so->device != SWIN_DEVICE_CUDA)
        return swin_fail(SWIN_ERR_ARGUMENT, "GPU preprocessing needs a CUDA session (this one runs on the CPU)");
    swin_decoder dec_kind = o->decoder;
    if (dec_kind == SWIN_DECODER_AUTO)   /* the exact GPU decoder wherever it can run */
        dec_kind = so->device == SWIN_DEVICE_CUDA && where == SWIN_PRE_DEVICE_GPU ? SWIN_DECODER_GPU : SWIN_DECODER_CPU;
    int n_dec = 0;   /* GPU decoders with one session */
    int gpu_share = 0;   /* SWIN_DECODER_GPU: JPEGs per batch offered to the GPU */
    if (dec_kind == SWIN_DECODER_NVJPEG || dec_kind == SWIN_DECODER_GPU) {
        const char *which = dec_kind == SWIN_DECODER_GPU ? "GPU" : "nvJPEG";
        if (so->device != SWIN_DEVICE_CUDA || where != SWIN_PRE_DEVICE_GPU)
            return swin_fail(SWIN_ERR_ARGUMENT, "the %s decoder needs a CUDA session and GPU preprocessing", which);
        if (o->batch > 4096) return swin_fail(SWIN_ERR_ARGUMENT, "the %s decoder takes batches of at most 4096", which);
        SWIN_TRY(swin_pipe_nvj_count(o, dec_kind, &n_dec));
        if (dec_kind == SWIN_DECODER_GPU) SWIN_TRY(swin_pipe_gpu_share(o, o->batch, &gpu_share));
    } else if (dec_kind != SWIN_DECODER_CPU) {
        return swin_fail(SWIN_ERR_ARGUMENT, "unknown decoder %d", (int)o->decoder);
    }
    if (per_session) memset(per_session, 0, (size_t)n_sessions * sizeof *per_session);
    if (n <= 0) return SWIN_OK;

    double t_start = now_ms();
    pipe_t q;
    memset(&q, 0, sizeof q);
    q.p = p;
    q.paths = paths;
    q.n = n;
    q.B = o->batch;
    q.nc = cfg->num_classes;
    q.nbatches = (n + q.B - 1) / q.B;
    q.n_lanes = n_sessions < q.nbatches ? n_sessions : q.nbatches;
    int depth = o->depth;
    if (q.n_lanes > 1 && depth < q.n_lanes + 2) depth = q.n_lanes + 2 < MAX_SLOTS ? q.n_lanes + 2 : MAX_SLOTS;
    /* nvJPEG decoder threads, one session: one batch in its forward, one per decoder, one read */
    int n_nvj = q.n_lanes == 1 && n_dec > 1 ? (n_dec < q.nbatches ? n_dec : q.nbatches) : 0;
    if (n_nvj < 2) n_nvj = 0;
    if (n_nvj && depth < n_nvj + 2) depth = n_nvj + 2;
    q.depth = depth < q.nbatches ? depth : q.nbatches;
    if (q.depth < 1) q.depth = 1;
    q.cpu_pre = where == SWIN_PRE_DEVICE_CPU;
    q.reporter = q.n_lanes == 1 && swin_env_on("SWIN_PIPELINE_REPORTER", 0);
    q.part = swin_env_on("SWIN_DECODE_PART", 1);
    q.decoder = dec_kind;
    q.gpu_share = gpu_share;
    q.gpu = so->device == SWIN_DEVICE_CUDA;
    q.per = swin_preprocess_floats(p);
    int threads = o->threads ? o->threads : online_cores();
    if (threads > n) threads = n;
    const int restarts = swin_env_on("SWIN_JPEG_GPU_RESTARTS", -1);   /* -1 unset: the balance */
    q.rst_keep = restarts == 0 ? INT_MAX : restarts == 1 ? 0 : (threads + 1) / 2;

    swin_status st = SWIN_OK;
    q.slots = calloc((size_t)q.depth, sizeof *q.slots);
    q.lanes = calloc((size_t)q.n_lanes, sizeof *q.lanes);
    if (!q.slots || !q.lanes) { st = swin_fail(SWIN_ERR_MEMORY, "pipeline: out of memory"); goto out; }
    for (int i = 0; i < q.n_lanes; i++) {
        pipe_lane *l = &q.lanes[i];
        l->s = sessions[i];
        l->imgs = calloc((size_t)q.B, sizeof *l->imgs);
        l->on_device = calloc((size_t)q.B, sizeof *l->on_device);
        if (!l->imgs || !l->on_device) { st = swin_fail(SWIN_ERR_MEMORY, "pipeline: out of memory"); goto out; }
        if (q.decoder != SWIN_DECODER_CPU &&
            (st = swin_pipe_gdec_create(&q, swin_session_get_options(l->s)->device_index, &l->dec)) != SWIN_OK)
            goto out;
    }
    if (n_nvj && (st = swin_pipe_nvj_create(&q, n_nvj)) != SWIN_OK) goto out;
    /* the slots' page-locked memory comes from session 0; on a CUDA machine (unified addressing)
     * every GPU copies from it asynchronously */
    stats->pinned = !q.cpu_pre;
    for (int d = 0; d < q.depth; d++) {
        pipe_slot *sl = &q.slots[d];
        sl->batch = d;
        sl->remaining = swin_pipe_batch_len(&q, d);
        sl->items = calloc((size_t)q.B, sizeof *sl->items);
        sl->logits = malloc((size_t)q.B * q.nc * sizeof *sl->logits);
        if (!sl->items || !sl->logits) { st = swin_fail(SWIN_ERR_MEMORY, "pipeline: out of memory"); goto out; }
        if (q.cpu_pre) {
            size_t bytes;
            if (swin_mul_size(q.per * sizeof(float), (size_t)q.B, &bytes) || !(sl->x = malloc(bytes))) {
                st = swin_fail(SWIN_ERR_MEMORY, "pipeline: cannot allocate %d preprocessed images", q.B);
                goto out;
            }
        } else {
            sl->arena_cap = SLOT_BYTES_PER_IMAGE * (size_t)q.B;
            sl->arena = swin_session_host_alloc(s, sl->arena_cap);
            if (!sl->arena) { sl->arena_cap = 0; stats->pinned = 0; } /* pageable copies instead */
        }
    }
    if (o->warmup && q.gpu) {
        double tw = now_ms();
        for (int i = 0; i < q.n_lanes; i++)
            if ((st = warm_up(&q, q.lanes[i].s)) != SWIN_OK) goto out;
        stats->warmup_ms = now_ms() - tw;
        t_start = now_ms();
    }
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.slot_free, NULL);
    pthread_cond_init(&q.batch_done, NULL);
    pthread_cond_init(&q.batch_ran, NULL);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    int started = 0;
    if (tid)
        for (; started < threads; started++)
            if (pthread_create(&tid[started], NULL, decoder, &q) != 0) break;
    if (started > 0 && q.n_nvj) swin_pipe_nvj_start(&q);   /* none started: the caller decodes */
    if (started == 0) {
        st = swin_fail(SWIN_ERR_MEMORY, "pipeline: cannot start a decoder thread");
    } else if ((q.n_lanes == 1 && !q.reporter) || swin_pipe_run_lanes(&q, on_result, ctx, stats) != 0) {
        run_inline(&q, on_result, ctx, stats);   /* one session, or no lane thread could start */
    }
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    free(tid);
    pthread_cond_destroy(&q.batch_ran);
    pthread_cond_destroy(&q.batch_done);
    pthread_cond_destroy(&q.slot_free);
    pthread_mutex_destroy(&q.mu);
    stats->threads = started;
    stats->read_ms = q.read_ms;
    stats->decode_ms = q.decode_ms;
    stats->cpu_preprocess_ms = q.pre_ms;
    for (int i = 0; i < q.n_lanes; i++) {
        const swin_pipeline_stats *ls = &q.lanes[i].st;
        stats->images += ls->images;
        stats->failed += ls->failed;
        stats->batches += ls->batches;
        stats->cpu_fallback += ls->cpu_fallback;
        stats->wait_ms += ls->wait_ms;
        stats->gpu_decode_ms += ls->gpu_decode_ms;
        stats->upload_ms += ls->upload_ms;
        stats->gpu_preprocess_ms += ls->gpu_preprocess_ms;
        stats->forward_ms += ls->forward_ms;
        stats->enqueue_ms += ls->enqueue_ms;
        stats->forward_wait_ms += ls->forward_wait_ms;
        swin_pipe_add_gdec_stats(stats, &q.lanes[i].dec);
        if (per_session) per_session[i] = *ls;
    }
    swin_pipe_nvj_finish(&q, stats);   /* the nvJPEG decoder threads' counts */
out:
    if (q.slots)
        for (int d = 0; d < q.depth; d++) {
            pipe_slot *sl = &q.slots[d];
            if (sl->items) slot_release_items(sl, q.B);
            free(sl->items);
            free(sl->logits);
            free(sl->x);
            swin_session_host_free(s, sl->arena);
            swin_nvjpeg_buffer_free(&sl->px);
        }
    free(q.slots);
    swin_pipe_nvj_free(&q);
    if (q.lanes)
        for (int i = 0; i < q.n_lanes; i++) {
            for (int b = 0; b < 2; b++) swin_nvjpeg_buffer_free(&q.lanes[i].px[b]);
            swin_pipe_gdec_free(&q.lanes[i].dec);
            free(q.lanes[i].on_device);
            free(q.lanes[i].imgs);
        }
    free(q.lanes);
    stats->wall_ms = now_ms() - t_start;
    return st;
}
