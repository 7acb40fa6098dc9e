/* pipeline.h - many image files through one session: decoder threads overlapped with the forward.
 *
 *   swin_pipeline_options po = swin_pipeline_options_default();   // threads = cores, batch 8
 *   po.batch = 256;
 *   swin_pipeline_stats stats;
 *   swin_status st = swin_pipeline_run(sess, &pp, paths, n, &po, on_result, ctx, &stats);
 *
 *   void on_result(void *ctx, const swin_pipeline_result *r) {
 *       if (r->logits) ... r->index, r->path, r->logits[0 .. num_classes) ...
 *       else           ... r->error ("<path>: truncated JPEG (...)") ...
 *   }
 *
 * How it runs: `threads` decoder threads read and decode the files (src/image/decode.c) straight
 * into `depth` batch slots (page-locked host memory on a CUDA session, so the copy to the GPU is
 * asynchronous; an image that does not fit its slot's arena keeps its own pageable buffer); the calling thread takes the batches in order, runs swin_forward_images
 * (preprocessing on the GPU by default on a CUDA session) or, with SWIN_PRE_DEVICE_CPU, the
 * decoder threads also preprocess and the caller runs swin_forward. While the GPU works on
 * batch k, batches k+1 .. k+depth-1 are decoded, and batch k-1's results are reported (the
 * forward is asynchronous: swin_forward_images_begin / swin_forward_end). Memory is bounded by
 * depth x batch images. On a CUDA session a short batch (the last one, or one with bad files)
 * runs padded to the full batch, and a warm-up batch runs first (options.warmup).
 * With SWIN_DECODER_GPU (what AUTO picks on a CUDA session with GPU preprocessing) the threads
 * read each JPEG's header with libjpeg and stage its entropy-coded data (unstuffed, restart
 * markers taken out: swin_jp_stage); each batch's JPEGs
 * are then decoded on the GPU, exactly as libjpeg decodes them (jpeg_gpu.h), by
 * options.nvjpeg_decoders decoder threads (default 2) as below; what the GPU does not cover or
 * refuses is decoded by libjpeg. With SWIN_DECODER_NVJPEG the threads only read JPEG files and
 * each batch's JPEGs are decoded on the GPU by nvJPEG (other formats are still decoded on the
 * threads); a JPEG that nvJPEG cannot decode is given to the CPU decoder, which decodes it or
 * reports why not. With one session,
 * options.nvjpeg_decoders (default 1, or SWIN_NVJPEG_STATES from the environment) nvJPEG
 * decoders, each on its own thread with its own handles, states, stream and device pixels,
 * decode consecutive batches at the same time (each batch's pixels live in its slot until the
 * batch is reported, so depth is raised to decoders + 2); with 1, the calling thread decodes
 * batch k between the forwards of k-1 and k. Measured on an H200 (10,240 photos, Swin-T fp16
 * batch 256): 1 decoder 3,918 img/s, 2 3,369, 3 3,186, 4 3,057: the JPEG engines are the
 * bottleneck (nvjpegDecodeBatched's time summed over the decoders grows with their number:
 * 1,787 / 4,603 / 7,469 / 10,519 ms), so one decoder is the default. One decoder on a thread of
 * its own, so that its decoding overlaps the calling thread's reporting, was slower (H200,
 * 2026-11-27, the same files, two runs each: 2,850 / 2,751 ms wall against 2,590 / 2,449 ms on
 * the calling thread; the engines' time 2,419 / 2,144 against 1,807 / 1,815 ms: nvJPEG's batched
 * decode slows down while the forward runs beside it), so it stays on the calling thread. With
 * several sessions each session's thread decodes its own batches.
 *
 * JPEGs with restart intervals (SWIN_DECODER_GPU): the GPU decodes them exactly too (jpeg_par.h;
 * a large one split at its intervals over several thread blocks, jpeg_gpu.h), but where such
 * files are few, an idle CPU thread running libjpeg does better than adding them to the GPU's
 * work. Measured on an H200 with 16 cores (2026-11-27, Swin-T fp16 batch 256, swin classify
 * --decoder gpu, two runs each): 10,240 photo copies of which 209 (dog.jpg, 661 KB, 5 a batch)
 * have restart intervals: all of those to libjpeg 0.84 / 0.88 s, all to the GPU 0.93 / 0.95 s
 * (0.98 / 0.97 s without the split); 2,560 copies of dog.jpg alone: all to libjpeg 4.60 / 4.22 s
 * (557 / 606 img/s), all to the GPU 0.96 / 0.95 s (2,667 / 2,683 img/s); the output identical.
 * So the decoder threads keep the first (threads + 1) / 2 such files of each batch for libjpeg
 * and give the rest to the GPU (keep_restarts in pipeline.c); SWIN_JPEG_GPU_RESTARTS=0 keeps
 * them all, =1 none, to compare. That balance, measured in a later run of the same day (three
 * runs each, balance / all to libjpeg / all to the GPU): the photo copies 0.81 0.85 0.86 / 0.78
 * 0.80 0.85 / 0.85 0.91 0.94 s (it keeps each batch's 5 for libjpeg); the dog.jpg copies, two
 * runs, 1.06 0.94 s (2,414 / 2,723 img/s, 80 of 2,560 kept for libjpeg) against 0.89 0.95 s all
 * to the GPU; the output identical.
 *
 * libjpeg decodes only the part of each JPEG that preprocessing reads (swin_image_decode_part:
 * the crop's columns and rows and the resize filter's reach, plus a margin), the same pixels
 * there and the same output, bit for bit; SWIN_DECODE_PART=0 decodes whole images, to compare.
 * Measured on an H200 with 16 cores (2026-11-27, 10,240 photo copies, Swin-T fp16 batch 256,
 * swin classify --timing, whole / part): --decoder cpu 1.94 1.92 1.94 / 1.74 1.77 1.85 s wall
 * (decode summed over the threads 28.1 28.0 28.3 / 25.1 25.4 27.1 s; upload 150 / 112 ms);
 * --decoder gpu, where libjpeg has few files, 0.97 0.92 / 0.94 0.94 s; the output identical.
 * tools/bench_pipeline.sh runs both (docs/PERFORMANCE.md); its run later that day, on a faster
 * machine: 8,149 img/s in part against 7,271 whole (decode summed 18.5 / 20.8 s).
 *
 * With SWIN_PIPELINE_REPORTER=1 in the environment, one session's batches run on a thread of
 * their own in the same order (its forward of batch k starts as soon as k-1's has ended) while
 * the calling thread reports them, so that the calls of on_result (about 30 us an image in
 * `swin classify --json`: 380 ms of a 913 ms run of 10,240 files on an H200) no longer sit
 * between two forwards. Measured on an H200 (2026-11-27; 10,240 photo copies, Swin-T fp16 batch
 * 256, `swin classify --json --timing`, three runs each, default / SWIN_PIPELINE_REPORTER=1, wall
 * s): --decoder gpu 0.91 0.86 0.89 / 0.89 0.91 0.92; cpu 1.82 2.02 1.98 / 1.96 2.01 1.99; nvjpeg
 * 3.22 2.98 3.00 / 3.22 3.04 3.21; the output identical. No gain: the calls of on_result were
 * not what the forwards waited for (with the reporter the batch thread's wait-for-decode grew by
 * what the caller's output had taken: gpu 156-197 -> 357-427 ms). So it stays off; the switch is
 * kept so that the comparison can be repeated in one run when the pipeline changes.
 *
 * Several sessions (swin_pipeline_run_multi: one per GPU, or CPU sessions) share the decoder
 * threads: a thread per session takes the next decoded batch, whichever session is free first,
 * and the calling thread reports the batches in input order; there are then at least
 * sessions + 2 batches in flight. Each image's logits are what its batch gives on any one of
 * the sessions (the same batches as with one session). The slots' page-locked memory comes from
 * the first session; with unified addressing (every 64-bit CUDA platform) every GPU copies from
 * it asynchronously.
 *
 * Results: on_result is called on the calling thread once per input, in input order, with
 * either logits or a message; a file that cannot be read or decoded never stops the others.
 * A forward that fails is reported for each image of its batch and the run goes on. The call
 * returns SWIN_OK once every input was delivered (stats->failed counts the failures), or an
 * error, delivering nothing, when it cannot start (bad options, out of memory, no thread).
 * Test: tests/test_pipeline.c.
 */
#ifndef SWIN_PIPELINE_H
#define SWIN_PIPELINE_H

#include "preprocess.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    SWIN_DECODER_CPU = 0,          /* libjpeg-turbo (Pillow-exact) and stb on the decoder threads */
    SWIN_DECODER_NVJPEG = 1,       /* JPEGs on the GPU with nvJPEG (not bit-exact), others on the CPU */
    SWIN_DECODER_GPU = 2,          /* Pillow-exact too: baseline JPEGs decoded on the GPU (jpeg_gpu.h:
                                      the same pixels as libjpeg's), the others by libjpeg on the
                                      decoder threads, and any JPEG the GPU refuses */
    SWIN_DECODER_AUTO = 3          /* the default: GPU on a CUDA session with GPU preprocessing, else CPU */
} swin_decoder;

typedef struct {
    int threads;                   /* decoder threads; 0 = the number of online cores */
    int batch;                     /* images per forward, 1 .. the session's max batch */
    int depth;                     /* batches in flight, >= 2 (default 3) */
    swin_preprocess_device where;  /* AUTO: GPU on a CUDA session, else CPU */
    swin_decoder decoder;          /* AUTO (default); GPU and NVJPEG need a CUDA session and GPU
                                      preprocessing */
    int warmup;                    /* 1 (default): on a CUDA session, one batch of a synthetic
                                      picture runs before the clock starts (GEMM tuning, graph
                                      capture, buffers), timed as warmup_ms */
    int nvjpeg_decoders;           /* NVJPEG or GPU with one session: decoders working on different
                                      batches at once, 1 .. 16; 0 (default): SWIN_NVJPEG_STATES
                                      (NVJPEG) or SWIN_JPEG_GPU_DECODERS (GPU) from the
                                      environment when set, else 1 (NVJPEG) or 2 (GPU) */
    int gpu_share;                 /* GPU: percent of each batch's JPEGs offered to the GPU (the
                                      others go to libjpeg on the decoder threads), 1 .. 100; 0
                                      (default): SWIN_JPEG_GPU_SHARE when set, else 100 */
} swin_pipeline_options;

/* "cpu" / "nvjpeg" / "gpu" / "auto" (also accepted: "libjpeg" for cpu) */
const char *swin_decoder_str(swin_decoder d);
swin_status swin_decoder_parse(const char *s, swin_decoder *out);

swin_pipeline_options swin_pipeline_options_default(void);

typedef struct {
    int index;                     /* position in the input list */
    const char *path;
    const float *logits;           /* [num_classes], NULL when the image failed */
    const char *error;             /* the message when it failed, else NULL */
} swin_pipeline_result;

typedef void (*swin_pipeline_result_fn)(void *ctx, const swin_pipeline_result *r);

/* Time per stage in milliseconds. Thread stages are summed over the decoder threads
 * (thread-milliseconds); the caller's stages are wall time on the calling thread. */
typedef struct {
    int images, failed, batches, threads;
    int pinned;                    /* 1 when the slots are page-locked memory */
    int cpu_fallback;              /* nvJPEG mode: JPEGs nvJPEG could not decode, tried on the CPU */
    double wall_ms;                /* from the first file read to the last result, warm-up excluded */
    double warmup_ms;              /* the warm-up batch (0 when none ran) */
    double read_ms, decode_ms, cpu_preprocess_ms;   /* decoder threads */
    double wait_ms;                /* caller waiting for decoded batches (the GPU idles) */
    double gpu_decode_ms;          /* nvJPEG: on the calling thread, or summed over the nvJPEG
                                      decoder threads when there are several */
    double upload_ms, gpu_preprocess_ms, forward_ms;          /* per swin_images_timing */
    double enqueue_ms;             /* the batch's thread in swin_forward_*_begin (checks, resize
                                      plans, staging and launches; on the CPU all the work) */
    double forward_wait_ms;        /* ... and blocked in swin_forward_end, waiting for the GPU */
    double output_ms;              /* on_result calls */
    /* nvJPEG mode: decoders, images by backend, batched set-ups, padding images, and the
     * decoders' time (ms, summed over the decoders) */
    int nvjpeg_decoders, nvjpeg_hw_images, nvjpeg_sw_images, nvjpeg_hw_setups, nvjpeg_hw_padding;
    double nvjpeg_parse_ms, nvjpeg_hw_ms, nvjpeg_sw_ms, nvjpeg_sync_ms;
    /* GPU mode: JPEGs decoded on the GPU, refused there (then decoded by libjpeg: cpu_fallback
     * counts them), and the decoders' time gathering batches and on the GPU (ms, summed) */
    int gpu_jpeg_images, gpu_jpeg_refused;
    double gpu_jpeg_stage_ms, gpu_jpeg_gpu_ms;
} swin_pipeline_stats;

#define SWIN_PIPELINE_MAX_SESSIONS 64

swin_status swin_pipeline_run(swin_session *s, const swin_preprocess_params *p, const char *const *paths,
                              int n, const swin_pipeline_options *o, swin_pipeline_result_fn on_result,
                              void *ctx, swin_pipeline_stats *stats);

/* The same over n_sessions sessions (1 .. SWIN_PIPELINE_MAX_SESSIONS) of one model, all on the
 * CPU or all on GPUs, each with a max batch >= o->batch, never the same session twice. With
 * several sessions the wait, enqueue, forward-wait and GPU stages of stats are summed over the
 * session threads; per_session (NULL, or an array of n_sessions) receives each session's images,
 * failed, batches, wait, nvJPEG, upload, preprocess, forward, enqueue and forward-wait times. One session: swin_pipeline_run. */
swin_status swin_pipeline_run_multi(swin_session *const *sessions, int n_sessions, const swin_preprocess_params *p,
                                    const char *const *paths, int n, const swin_pipeline_options *o,
                                    swin_pipeline_result_fn on_result, void *ctx, swin_pipeline_stats *stats,
                                    swin_pipeline_stats *per_session);

#ifdef __cplusplus
}
#endif
#endif
