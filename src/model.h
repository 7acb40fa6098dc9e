/* model.h - the loaded model: config, labels and weights that mirror the Swin module tree.
 *
 * Conventions (shared by the CPU reference in layers_cpu.c and the CUDA engine):
 *   - activations are token-major: x [B, H, W, C] (H x W the stage's token grid, any aspect);
 *   - linear weights are [out, in] row-major as in PyTorch; y = x W^T + b;
 *   - the patch-embedding conv weight [C, 3, p, p] is used as a linear [C, 3*p*p] over patches;
 *   - the downsample (patch merging) belongs to the stage it starts (timm layout): stage s > 0
 *     begins with merge; stage 0 has none. Checkpoints that put it at the end of stages 0-2
 *     (MS original, HF) are mapped onto this layout by the loader's name table;
 *   - everything is fp32 on the host; F16/BF16 checkpoints are converted on load.
 * All pointers point into model->arena (one allocation, freed with the model).
 */
#ifndef SWIN_MODEL_H
#define SWIN_MODEL_H

#include "swin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    float *w;  /* [C] */
    float *b;  /* [C] */
} swin_ln_w;

typedef struct {
    float *w;  /* [out, in] */
    float *b;  /* [out] or NULL */
} swin_linear_w;

typedef struct {
    int shift_h, shift_w;   /* cyclic shift: window/2 on odd blocks where the grid exceeds the window
                             * (per dimension for timm, both or neither for transformers); else 0 */
    int heads;
    /* V1: pre-attention norm; V2: post-attention norm (res-post-norm).
     * timm: layers.S.blocks.B.norm1  HF: ...layernorm_before */
    swin_ln_w norm1;
    /* timm: attn.qkv.weight [3C, C], attn.qkv.bias [3C] (V1);
     * V2: bias = concat(attn.q_bias, zeros, attn.v_bias); HF: query/key/value concatenated */
    swin_linear_w qkv;
    /* V1 only, timm: attn.relative_position_bias_table [(2Wh-1)*(2Ww-1), heads] (the stage's window) */
    float *rel_table;
    /* V2 only, timm: attn.cpb_mlp.0 [512, 2] + [512], attn.cpb_mlp.2 [heads, 512] (no bias) */
    swin_linear_w cpb1, cpb2;
    /* V2 only, timm: attn.logit_scale [heads, 1, 1] */
    float *logit_scale;
    /* derived at load, used by every backend:
     * bias_table [(2Wh-1)*(2Ww-1), heads]: V1 = rel_table; V2 = 16*sigmoid(cpb_mlp(log-spaced coords)).
     * attn_scale [heads]: V1 = head_dim^-0.5; V2 = exp(min(logit_scale, log 100)). */
    float *bias_table;
    float *attn_scale;
    /* timm: attn.proj [C, C] + [C] */
    swin_linear_w proj;
    /* timm: norm2; V1 pre-MLP norm, V2 post-MLP norm */
    swin_ln_w norm2;
    /* timm: mlp.fc1 [hidden, C] + [hidden], mlp.fc2 [C, hidden] + [C] */
    swin_linear_w fc1, fc2;
} swin_block_w;

typedef struct {
    /* V1: norm over 4C then reduction; V2: reduction then norm over 2C.
     * timm: layers.S.downsample.norm / .reduction [2C, 4C] (no bias) */
    swin_ln_w norm;
    swin_linear_w reduction;
} swin_merge_w;

typedef struct {
    int dim;          /* channels inside this stage (after its merge) */
    int res_h, res_w; /* token grid inside this stage: rows, columns */
    int win_h, win_w; /* window of every block, clamped as the model's library clamps it */
    int hp, wp;       /* the grid padded with zero tokens to multiples of the window */
    int depth, heads, head_dim, hidden; /* hidden = mlp_ratio * dim */
    int has_merge;    /* stage > 0 */
    swin_merge_w merge;
    swin_block_w *blocks;  /* [depth] */
} swin_stage_w;

typedef struct {
    /* timm: patch_embed.proj.weight [C, 3, p, p] (viewed as [C, 3*p*p]) + bias [C] */
    swin_linear_w patch_embed;
    /* timm: patch_embed.norm [C] (always present for Swin) */
    swin_ln_w patch_norm;
    /* timm: absolute_pos_embed [1, H*W, C] or [1, H, W, C]; NULL if absent */
    float *abs_pos;
    swin_stage_w stages[SWIN_MAX_STAGES];
    /* timm: norm [C_last] */
    swin_ln_w norm;
    /* timm: head.fc [classes, C_last] + [classes] (older: head) */
    swin_linear_w head;
} swin_weights;

struct swin_model {
    swin_config cfg;
    swin_weights w;
    char **labels;       /* [num_classes] or NULL; strings live in the arena */
    void *arena;         /* every tensor and string above */
    size_t arena_bytes;
    int64_t n_params;
    char path[1024];
};

/* Derive per-stage / per-block geometry (dims, grid, window, padding, shift) from cfg into w, as
 * the library of cfg->family builds it (model_plan.c says how each one does).
 * Returns SWIN_ERR_CONFIG (with message) for impossible geometry (channels not divisible by heads,
 * an image smaller than a patch) and SWIN_ERR_UNSUPPORTED for what the library itself cannot run
 * (transformers' Swin V1 with a window clamped below the configured one). Per-block fields are
 * filled only where w->stages[s].blocks is already allocated. Used by the loader and by
 * synthetic-model builders (bench, tests). */
swin_status swin_model_plan(const swin_config *cfg, swin_weights *w);

/* 1 when the planned model has the classic geometry everywhere: an image that is a multiple of
 * the patch, square grids that are multiples of square windows, even grids at every merge. There
 * timm and transformers agree and every backend runs it. Otherwise 0 and, when why != NULL, the
 * first place that is not ("stage 3: grid 6x8, window 6x7, padded to 6x14"). */
int swin_model_plain_geometry(const swin_model *m, char *why, size_t size);

/* Fill bias_table and attn_scale for every block from rel_table / cpb / logit_scale. */
void swin_model_derive(swin_model *m);

/* Build a model with random weights for an architecture preset (bench, kernel tests). */
swin_status swin_model_random(const char *arch, uint64_t seed, swin_model **out);
/* The same for any configuration (e.g. a tiny model in a test); unset fields get defaults. */
swin_status swin_model_random_config(const swin_config *cfg, uint64_t seed, swin_model **out);

#ifdef __cplusplus
}
#endif
#endif /* SWIN_MODEL_H */
