/* names.h - checkpoint key conventions mapped onto swin_weights (see names.c for the table).
 *
 * Every key of a checkpoint is first rewritten to its canonical (timm 1.0) name, e.g.
 *   swin.encoder.layers.0.blocks.1.layernorm_before.weight -> layers.0.blocks.1.norm1.weight
 *   layers.0.downsample.reduction.weight (MS/HF/old timm)  -> layers.1.downsample.reduction.weight
 *   classifier.weight / head.weight                         -> head.fc.weight
 * Split q/k/v projections keep their part: attention.self.query.weight -> attn.q.weight,
 * timm V2 attn.q_bias -> attn.q.bias. The loader then asks for the tensors that
 * swin_names_expect() lists for a configuration, assembling attn.qkv.* from parts when needed.
 * Test: tests/test_malformed.c loads the same tiny model written in timm and HF layouts.
 */
#ifndef SWIN_NAMES_H
#define SWIN_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

typedef enum {
    SWIN_KEY_WEIGHT = 0,   /* canonical name written to out */
    SWIN_KEY_BUFFER = 1,   /* a buffer swin recomputes (relative_position_index, attn_mask, ...) */
} swin_key_kind;

/* Rewrite checkpoint key into its canonical name. merge_at_end: the checkpoint puts the patch
 * merging at the end of stages 0..n-2 (detected by swin_names_merge_at_end). */
swin_key_kind swin_name_canonical(const char *key, int merge_at_end, char *out, size_t size);
/* 1 if any key names layers.0.downsample (after canonical prefix rewriting): MS/HF/old timm. */
int swin_names_merge_at_end(const char *const *keys, int n);
/* 1 if the keys are transformers' (embeddings.*, encoder.layers.*, under any wrapper prefix). */
int swin_names_hf_layout(const char *const *keys, int n);

/* One tensor the model needs. */
typedef struct {
    char name[96];          /* canonical name, e.g. layers.1.blocks.0.attn.qkv.weight */
    float **dst;            /* where the arena pointer goes */
    int rank;
    int64_t shape[4];
    int qkv;                /* 1: may come as q/k/v parts (rows [C] each); 2: the same, k part may
                             * be absent (V2 bias: zeros) */
    int flat;               /* 1: any shape with the same element count is accepted (abs_pos) */
} swin_expect;

/* List the tensors of cfg into out[max] (out may be NULL to count); w must be planned
 * (swin_model_plan) and, when out != NULL, its stage blocks allocated. Returns the count. */
int swin_names_expect(const swin_config *cfg, swin_weights *w, swin_expect *out, int max);

/* Plan m->cfg (finished) into m->w and carve one arena for the block arrays, every tensor,
 * the derived tables and n_labels label slots (m->labels, strings copied by the caller into
 * the arena tail via *label_space of label_bytes). *ex / *n_ex receive the expected tensors
 * (heap, caller frees) with dst pointers already set into the arena. Used by the loader and
 * swin_model_random. */
swin_status swin_model_alloc(swin_model *m, int n_labels, size_t label_bytes, char **label_space,
                             swin_expect **ex, int *n_ex);

#endif
