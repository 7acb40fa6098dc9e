/* swin.h - Swin Transformer V1/V2 image classification, CPU reference and CUDA engine.
 *
 *   swin_model *model = NULL;
 *   swin_load_options lo = swin_load_options_default();
 *   if (swin_model_load("weights/digits", &lo, &model) != SWIN_OK) {
 *       fprintf(stderr, "error: %s\n", swin_last_error());          // names file, key, shapes
 *       return 2;
 *   }
 *   swin_session_options so = swin_session_options_default();       // cpu, fp32, max_batch 1
 *   swin_session *sess = NULL;
 *   if (swin_session_create(model, &so, &sess) != SWIN_OK) { ... }
 *   swin_forward(sess, pixels, 1, logits);   // pixels [1,3,H,W] normalised, logits [1,classes]
 *   swin_session_free(sess);
 *   swin_model_free(model);
 *
 * Ownership: every *_free releases what the matching *_load / *_create returned. A session
 * borrows its model: free sessions before the model. Buffers passed in stay the caller's.
 * Thread safety: a loaded model is read-only and may be shared by sessions on several threads;
 * one session is used by one thread at a time. swin_last_error() is per thread.
 * The library never exits or aborts on bad input: every entry point returns a swin_status and
 * leaves a message for swin_last_error().
 */
#ifndef SWIN_H
#define SWIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes: one table, generates the enum and swin_status_str() */
#define SWIN_STATUS_MAP(X)                                         \
    X(OK, "ok")                                                    \
    X(ERR_ARGUMENT, "invalid argument")                            \
    X(ERR_IO, "cannot read or write file")                         \
    X(ERR_FORMAT, "malformed file")                                \
    X(ERR_CONFIG, "invalid model configuration")                   \
    X(ERR_TENSOR, "missing or mis-shaped tensor")                  \
    X(ERR_VALUE, "non-finite value")                               \
    X(ERR_UNSUPPORTED, "unsupported")                              \
    X(ERR_MEMORY, "out of memory")                                 \
    X(ERR_IMAGE, "cannot decode image")                            \
    X(ERR_NO_DEVICE, "no usable GPU")                              \
    X(ERR_CUDA, "CUDA error")

typedef enum {
#define SWIN_STATUS_ENUM(name, str) SWIN_##name,
    SWIN_STATUS_MAP(SWIN_STATUS_ENUM)
#undef SWIN_STATUS_ENUM
    SWIN_STATUS_COUNT
} swin_status;

const char *swin_status_str(swin_status s);
/* Message describing the last failure on this thread ("" if none). */
const char *swin_last_error(void);

/* ---- model configuration (read-only view of a loaded model) */
#define SWIN_MAX_STAGES 4

typedef enum { SWIN_PRE_TIMM = 0, SWIN_PRE_HF = 1 } swin_preprocess_style;
/* Whose forward pass a model follows where timm and transformers differ (grids that are not
 * multiples of the window or of the patch, odd grids, non-square inputs): the library that wrote
 * the checkpoint. timm: windows clamped per dimension, roll then pad, patch grid floor(H / p).
 * transformers: one square window, pad then roll, patch grid ceil(H / p) (README: "Input sizes"). */
typedef enum { SWIN_FAMILY_TIMM = 0, SWIN_FAMILY_HF = 1 } swin_family;
typedef enum { SWIN_INTERP_NEAREST = 0, SWIN_INTERP_BILINEAR = 1, SWIN_INTERP_BICUBIC = 2 } swin_interp;
/* Resizing reproduces Image.resize of this Pillow major version unless told otherwise
 * (swin_preprocess_params.pillow). Pillow 13 runs the vertical pass first when the height shrinks
 * more than twice as much as the width; 12 and older always run the horizontal pass first. Both
 * passes round to 8 bits, so on such shapes the two differ by a few levels. */
#define SWIN_PILLOW_DEFAULT 13

typedef struct {
    int version;                          /* 1 (Swin) or 2 (Swin V2) */
    char arch[128];                       /* timm architecture name, or "hf-swin" / "hf-swinv2" */
    int img_h, img_w;                     /* input height and width, pixels */
    swin_family family;                   /* timm or transformers semantics */
    int patch_size, in_chans, embed_dim;
    int num_stages;
    int depths[SWIN_MAX_STAGES];
    int num_heads[SWIN_MAX_STAGES];
    int window_size;                      /* as configured, before clamping to the resolution */
    int pretrained_window_sizes[SWIN_MAX_STAGES]; /* V2 only; 0 = same as window */
    float mlp_ratio;
    int qkv_bias;                         /* 1: q/k/v (V1) or q/v (V2) biases present */
    float ln_eps;
    int ape;                              /* absolute position embedding present */
    int num_classes;
    /* preprocessing, from timm pretrained_cfg / HF preprocessor config */
    swin_preprocess_style pre_style;
    swin_interp interp;
    float crop_pct;                       /* timm: resize shorter side to floor(size/crop_pct) */
    float mean[3], std[3];
} swin_config;

typedef struct swin_model swin_model;
typedef struct swin_session swin_session;

typedef void (*swin_warn_fn)(const char *message, void *user);

typedef struct {
    const char *arch;      /* required when path is a bare .safetensors; else overrides nothing */
    /* Run at this input size instead of the config's (0, 0: the config's), as
     * timm.create_model(..., img_size=(h, w)) or transformers' config image_size would: windows,
     * shifts and padding follow the new grid. Refused (SWIN_ERR_UNSUPPORTED, naming the tensor)
     * where the checkpoint's tensors would have to be resampled: absolute position embeddings of
     * another grid, and V1 relative position tables of another window. */
    int img_h, img_w;
    swin_warn_fn warn;     /* unknown tensors etc.; NULL prints "warning: ..." to stderr */
    void *warn_user;
} swin_load_options;

swin_load_options swin_load_options_default(void);

/* path: a directory holding config.json + model.safetensors (timm or Hugging Face layout),
 * or a .safetensors file (then options->arch names a preset in models/). */
swin_status swin_model_load(const char *path, const swin_load_options *options, swin_model **out);
void swin_model_free(swin_model *model);
const swin_config *swin_model_config(const swin_model *model);
/* Label of class i: from id2label / label_names, or ImageNet-1k names for 1000 classes.
 * Never NULL: falls back to "class_<i>". */
const char *swin_model_label(const swin_model *model, int i);
int64_t swin_model_param_count(const swin_model *model);
/* Multiply-adds x 2 for one image at the model's resolution, in GFLOP. */
double swin_model_gflops(const swin_model *model);

/* ---- execution */
typedef enum { SWIN_DEVICE_CPU = 0, SWIN_DEVICE_CUDA = 1 } swin_device;
/* SWIN_FP8: the linear layers of the blocks and merges in E4M3 with calibrated input scales and
 * per-channel weight scales, and attention's q, k, v stored in E4M3 with calibrated per-channel
 * scales when the scales have them (src/fp8.h), the rest fp16; CUDA on compute capability 8.9 or
 * newer, and on the CPU as an emulation (fp32 arithmetic on E4M3-rounded values). */
typedef enum { SWIN_FP32 = 0, SWIN_TF32 = 1, SWIN_FP16 = 2, SWIN_BF16 = 3, SWIN_FP8 = 4 } swin_precision;
typedef enum { SWIN_ATTN_FUSED = 0, SWIN_ATTN_UNFUSED = 1 } swin_attention;
/* The MLP's fc1 + GELU on the GPU in fp16 / bf16: UNFUSED, cuBLASLt then a separate GELU pass;
 * FUSED, our tensor-core GEMM with the bias and the exact GELU in its epilogue (kernels/gemm_mma.cu,
 * on Hopper kernels/sm90/gemm_wgmma.cu); AUTO (the default), FUSED where the wgmma kernel runs
 * (compute capability 9.0: faster there, README, Performance), else UNFUSED (the mma.sync kernel
 * is slower than cuBLASLt + GELU at large batches). Both stay selectable to be measured. */
typedef enum { SWIN_MLP_FUSED = 0, SWIN_MLP_UNFUSED = 1, SWIN_MLP_AUTO = 2 } swin_mlp;

typedef struct {
    swin_device device;
    int device_index;            /* cuda:N */
    swin_precision precision;    /* CPU: fp32, and fp8 (emulated) */
    swin_attention attention;    /* CUDA only */
    swin_mlp mlp;                /* CUDA only */
    int graphs;                  /* CUDA graphs, 1 = on (default) */
    int max_batch;               /* arena is sized for this */
    int threads;                 /* CPU threads, 0 = all */
    /* SWIN_FP8: the scales file (`swin calibrate`, swin_session_save_scales) giving every FP8 GEMM
     * input its scale (and, version 2, every qkv output channel its own); NULL: the session
     * calibrates itself at creation on random images and warns (through warn) that a file
     * calibrated on real images is better. */
    const char *fp8_scales;
    /* 1: every forward records the largest |value| entering each FP8 GEMM site and leaving each
     * qkv output channel (any precision but fp8; CUDA graphs are not used), for
     * swin_session_save_scales. */
    int calibrate;
    swin_warn_fn warn;           /* NULL prints "warning: ..." to stderr */
    void *warn_user;
} swin_session_options;

swin_session_options swin_session_options_default(void);
/* How many GPUs this process can use (what CUDA_VISIBLE_DEVICES leaves), cuda:0 .. cuda:count-1;
 * SWIN_ERR_NO_DEVICE with the reason (no driver, no GPU, built without CUDA) when none. */
swin_status swin_cuda_device_count(int *count);
swin_status swin_session_create(const swin_model *model, const swin_session_options *options,
                                swin_session **out);
void swin_session_free(swin_session *session);
/* The options the session was created with, and the model it borrows. */
const swin_session_options *swin_session_get_options(const swin_session *session);
const swin_model *swin_session_get_model(const swin_session *session);

/* input: host [batch,3,H,W] fp32, normalised; logits: host [batch,num_classes].
 * 1 <= batch <= max_batch. */
swin_status swin_forward(swin_session *session, const float *input, int batch, float *logits);

/* ---- stage outputs, to find where a model diverges from a reference (`swin verify`) */
/* Shape [batch, H, W, C] of the output of stage `stage` (after its blocks, before the next merge). */
swin_status swin_model_stage_shape(const swin_model *model, int stage, int batch, int64_t shape[4]);
/* swin_forward, and also writes the output of stage s, host fp32 [batch, H, W, C], into
 * stage_out[s] wherever s < num_stages and stage_out[s] != NULL (stage_out may be NULL).
 * The logits are swin_forward's. CUDA: the stage outputs come from one more, un-captured forward
 * (session dtype converted to fp32 on the device, then copied out). */
swin_status swin_forward_stages(swin_session *session, const float *input, int batch, float *logits,
                                float *const *stage_out);

/* Memory plan of the session (regions and bytes), human readable, into buf. */
swin_status swin_session_describe(const swin_session *session, char *buf, size_t size);

const char *swin_precision_str(swin_precision p);
swin_status swin_precision_parse(const char *s, swin_precision *out);

/* ---- FP8 calibration (README: "FP8"). A session created with options.calibrate = 1 records,
 * over all its forwards, the largest |value| entering each FP8 GEMM and leaving each qkv output
 * channel; this writes them as a scales file (version 2): scale = margin * amax / 448 (margin 2:
 * one binade of headroom above the largest value seen). source describes the calibration data
 * ("random", "images DIR"). */
swin_status swin_session_save_scales(const swin_session *session, const char *path, float margin,
                                     const char *source);
/* Images seen by a calibrating session so far. */
int swin_session_calibrated_images(const swin_session *session);

#ifdef __cplusplus
}
#endif
#endif /* SWIN_H */
