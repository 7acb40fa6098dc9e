/* engine.h - the CUDA engine behind a session (src/cuda/engine.c). Internal.
 * A CPU-only build has no engine: session.c reports SWIN_ERR_NO_DEVICE instead. */
#ifndef SWIN_ENGINE_H
#define SWIN_ENGINE_H

#include "model.h"
#include "preprocess.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct swin_engine swin_engine;

/* GPUs the CUDA runtime sees (swin_cuda_device_count) */
swin_status swin_engine_device_count(int *count);
swin_status swin_engine_create(const swin_model *m, const swin_session_options *o, swin_engine **out);
void swin_engine_free(swin_engine *e);
/* host in [B,3,S,S] fp32 -> host logits [B,classes] fp32 */
swin_status swin_engine_forward(swin_engine *e, const float *input, int B, float *logits);
/* One un-captured forward of host input [B,3,S,S] that copies the output of stage s, converted to
 * fp32, into host stage_out[s] [B,H,W,C] wherever stage_out[s] != NULL (swin_forward_stages). */
swin_status swin_engine_forward_stages(swin_engine *e, const float *input, int B, float *const *stage_out);
swin_status swin_engine_describe(const swin_engine *e, char *buf, size_t size);
/* the MLP implementation the engine runs (SWIN_MLP_AUTO resolved at creation) */
swin_mlp swin_engine_mlp(const swin_engine *e);
/* 1 when --mlp changes what runs: fp16 and bf16, and tf32 on Hopper (its fused fc1 is the wgmma
 * kernel's); elsewhere (fp32, fp8, tf32 without wgmma) the engine runs its one MLP, reported as unfused */
int swin_engine_mlp_selectable(const swin_engine *e);
/* 1 when its kernels launch with Programmatic Dependent Launch (by default, SWIN_PDL=0 turns it off, on compute capability
 * 9.0+: kernels/ops.h swin_pdl_enabled, asked at creation) */
int swin_engine_pdl(const swin_engine *e);

/* ---- FP8 (src/fp8.h for the arithmetic; implemented in src/cuda/engine.c and kernels/).
 * An engine created with o->calibrate (any precision but fp8) records, on every forward (never
 * captured), the largest |value| entering each FP8 site and leaving each qkv site per output
 * channel; swin_engine_amax copies them to host amax[n] (n = swin_fp8_scale_count(m), src/fp8.h's
 * layout); they only grow until the engine is freed.
 * An SWIN_FP8 engine quantises its site weights at creation (per output channel) and refuses to
 * run until it has its scales: swin_engine_set_fp8_scales (host scale[n], n as above: each input
 * scale finite > 0; a qkv site's output scales all > 0, then q, k, v are stored in E4M3 where the
 * kernels take the block, or all 0, then they stay fp16).
 * swin_engine_calibrate_forward runs an SWIN_FP8 engine's forward in fp16 with recording (the
 * session's default calibration, before the scales exist); then swin_engine_amax. */
swin_status swin_engine_amax(swin_engine *e, float *amax, int n);
swin_status swin_engine_set_fp8_scales(swin_engine *e, const float *scale, int n);
swin_status swin_engine_calibrate_forward(swin_engine *e, const float *input, int B);
/* SWIN_ERR_UNSUPPORTED naming the GPU unless cuda:index has FP8 tensor cores (8.9 or newer) */
swin_status swin_engine_fp8_device_check(int index);

/* ---- images in (src/cuda/images.c): RGB8 host images -> GPU preprocessing into the input
 * buffer -> forward -> host logits. Bit-identical to the CPU preprocessing. See
 * swin_forward_images in src/image/preprocess.h (the session checks n and p->size first). */
swin_status swin_engine_forward_images(swin_engine *e, const swin_preprocess_params *p,
                                       const swin_image *imgs, int n, float *logits,
                                       swin_images_timing *timing);
/* The same where on_device[i] (NULL: none) says image i's pixels are in device memory (decoded
 * by nvJPEG): those are copied on the device instead of uploaded. */
swin_status swin_engine_forward_images_on(swin_engine *e, const swin_preprocess_params *p,
                                          const swin_image *imgs, const int *on_device, int n, float *logits,
                                          swin_images_timing *timing);
/* ---- asynchronous forwards (src/cuda/async.c), so that a caller works while the GPU runs.
 * begin enqueues everything and returns without waiting for the GPU: the images' upload and GPU
 * preprocessing (begin_images; on_device as above) or the copy of host input [n,3,H,W]
 * (begin_input), then the forward of run_batch rows (0: n; n <= run_batch <= max batch: a
 * short batch can reuse the captured graph of a full one, the extra rows' results are dropped),
 * then the n rows of logits into page-locked staging. end waits without spinning a core, copies
 * them into `logits` and fills timing (may be NULL). One forward in flight per engine: between
 * begin and end the caller keeps the pixels / input and `logits` and calls nothing else on the
 * engine. A begin that fails leaves nothing in flight. */
swin_status swin_engine_begin_images(swin_engine *e, const swin_preprocess_params *p, const swin_image *imgs,
                                     const int *on_device, int n, int run_batch, float *logits);
swin_status swin_engine_begin_input(swin_engine *e, const float *input, int n, int run_batch, float *logits);
swin_status swin_engine_end(swin_engine *e, swin_images_timing *timing);
/* The GPU preprocessing alone, for tests and tools: n host images -> out [n, 3, p->size, p->size]
 * fp32 in device memory (the caller's buffer; any size, any n up to 65536), synchronised on return. */
swin_status swin_engine_preprocess_images(swin_engine *e, const swin_preprocess_params *p,
                                          const swin_image *imgs, int n, float *out_dev);
/* The same for pixels already on the device (a GPU decoder's output): imgs[i].rgb are device
 * pointers to [height, width, 3] inside src [src_bytes]; nothing is uploaded but the plan. */
swin_status swin_engine_preprocess_device(swin_engine *e, const swin_preprocess_params *p, const uint8_t *src,
                                          size_t src_bytes, const swin_image *imgs, int n, float *out_dev);
/* Test hook (tests/test_gpu_memory.c): when set to N > 0, the Nth device or page-locked
 * allocation the engine makes from then on fails as if memory had run out (1: the next one), and
 * the hook resets to 0. Process-wide and not thread-safe: for tests only. */
extern int swin_cuda_fail_alloc_at;
/* Page-locked host memory (cudaHostAlloc), NULL on failure. */
void *swin_engine_host_alloc(swin_engine *e, size_t bytes);
void swin_engine_host_free(swin_engine *e, void *ptr);

/* ---- for `swin bench` (src/cli/cmd_bench.c): timing on device-resident input.
 * Every timer uses CUDA events on the engine's stream; nothing here asserts on times. */
typedef enum {
    SWIN_OPS_GEMM = 0,       /* every linear layer */
    SWIN_OPS_ATTENTION,      /* window attention */
    SWIN_OPS_NORM,           /* layernorms, shift/partition/reverse, merge gather, pooling */
    SWIN_OPS_OTHER,          /* GELU, im2col, position embedding, logit conversion */
    SWIN_OPS_COUNT
} swin_op_class;

#define SWIN_PROFILE_MAX_OPS 40

typedef struct {
    const char *name;        /* e.g. "qkv", "attention", "gelu" */
    swin_op_class cls;
    int calls;               /* per forward */
    double ms;               /* per forward, all calls */
    double stage_ms[SWIN_MAX_STAGES];
} swin_op_time;

typedef struct {
    double class_ms[SWIN_OPS_COUNT];
    double stage_ms[SWIN_MAX_STAGES];  /* stage 0 includes the patch embedding, the last the head */
    double total_ms;
    swin_op_time ops[SWIN_PROFILE_MAX_OPS];   /* by name, in order of first appearance */
    int n_ops;
} swin_engine_profile;

/* GPU name, driver and runtime versions (e.g. 13000) of cuda:index. */
swin_status swin_cuda_device_info(int index, char *name, size_t size, int *driver, int *runtime);
/* Copy host input [B,3,S,S] fp32 into the engine's device input buffer (synchronous). */
swin_status swin_engine_set_input(swin_engine *e, const float *input, int B);
/* `warmup` untimed then `iters` timed forwards of batch B on that input (graphs as configured);
 * ms[iters] receives each iteration's event time. */
swin_status swin_engine_time_forward(swin_engine *e, int B, int warmup, int iters, float *ms);
/* The same for the attention ops of all blocks alone (the engine's attention implementation). */
swin_status swin_engine_time_attention(swin_engine *e, int B, int warmup, int iters, float *ms);
/* Per op class and per stage times of un-captured forwards (events around every op), averaged
 * over `passes`. */
swin_status swin_engine_profile_forward(swin_engine *e, int B, int passes, swin_engine_profile *out);

#ifdef __cplusplus
}
#endif
#endif
