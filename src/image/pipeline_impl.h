/* pipeline_impl.h - what pipeline.c (decoder threads, slots, the in-order report),
 * pipeline_multi.c (one thread per session) and pipeline_nvjpeg.c (nvJPEG decoding, and the
 * nvJPEG decoder threads of one session) share. Internal to src/image/pipeline*.c.
 *
 * A slot holds one batch through its life: decoded by the decoder threads (remaining counts
 * down to 0), run by a lane (a session and its scratch: the forward's logits and status land
 * in the slot, ran = 1), reported in input order by the calling thread, then handed to the batch
 * `depth` further on. One mutex (pipe_t.mu) guards batch, remaining, ran and the counters; the
 * work happens outside it.
 */
#ifndef SWIN_PIPELINE_IMPL_H
#define SWIN_PIPELINE_IMPL_H

#include <pthread.h>

#include "jpeg_gpu.h"
#include "nvjpeg_decode.h"
#include "pipeline.h"

typedef struct {
    swin_image img;
    uint8_t *jpeg;               /* GPU decoding: the file's bytes, decoded on the GPU */
    swin_jpeg_scan *scan;        /* SWIN_DECODER_GPU: its scan (malloc'd; img.data 0 into ent) */
    uint8_t *ent;                /* SWIN_DECODER_GPU: its entropy-coded data, staged (swin_jp_stage; malloc'd) */
    size_t jpeg_len;
    int on_device;               /* img.rgb is device memory (decoded by nvJPEG) */
    int in_arena;                /* img.rgb points into the slot arena (not freed) */
    int ok;
    char err[1024];
} pipe_item;

typedef struct {
    int batch;                   /* the batch this slot holds or waits for */
    int remaining;               /* its images not yet decoded */
    int ran;                     /* the forward ran; logits / fs / fmsg hold its outcome */
    int begun, ngood;            /* its forward was started, over ngood decoded images */
    int rst_kept;                /* its JPEGs with restart intervals kept for libjpeg (rst_keep) */
    pipe_item *items;            /* [batch size] */
    uint8_t *arena;              /* page-locked pixels, NULL when none */
    size_t arena_cap, arena_used;
    float *x;                    /* [batch, 3, S, S] when the CPU preprocesses */
    float *logits;               /* [batch, classes]: the good images' logits, packed */
    swin_status fs;              /* the forward's status */
    char fmsg[1024];             /* its message when it failed */
    swin_nvjpeg_buffer px;       /* nvJPEG decoder threads: the batch's device pixels, read by
                                    its forward, rewritten only after it was reported */
    int gpu_decoded;             /* nvJPEG decoder threads: its JPEGs are decoded */
} pipe_slot;

typedef struct {                 /* a GPU JPEG decoder: nvJPEG's, or the exact one (jpeg_gpu.h) */
    swin_nvjpeg *nv;
    swin_jpeg_gpu *jg;
} pipe_gdec;

typedef struct {                 /* one session and what running a batch on it needs */
    swin_session *s;
    pipe_gdec dec;               /* GPU decoding: on this session's GPU */
    swin_nvjpeg_buffer px[2];    /* its device pixels when this lane decodes (alternately with
                                    one session on the calling thread, else the first) */
    swin_image *imgs;            /* [batch] */
    int *on_device;              /* [batch] */
    swin_pipeline_stats st;      /* its images, failed, batches, wait and GPU stages */
} pipe_lane;

typedef struct pipe_nvj pipe_nvj;

typedef struct {
    const swin_preprocess_params *p;
    const char *const *paths;
    int n, B, depth, nbatches, cpu_pre, nc;
    swin_decoder decoder;        /* CPU, NVJPEG or GPU (AUTO resolved) */
    int gpu_share;               /* SWIN_DECODER_GPU: JPEGs of each batch offered to the GPU */
    int rst_keep;                /* SWIN_DECODER_GPU: JPEGs with restart intervals that the CPU
                                    threads keep a batch (libjpeg), the others go to the GPU:
                                    half the threads, or SWIN_JPEG_GPU_RESTARTS=0 all, =1 none */
    int gpu;                     /* the sessions run on GPUs: short batches are padded to B */
    size_t per;                  /* floats per preprocessed image */
    pipe_slot *slots;
    pipe_lane *lanes;
    int n_lanes;
    int part;                    /* libjpeg decodes only the part of each JPEG that preprocessing
                                    reads (swin_image_decode_part; SWIN_DECODE_PART=0: whole) */
    int reporter;                /* one session on a lane thread, the calling thread reporting
                                    (SWIN_PIPELINE_REPORTER=1; swin_pipe_lane_pipelined) */
    pthread_mutex_t mu;
    pthread_cond_t slot_free, batch_done, batch_ran;
    int next;                    /* next input index to decode */
    int next_run;                /* lanes: the next batch to run */
    double read_ms, decode_ms, pre_ms;   /* summed over decoder threads, under mu */
    pipe_nvj *nvj;               /* nvJPEG decoder threads (one session), [n_nvj] */
    int n_nvj, nvj_running;      /* made, and started (0: the calling thread decodes) */
    int next_gpu;                /* the next batch for an nvJPEG decoder thread */
} pipe_t;

struct pipe_nvj {                /* one nvJPEG decoder thread */
    pipe_t *q;
    pipe_gdec dec;               /* its own, except the first's, which is lane 0's */
    pthread_t tid;
    int cpu_fallback;            /* JPEGs it handed to the CPU decoder */
    double ms;                   /* its time decoding */
};

double swin_pipe_now_ms(void);
int swin_pipe_batch_len(const pipe_t *q, int k);
/* Wait (under q->mu, held on entry and exit) until batch k is decoded into its slot. */
void swin_pipe_wait_decoded(pipe_t *q, int k);
/* Run decoded batch k on lane l, start to end: nvJPEG decode, forward; the outcome goes into
 * the slot. (One session on the calling thread overlaps these steps with the report instead.) */
void swin_pipe_run_batch(pipe_t *q, pipe_lane *l, int k);
/* Batches 0 .. nbatches-1 on q->n_lanes lane threads, each reported in order on the calling
 * thread (pipeline_multi.c). Returns 0, or -1 when no lane thread could start (nothing run). */
int swin_pipe_run_lanes(pipe_t *q, swin_pipeline_result_fn on_result, void *ctx, swin_pipeline_stats *stats);
/* One session's batches on its lane thread (q->reporter), pipelined as run_inline in pipeline.c
 * runs them: batch k's forward is started right after batch k-1's has ended, and k-1 is handed
 * to the calling thread (its slot's `ran`), which reports it meanwhile. */
void swin_pipe_lane_pipelined(pipe_t *q, pipe_lane *l);
/* Batch k has run: its slot's `ran`, for the calling thread that reports it (takes q->mu). */
void swin_pipe_mark_ran(pipe_t *q, int k);
/* Report batch k in input order, then hand its slot to batch k + depth (calling thread). */
void swin_pipe_report_batch(pipe_t *q, int k, swin_pipeline_result_fn on_result, void *ctx,
                            swin_pipeline_stats *stats);

// ---- pipeline_nvjpeg.c

/* GPU decoding: decode batch k's JPEG bytes (in its slot) with dec into px; a JPEG that the GPU
 * does not decode goes to the CPU decoder (counted in *cpu_fallback); the time is added to *ms. */
void swin_pipe_gpu_decode(pipe_t *q, pipe_gdec *dec, swin_nvjpeg_buffer *px, int k, int *cpu_fallback, double *ms);
/* a GPU decoder of q's kind on GPU dev; freeing one */
swin_status swin_pipe_gdec_create(const pipe_t *q, int dev, pipe_gdec *out);
void swin_pipe_gdec_free(pipe_gdec *d);
/* The number of GPU decoders of kind `decoder` for one session: o->nvjpeg_decoders, else
 * SWIN_NVJPEG_STATES (nvJPEG) or SWIN_JPEG_GPU_DECODERS (the exact decoder) from the
 * environment, else the default (1 for nvJPEG, 2 for the exact decoder). */
swin_status swin_pipe_nvj_count(const swin_pipeline_options *o, swin_decoder decoder, int *out);
/* SWIN_DECODER_GPU: how many JPEGs of each batch of B are offered to the GPU (the others are
 * decoded by the CPU threads): o->gpu_share, else SWIN_JPEG_GPU_SHARE, else the default. */
swin_status swin_pipe_gpu_share(const swin_pipeline_options *o, int B, int *out);
/* Make n nvJPEG decoder records on lane 0's GPU (the first borrows lane 0's decoder). */
swin_status swin_pipe_nvj_create(pipe_t *q, int n);
/* Start their threads: q->nvj_running of them run after this (0: none, the caller decodes). */
void swin_pipe_nvj_start(pipe_t *q);
/* Add one decoder's counts (none: nothing) to stats, as one more decoder. */
void swin_pipe_add_gdec_stats(swin_pipeline_stats *stats, const pipe_gdec *dec);
/* Join the threads (every batch was claimed) and add their counts to stats. */
void swin_pipe_nvj_finish(pipe_t *q, swin_pipeline_stats *stats);
void swin_pipe_nvj_free(pipe_t *q);

#endif
