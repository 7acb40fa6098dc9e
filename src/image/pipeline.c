/* pipeline.c - decoder threads feeding one session, batches in input order (see pipeline.h).
 *
 * Slots: `depth` of them, each holding one batch: per image the decoded picture (its pixels
 * copied into the slot's page-locked arena when they fit) or its message, and, when the CPU
 * preprocesses, the [batch, 3, S, S] input. A decoder thread takes the next input index, waits
 * until the slot of its batch is handed out, decodes, and counts the batch down; the caller
 * waits for the batch it needs next, runs it, reports every image in order and hands the slot
 * to the batch `depth` further on. One mutex guards the counters; the work happens outside it.
 * Test: build/tests/test_pipeline (ordering, bad files, both preprocessing paths).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sysconf */
#include "pipeline.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "nvjpeg_decode.h"

/* page-locked bytes per image of a slot: a 640x480 RGB picture; larger ones keep their own
 * (pageable) buffer, which is slower to copy but just as correct */
#define SLOT_BYTES_PER_IMAGE ((size_t)640 * 480 * 3)

typedef struct {
    swin_image img;
    uint8_t *jpeg;               /* nvJPEG mode: the file's bytes, decoded on the calling thread */
    size_t jpeg_len;
    int on_device;               /* img.rgb is device memory (decoded by nvJPEG) */
    int in_arena;                /* img.rgb points into the slot arena (not freed) */
    int ok;
    char err[1024];
} item;

typedef struct {
    int batch;                   /* the batch this slot holds or waits for */
    int remaining;               /* its images not yet decoded */
    item *items;                 /* [batch size] */
    uint8_t *arena;              /* page-locked pixels, NULL when none */
    size_t arena_cap, arena_used;
    float *x;                    /* [batch, 3, S, S] when the CPU preprocesses */
} slot;

typedef struct {
    swin_session *s;
    const swin_preprocess_params *p;
    const char *const *paths;
    int n, B, depth, nbatches, cpu_pre, nvjpeg;
    int gpu_session;             /* the session runs on a GPU: short batches are padded */
    size_t per;                  /* floats per preprocessed image */
    swin_nvjpeg *dec;            /* nvJPEG mode */
    slot *slots;
    pthread_mutex_t mu;
    pthread_cond_t slot_free, batch_done;
    int next;                    /* next input index to decode */
    double read_ms, decode_ms, pre_ms;   /* summed over threads, under mu */
} pipe_t;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int batch_len(const pipe_t *q, int k) {
    int start = k * q->B;
    return q->n - start < q->B ? q->n - start : q->B;
}

const char *swin_decoder_str(swin_decoder d) { return d == SWIN_DECODER_NVJPEG ? "nvjpeg" : "cpu"; }

swin_status swin_decoder_parse(const char *s, swin_decoder *out) {
    if (s && (!strcmp(s, "cpu") || !strcmp(s, "libjpeg"))) { *out = SWIN_DECODER_CPU; return SWIN_OK; }
    if (s && !strcmp(s, "nvjpeg")) { *out = SWIN_DECODER_NVJPEG; return SWIN_OK; }
    return swin_fail(SWIN_ERR_ARGUMENT, "decoder '%s': expected cpu (libjpeg) or nvjpeg", s ? s : "(null)");
}

swin_pipeline_options swin_pipeline_options_default(void) {
    swin_pipeline_options o;
    memset(&o, 0, sizeof o);
    o.batch = 8;
    o.depth = 3;
    o.where = SWIN_PRE_DEVICE_AUTO;
    o.warmup = 1;
    return o;
}

// ---- decoder threads

typedef struct {
    pipe_t *q;
    slot *sl;
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

static void decode_one(pipe_t *q, slot *sl, item *it, int i, double *t_read, double *t_dec, double *t_pre) {
    const char *path = q->paths[i];
    double t0 = now_ms();
    uint8_t *buf = NULL;
    size_t len = 0;
    swin_status st = swin_image_read_file(path, &buf, &len);
    double t1 = now_ms();
    if (st == SWIN_OK && q->nvjpeg && len >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF) {
        it->jpeg = buf; /* the calling thread decodes it on the GPU */
        it->jpeg_len = len;
        it->ok = 1;
        *t_read += t1 - t0;
        return;
    }
    /* straight into the slot's page-locked arena when there is one and room in it */
    slot_alloc sa = {q, sl};
    int custom = 0;
    if (st == SWIN_OK)
        st = swin_image_decode_into(buf, len, path, sl->arena && !q->cpu_pre ? arena_alloc : NULL, &sa, &it->img,
                                    &custom);
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
        slot *sl = &q->slots[k % q->depth];
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

// ---- the calling thread: batches in order

/* nvJPEG mode: decode the batch's JPEG bytes on the GPU. A file nvJPEG cannot decode (CMYK,
 * truncated, corrupt, ...) goes to the CPU decoder here, so it is decoded or refused exactly as
 * in the default mode. */
static void gpu_decode(pipe_t *q, slot *sl, int nb, int buffer, swin_pipeline_stats *stats) {
    const uint8_t *data[4096];
    size_t len[4096];
    const char *names[4096];
    int idx[4096], m = 0;
    for (int j = 0; j < nb && m < 4096; j++)
        if (sl->items[j].ok && sl->items[j].jpeg) {
            data[m] = sl->items[j].jpeg;
            len[m] = sl->items[j].jpeg_len;
            names[m] = q->paths[(size_t)(sl->batch) * q->B + j];
            idx[m++] = j;
        }
    if (!m) return;
    double t0 = now_ms();
    swin_nvjpeg_image *out = calloc((size_t)m, sizeof *out);
    swin_status st = out ? swin_nvjpeg_decode(q->dec, buffer, data, len, names, m, out)
                         : swin_fail(SWIN_ERR_MEMORY, "nvJPEG: out of memory");
    for (int i = 0; i < m; i++) {
        item *it = &sl->items[idx[i]];
        if (st == SWIN_OK && out[i].ok) {
            it->img.width = out[i].width;
            it->img.height = out[i].height;
            it->img.rgb = (uint8_t *)out[i].rgb;
            it->on_device = 1;
            continue;
        }
        swin_status cs = swin_image_decode(it->jpeg, it->jpeg_len, names[i], &it->img);
        stats->cpu_fallback++;
        if (cs != SWIN_OK) {
            it->ok = 0;
            snprintf(it->err, sizeof it->err, "%s", swin_last_error());
        }
    }
    free(out);
    stats->gpu_decode_ms += now_ms() - t0;
}

static void slot_release_items(slot *sl, int count) {
    for (int j = 0; j < count; j++) {
        item *it = &sl->items[j];
        free(it->jpeg);
        if (!it->in_arena && !it->on_device) swin_image_free(&it->img);
        memset(it, 0, sizeof *it);
    }
    sl->arena_used = 0;
}

/* One batch between its start and its delivery. */
typedef struct {
    int begun;                   /* its forward was started (some image decoded, begin worked) */
    swin_status st;              /* the forward's status */
    char msg[1024];              /* its message when it failed */
    float *logits;               /* [batch, classes] */
} batch_run;

/* Batch k is decoded: gather its good images and start its forward (returns at once on a CUDA
 * session). A short batch runs padded to the full batch on the GPU, so that it replays the
 * captured graph of the full one instead of capturing (and tuning) another. */
static void start_batch(pipe_t *q, int k, swin_image *imgs, int *on_device, batch_run *br) {
    slot *sl = &q->slots[k % q->depth];
    int nb = batch_len(q, k), ngood = 0;
    for (int j = 0; j < nb; j++) {
        if (!sl->items[j].ok) continue;
        if (q->cpu_pre) {
            if (ngood != j) memcpy(sl->x + (size_t)ngood * q->per, sl->x + (size_t)j * q->per, q->per * sizeof(float));
        } else {
            imgs[ngood] = sl->items[j].img;
            on_device[ngood] = sl->items[j].on_device;
        }
        ngood++;
    }
    br->begun = 0;
    br->st = SWIN_OK;
    br->msg[0] = '\0';
    if (!ngood) return;
    int pad = q->gpu_session ? q->B : 0;
    swin_status st = q->cpu_pre ? swin_forward_input_begin(q->s, sl->x, ngood, pad, br->logits)
                                : swin_forward_images_begin(q->s, q->p, imgs, q->nvjpeg ? on_device : NULL, ngood,
                                                            SWIN_PRE_DEVICE_GPU, pad, br->logits);
    br->begun = st == SWIN_OK;
    if (st != SWIN_OK) {
        br->st = st;
        snprintf(br->msg, sizeof br->msg, "%s", swin_last_error());
    }
}

/* Wait for batch k's forward. */
static void finish_batch(pipe_t *q, batch_run *br, swin_pipeline_stats *stats) {
    if (!br->begun) return;
    swin_images_timing t = {0};
    br->st = swin_forward_end(q->s, &t);
    if (br->st != SWIN_OK) snprintf(br->msg, sizeof br->msg, "%s", swin_last_error());
    stats->upload_ms += t.upload_ms;
    stats->gpu_preprocess_ms += t.preprocess_ms;
    stats->forward_ms += t.forward_ms;
}

/* Report batch k's images in order, then hand its slot to the batch `depth` further on. */
static void deliver_batch(pipe_t *q, int k, const batch_run *br, int nc, swin_pipeline_result_fn on_result,
                          void *ctx, swin_pipeline_stats *stats) {
    slot *sl = &q->slots[k % q->depth];
    int nb = batch_len(q, k);
    double t0 = now_ms();
    for (int j = 0, g = 0; j < nb; j++) {
        int i = k * q->B + j;
        swin_pipeline_result r = {i, q->paths[i], NULL, NULL};
        char msg[1400];
        if (!sl->items[j].ok) {
            r.error = sl->items[j].err;
        } else if (br->st != SWIN_OK) {
            snprintf(msg, sizeof msg, "%s: forward pass failed: %s", q->paths[i], br->msg);
            r.error = msg;
            g++;
        } else {
            r.logits = br->logits + (size_t)g++ * nc;
        }
        if (r.error) stats->failed++;
        on_result(ctx, &r);
    }
    stats->output_ms += now_ms() - t0;
    stats->batches++;
    slot_release_items(sl, nb);
    pthread_mutex_lock(&q->mu);
    sl->batch = k + q->depth;
    sl->remaining = sl->batch < q->nbatches ? batch_len(q, sl->batch) : 0;
    pthread_cond_broadcast(&q->slot_free);
    pthread_mutex_unlock(&q->mu);
}

/* Wait until the decoder threads have finished batch k. */
static void wait_decoded(pipe_t *q, int k, swin_pipeline_stats *stats) {
    slot *sl = &q->slots[k % q->depth];
    double tw = now_ms();
    pthread_mutex_lock(&q->mu);
    while (sl->batch != k || sl->remaining > 0) pthread_cond_wait(&q->batch_done, &q->mu);
    pthread_mutex_unlock(&q->mu);
    stats->wait_ms += now_ms() - tw;
}

/* The calling thread. Batch k's nvJPEG decoding and the wait for its files overlap batch k-1's
 * forward; batch k-1's results are printed while batch k's forward runs:
 *   wait decoded(k) -> [nvJPEG(k)] -> finish(k-1) -> start(k) -> deliver(k-1) */
static void run_batches(pipe_t *q, swin_image *imgs, int *on_device, batch_run br[2], int nc,
                        swin_pipeline_result_fn on_result, void *ctx, swin_pipeline_stats *stats) {
    for (int k = 0; k < q->nbatches; k++) {
        wait_decoded(q, k, stats);
        if (q->nvjpeg) gpu_decode(q, &q->slots[k % q->depth], batch_len(q, k), k % 2, stats);
        if (k > 0) finish_batch(q, &br[(k - 1) % 2], stats);
        start_batch(q, k, imgs, on_device, &br[k % 2]);
        if (k > 0) deliver_batch(q, k - 1, &br[(k - 1) % 2], nc, on_result, ctx, stats);
    }
    int last = q->nbatches - 1;
    finish_batch(q, &br[last % 2], stats);
    deliver_batch(q, last, &br[last % 2], nc, on_result, ctx, stats);
}

// ---- warm-up: one full batch of a synthetic picture before the clock starts, so that the GEMM
// tuning, the graph capture and the preprocessing buffers are done before the first file

static swin_status warm_up(pipe_t *q, float *logits) {
    int w = swin_preprocess_width(q->p) * 9 / 8 + 3, h = swin_preprocess_height(q->p) * 9 / 8 + 1;
    size_t bytes = (size_t)w * h * 3;
    uint8_t *px = swin_session_host_alloc(q->s, bytes);
    swin_image *imgs = calloc((size_t)q->B, sizeof *imgs);
    swin_status st = px && imgs ? SWIN_OK : swin_fail(SWIN_ERR_MEMORY, "pipeline warm-up: out of memory");
    if (st == SWIN_OK) {
        uint32_t r = 12345u;   /* texture: a gradient plus noise, no constant areas */
        for (size_t i = 0; i < bytes; i++) {
            r = r * 1664525u + 1013904223u;
            px[i] = (uint8_t)((i / 3 % (size_t)w) * 255 / (size_t)w / 2 + (r >> 25));
        }
        for (int i = 0; i < q->B; i++) imgs[i] = (swin_image){w, h, px};
        if (q->cpu_pre) {   /* one preprocessed picture in every row of slot 0's input */
            st = swin_preprocess_image(q->p, &imgs[0], q->slots[0].x);
            for (int i = 1; st == SWIN_OK && i < q->B; i++)
                memcpy(q->slots[0].x + (size_t)i * q->per, q->slots[0].x, q->per * sizeof(float));
            if (st == SWIN_OK) st = swin_forward_input_begin(q->s, q->slots[0].x, q->B, 0, logits);
        } else {
            st = swin_forward_images_begin(q->s, q->p, imgs, NULL, q->B, SWIN_PRE_DEVICE_GPU, 0, logits);
        }
        if (st == SWIN_OK) st = swin_forward_end(q->s, NULL);
    }
    free(imgs);
    swin_session_host_free(q->s, px);
    return st == SWIN_OK ? st : swin_fail_prefix(st, "pipeline warm-up");
}

static int online_cores(void) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1 ? 1 : c > 256 ? 256 : (int)c;
}

swin_status swin_pipeline_run(swin_session *s, const swin_preprocess_params *p, const char *const *paths,
                              int n, const swin_pipeline_options *o, swin_pipeline_result_fn on_result,
                              void *ctx, swin_pipeline_stats *stats) {
    if (!s || !p || !o || !on_result || !stats || (n > 0 && !paths))
        return swin_fail(SWIN_ERR_ARGUMENT, "swin_pipeline_run: NULL argument");
    memset(stats, 0, sizeof *stats);
    const swin_session_options *so = swin_session_get_options(s);
    const swin_config *cfg = swin_model_config(swin_session_get_model(s));
    if (o->batch < 1 || o->batch > so->max_batch)
        return swin_fail(SWIN_ERR_ARGUMENT, "pipeline batch %d out of range [1, %d] (the session's max batch)",
                         o->batch, so->max_batch);
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
    if (o->decoder == SWIN_DECODER_NVJPEG) {
        if (so->device != SWIN_DEVICE_CUDA || where != SWIN_PRE_DEVICE_GPU)
            return swin_fail(SWIN_ERR_ARGUMENT, "the nvJPEG decoder needs a CUDA session and GPU preprocessing");
        if (o->batch > 4096) return swin_fail(SWIN_ERR_ARGUMENT, "the nvJPEG decoder takes batches of at most 4096");
    } else if (o->decoder != SWIN_DECODER_CPU) {
        return swin_fail(SWIN_ERR_ARGUMENT, "unknown decoder %d", (int)o->decoder);
    }
    if (n <= 0) return SWIN_OK;

    double t_start = now_ms();
    pipe_t q;
    memset(&q, 0, sizeof q);
    q.s = s;
    q.p = p;
    q.paths = paths;
    q.n = n;
    q.B = o->batch;
    q.nbatches = (n + q.B - 1) / q.B;
    q.depth = o->depth < q.nbatches ? o->depth : q.nbatches;
    if (q.depth < 1) q.depth = 1;
    q.cpu_pre = where == SWIN_PRE_DEVICE_CPU;
    q.nvjpeg = o->decoder == SWIN_DECODER_NVJPEG;
    q.per = swin_preprocess_floats(p);
    int threads = o->threads ? o->threads : online_cores();
    if (threads > n) threads = n;

    q.gpu_session = so->device == SWIN_DEVICE_CUDA;
    swin_status st = SWIN_OK;
    int nc = cfg->num_classes;
    batch_run br[2];
    memset(br, 0, sizeof br);
    float *logits = malloc(2 * (size_t)q.B * nc * sizeof *logits);
    swin_image *imgs = calloc((size_t)q.B, sizeof *imgs);
    int *on_device = calloc((size_t)q.B, sizeof *on_device);
    q.slots = calloc((size_t)q.depth, sizeof *q.slots);
    if (!logits || !imgs || !on_device || !q.slots) { st = swin_fail(SWIN_ERR_MEMORY, "pipeline: out of memory"); goto out; }
    br[0].logits = logits;
    br[1].logits = logits + (size_t)q.B * nc;
    if (q.nvjpeg && (st = swin_nvjpeg_create(so->device_index, &q.dec)) != SWIN_OK) goto out;
    stats->pinned = !q.cpu_pre;
    for (int d = 0; d < q.depth; d++) {
        slot *sl = &q.slots[d];
        sl->batch = d;
        sl->remaining = batch_len(&q, d);
        sl->items = calloc((size_t)q.B, sizeof *sl->items);
        if (!sl->items) { st = swin_fail(SWIN_ERR_MEMORY, "pipeline: out of memory"); goto out; }
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
    if (o->warmup && q.gpu_session) {
        double tw = now_ms();
        if ((st = warm_up(&q, logits)) != SWIN_OK) goto out;
        stats->warmup_ms = now_ms() - tw;
        t_start = now_ms();
    }
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.slot_free, NULL);
    pthread_cond_init(&q.batch_done, NULL);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    int started = 0;
    if (tid)
        for (; started < threads; started++)
            if (pthread_create(&tid[started], NULL, decoder, &q) != 0) break;
    if (started == 0) {
        st = swin_fail(SWIN_ERR_MEMORY, "pipeline: cannot start a decoder thread");
    } else {
        run_batches(&q, imgs, on_device, br, nc, on_result, ctx, stats); /* failures reported per image */
    }
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    free(tid);
    pthread_cond_destroy(&q.batch_done);
    pthread_cond_destroy(&q.slot_free);
    pthread_mutex_destroy(&q.mu);
    stats->images = n;
    stats->threads = started;
    stats->read_ms = q.read_ms;
    stats->decode_ms = q.decode_ms;
    stats->cpu_preprocess_ms = q.pre_ms;
    if (q.dec) {
        swin_nvjpeg_stats ns;
        swin_nvjpeg_get_stats(q.dec, &ns);
        stats->nvjpeg_hw_images = ns.hw_images;
        stats->nvjpeg_sw_images = ns.sw_images;
        stats->nvjpeg_parse_ms = ns.parse_ms;
        stats->nvjpeg_hw_ms = ns.hw_ms;
        stats->nvjpeg_sw_ms = ns.sw_ms;
        stats->nvjpeg_sync_ms = ns.sync_ms;
    }
out:
    if (q.slots)
        for (int d = 0; d < q.depth; d++) {
            slot *sl = &q.slots[d];
            if (sl->items) slot_release_items(sl, q.B);
            free(sl->items);
            free(sl->x);
            swin_session_host_free(s, sl->arena);
        }
    free(q.slots);
    swin_nvjpeg_free(q.dec);
    free(on_device);
    free(imgs);
    free(logits);
    stats->wall_ms = now_ms() - t_start;
    return st;
}
