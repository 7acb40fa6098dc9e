/* arena.h - the CUDA engine's state and its one device arena (src/cuda/arena.c, engine.c).
 *
 * One cudaMalloc per session, sized from the config and max_batch, carved once:
 *   weights      linear weights/biases and the absolute position embedding in the session dtype;
 *                LayerNorm parameters, attention bias tables and scales in fp32
 *   activations  x[2] (ping-pong stage buffers: the residual stream), tok (windows, norms,
 *                merge gather), qkv, hid (MLP hidden, patch columns, projections)
 *   head         pooled features, logits in the session dtype
 *   workspaces   cuBLASLt workspace, unfused-attention workspace
 *   io           input [B,3,S,S] fp32, logits [B,classes] fp32
 * While the weights are uploaded the activation region doubles as the fp32 staging buffer of the
 * dtype conversion (it is sized to hold the largest tensor).
 * Internal to src/cuda/.
 */
#ifndef SWIN_CUDA_ARENA_H
#define SWIN_CUDA_ARENA_H

#include <cuda_runtime_api.h>

#include "check.h"
#include "engine.h"
#include "gemm.h"
#include "internal.h"
#include "layers.h"
#include "ops.h"

/* ---- device copies of the weights (pointers into the arena) */
typedef struct { const float *w, *b; } swin_dln;   /* fp32 [C] each */
typedef struct {
    const void *w, *b;   /* dt [N, K] and dt [N] or NULL */
    /* FP8 sites (src/fp8.h): the site's number, -1 for the patch embedding and the head */
    int site, K, N;
    uint8_t *q;          /* fp8 engines: E4M3 weights [N, K] */
    float *ws, *wsx;     /* [N]: per-channel weight scales, and ws times the input scale */
    void *deq;           /* dt [N, K] = q * ws, where cuBLASLt cannot run the shape in FP8 (K or N
                          * not a multiple of 16): the GEMM runs in 16 bits on E4M3 values */
    /* attn.qkv: its output channels' entries in a scale / amax array start at n_sites + out_rel
     * (src/fp8.h out_off; -1: not a qkv site). fp8 engines: q8_out when the scales give them
     * (swin_engine_set_fp8_scales), and then the GEMM writes q, k, v in E4M3 with oq_cs [N] and
     * oq_b [N] (fp16): the column scales and bias with the output scales' inverses folded in; the
     * attention reads oq_deq [N], the output scales (fp8.h swin_fp8_qkv_scales; kernels/fp8.cu
     * swin_fp8_fold_out_cuda) */
    int out_rel, q8_out, out_hd;   /* out_hd: qkv's head_dim (fp8.h swin_fp8_qkv_scales) */
    float *oq_cs, *oq_deq;
    void *oq_b;
} swin_dlin;

/* fc1 with norm2 folded in (V1 on Hopper, fp16 / bf16: ops.h swin_ln_fold_weights_cuda), or NULLs */
typedef struct {
    const void *w;               /* dt [hidden, C] = fc1 diag(gamma) */
    const float *colsum, *b;     /* fp32 [hidden]: w's row sums, fc1's bias + fc1 beta */
} swin_dfold;

typedef struct {
    swin_dln norm1, norm2;
    swin_dlin qkv, proj, fc1, fc2;
    swin_dfold fc1_ln;
    const float *bias_table;   /* [(2Wh-1)*(2Ww-1), heads] */
    const float *attn_scale;   /* [heads] */
} swin_dblock;

typedef struct {
    swin_dln norm;     /* merge norm: V1 over 4C, V2 over 2C */
    swin_dlin red;     /* merge reduction [2C, 4C], no bias */
    swin_dblock *blocks;   /* host array [depth] */
} swin_dstage;

typedef struct {
    swin_dlin patch;
    swin_dln patch_norm;
    const void *abs_pos;   /* [L0, C0] dt, or NULL */
    swin_dstage st[SWIN_MAX_STAGES];
    swin_dln norm;
    swin_dlin head;
} swin_dweights;

/* ---- regions of the plan, in carving order (names printed by describe) */
typedef enum {
    REG_WEIGHTS_DT, REG_WEIGHTS_F32, REG_X, REG_TOK, REG_QKV, REG_HID, REG_LN, REG_HEAD,
    REG_GEMM_WS, REG_ATTN_WS, REG_IO, REG_FP8, REG_COUNT
} swin_region_id;

/* per-op event marks of a profiled forward */
typedef struct {
    cudaEvent_t *ev;        /* [cap + 1] */
    unsigned char *cls;     /* [cap] swin_op_class of op i */
    signed char *stage;     /* [cap] */
    const char **name;      /* [cap] the op's name (a string literal) */
    int n, cap;
} swin_prof;

/* one asynchronous forward in flight (async.c): swin_engine_begin_* enqueue it, swin_engine_end
 * waits for it */
typedef struct {
    int active;
    int n;                      /* logit rows to hand back */
    float *out;                 /* the caller's logits [n, classes] */
    cudaEvent_t ev[4];          /* before the upload, after it, after preprocessing, done */
    float *logits_host;         /* page-locked [max_batch, classes]: the device copies land here */
} swin_async;

struct swin_engine {
    const swin_model *m;
    swin_session_options opt;
    swin_dtype dt;
    int dev;
    cudaStream_t stream;
    swin_gemm *gemm;
    int owns_stream;

    /* the arena */
    char *arena;
    size_t arena_bytes;
    size_t region[REG_COUNT];   /* bytes per region, alignment included */
    size_t n_dt, n_f32;         /* weight elements by storage type */
    size_t staging_elems;       /* largest weight tensor: the conversion staging size */

    swin_dweights w;
    void *x[2], *tok, *qkv, *hid, *pooled, *logits_dt;
    /* V1's norm2 folded into proj and fc1 (engine.c block_v1, decided at setup): the tokens'
     * partial LayerNorm statistics proj writes and fc1 reads, [ceil(C / 128), T] float pairs */
    int ln_fold;
    float *ln_part;
    /* the qkv GEMM inside the attention kernel (engine.c qkv_attention; set up from SWIN_ATTN_QKV):
     * 0 never, 1 where it pays (C <= 128, wider in one wave), 2 wherever the kernel takes the block */
    int attn_qkv;
    /* where it is, the window partition (V1: with norm1) inside that kernel too, reading the image
     * (engine.c partition_qkv_attention): V2 by default, V1 with SWIN_ATTN_GATHER=1, never with =0 */
    int attn_gather;
    /* and proj, the window reverse, the residual and the LayerNorm beside it in that kernel's
     * epilogue (engine.c attn_proj; SWIN_ATTN_PROJ): 0 never, 1 where each cluster takes one
     * window, 2 wherever the kernel takes the block */
    int attn_proj;
    /* V2's norm2 and residual in fc2's epilogue (engine.c fc2_post_ln; set up from SWIN_FC2_POST_LN
     * on Hopper in fp16 / bf16 / fp8): 0 never, 1 wherever the kernel takes the layer, 2 where the
     * TMA GEMM takes one of that size */
    int post_ln;
    void *gemm_ws, *attn_ws;
    size_t gemm_ws_bytes, attn_ws_bytes;
    float *input, *logits;      /* io, fp32 */

    /* CUDA graphs: one exec per batch size, [max_batch + 1], NULL until captured */
    cudaGraphExec_t *graphs;

    swin_prof *prof;            /* non-NULL only inside swin_engine_profile_forward */
    int cur_stage;              /* stage being enqueued, for the profile */
    float *const *stage_out;    /* host fp32 [B,H,W,C] per stage; non-NULL only inside
                                   swin_engine_forward_stages (never captured) */

    /* FP8 (fp8.c): sites in forward order; amax [n_sites + n_out_ch] device (calibration: the sites'
     * inputs, then the qkv sites' output channels); fp8 engines: the
     * quantised GEMM input q8 (E4M3 bytes, or dt elements for 16-bit sites), ones [rows] (the
     * input's cuBLASLt scale vector: the input scale is folded into wsx), host scales */
    int fp8, n_sites, fp8_emulated;   /* fp8_emulated: sites that run on E4M3 values in 16 bits */
    int n_out_ch;               /* the qkv sites' output channels: amax and the scales have n_sites +
                                   n_out_ch entries (src/fp8.h swin_fp8_scale_count) */
    swin_dlin **sites;          /* host [n_sites] */
    float *amax, *ones;
    size_t n_ones;              /* rows of ones: the most any site's GEMM has */
    void *q8;
    size_t n_fp8_bytes;         /* E4M3 weights and channel scales */
    int recording;              /* lin() raises amax[site] to its input's max |x| */
    int wgmma;                  /* the GPU runs kernels/sm90/ (swin_gemm_wgmma_available, at setup) */
    int sms;                    /* the GPU's multiprocessors (at setup) */
    int pdl;                    /* the ops launch with PDL here (swin_pdl_enabled, at setup) */
    int calib_forward;          /* an fp8 engine's forward in fp16 (its own calibration) */
    float *scale;               /* host [n_sites + n_out_ch] (the qkv channels' as used: fp8.h
                                   swin_fp8_qkv_scales); NULL until swin_engine_set_fp8_scales */

    struct swin_pre_state *pre; /* GPU preprocessing scratch (images.c), NULL until first used */
    swin_async async;           /* async.c; its events and buffer are made on first use */
};

/* Size (base == NULL) or place (base != NULL) every region; fills e->region, the pointers and
 * *total. Deterministic: the same offsets both times. Host arithmetic only. */
swin_status swin_arena_plan(swin_engine *e, char *base, size_t *total);
/* Device memory a session needs beyond its arena: the cuBLAS(Lt) handles and the workspaces they
 * take for themselves, CUDA graphs, kernel modules loaded on first use. A session is refused
 * (SWIN_ERR_MEMORY) when its arena and this headroom do not fit in the device's free memory. */
#define SWIN_GPU_HEADROOM_BYTES ((size_t)64 << 20)
/* The plan of e (after swin_arena_plan) in one phrase: "batch B in P needs X (weights ..,
 * activations .., workspaces .., input/output .., headroom .. for cuBLAS and CUDA graphs)". */
void swin_arena_summary(const swin_engine *e, size_t total, char *buf, size_t size);
/* The largest max batch (1 to 65536) whose arena and headroom fit in `bytes`; 0 when none does. */
int swin_arena_max_batch(const swin_engine *e, size_t bytes);
/* Every device and page-locked allocation of the engine (arena, preprocessing scratch, pinned
 * image buffers) goes through here, so that a test can make the Nth one fail
 * (swin_cuda_fail_alloc_at, engine.h). */
cudaError_t swin_cuda_alloc(void **p, size_t bytes, int host);
/* Upload and convert every weight tensor into the placed arena (synchronises the stream). */
swin_status swin_arena_upload(swin_engine *e);
/* Enqueue work on e->stream, input and logits on the device (engine.c):
 * one forward, captured/replayed per e->opt.graphs; one forward without graphs (profiled when
 * e->prof is set); the attention ops of every block alone. */
swin_status swin_engine_enqueue(swin_engine *e, int B);
swin_status swin_engine_enqueue_direct(swin_engine *e, int B);
swin_status swin_engine_enqueue_attention(swin_engine *e, int B);
/* The forward of batch B from e->input (already written, or enqueued on e->stream) to host logits:
 * enqueue it and the logits copy, record `done` when not NULL, synchronise (engine.c). */
swin_status swin_engine_forward_device(swin_engine *e, int B, float *logits, cudaEvent_t done);
/* Release the GPU preprocessing scratch (images.c); called by swin_engine_free. */
void swin_engine_images_free(swin_engine *e);
/* Check n images and p against the engine and enqueue their upload and GPU preprocessing into
 * e->input (images.c); ev (3 events, optional) is recorded before the upload, after it and after
 * the kernels. On failure the stream may hold part of it: the caller synchronises. */
swin_status swin_engine_enqueue_images(swin_engine *e, const swin_preprocess_params *p, const swin_image *imgs,
                                       const int *on_device, int n, cudaEvent_t *ev);
/* Release the async state (async.c); called by swin_engine_free. */
void swin_engine_async_free(swin_engine *e);
/* FP8 (fp8.c): quantise site w's input in [M, K] into e->q8 (after the exact GELU when gelu),
 * as E4M3 bytes for the FP8 GEMM or as E4M3 values in dt for the emulated one; then its GEMM
 * from e->q8 into out [M, N] (+ residual). */
swin_status swin_engine_quantize(swin_engine *e, const void *in, const swin_dlin *w, int M, int gelu);
swin_status swin_engine_lin_q(swin_engine *e, void *out, const swin_dlin *w, const void *residual, int M);
/* 1 when site w runs in FP8 in this forward (an fp8 engine, not calibrating itself) */
static inline int swin_engine_fp8_site(const swin_engine *e, const swin_dlin *w) {
    return e->fp8 && !e->calib_forward && w->site >= 0;
}
/* FP8 site w runs on cuBLASLt's FP8 tensor cores (else in 16 bits on E4M3 values) */
static inline int swin_dlin_fp8_gemm(const swin_dlin *w) { return w->K % 16 == 0 && w->N % 16 == 0; }
/* Human-readable plan. */
void swin_arena_describe(const swin_engine *e, char *buf, size_t size);

static inline swin_dtype swin_precision_dtype(swin_precision p) {
    return p == SWIN_FP16 || p == SWIN_FP8 ? SWIN_DT_F16 : p == SWIN_BF16 ? SWIN_DT_BF16 : SWIN_DT_F32;
}

#endif
