/* names.c - the one place that knows checkpoint key conventions (timm 1.0, older timm / MS
 * original, Hugging Face legacy and 5.x spellings) and which tensor feeds which swin_weights field.
 * Two tables: REWRITES turns any key into its canonical timm-1.0 name; FIELDS lists, per scope
 * (model / stage / block), the canonical tensors and the swin_weights field each one fills.
 * Test: tests/test_malformed.c (timm and HF layouts of one tiny model load to the same weights).
 */
#include "names.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- key rewriting */
typedef enum { AT_START, ANYWHERE } anchor;
static const struct { anchor at; const char *from, *to; } REWRITES[] = {
    /* Hugging Face (SwinForImageClassification / Swinv2ForImageClassification), prefix removed */
    {AT_START, "embeddings.patch_embeddings.projection.", "patch_embed.proj."},
    {AT_START, "embeddings.norm.", "patch_embed.norm."},
    {AT_START, "embeddings.position_embeddings", "absolute_pos_embed"},
    {AT_START, "encoder.layers.", "layers."},
    {AT_START, "layernorm.", "norm."},
    {AT_START, "classifier.", "head.fc."},
    {ANYWHERE, ".layernorm_before.", ".norm1."},
    {ANYWHERE, ".layernorm_after.", ".norm2."},
    {ANYWHERE, ".attention.self.query.", ".attn.q."},
    {ANYWHERE, ".attention.self.key.", ".attn.k."},
    {ANYWHERE, ".attention.self.value.", ".attn.v."},
    {ANYWHERE, ".attention.self.relative_position_bias_table", ".attn.relative_position_bias_table"},
    {ANYWHERE, ".attention.self.logit_scale", ".attn.logit_scale"},
    {ANYWHERE, ".attention.self.continuous_position_bias_mlp.", ".attn.cpb_mlp."},
    {ANYWHERE, ".attention.output.dense.", ".attn.proj."},
    {ANYWHERE, ".intermediate.dense.", ".mlp.fc1."},
    {ANYWHERE, ".output.dense.", ".mlp.fc2."},
    /* Hugging Face 5.x style spellings */
    {ANYWHERE, ".attention.q_proj.", ".attn.q."},
    {ANYWHERE, ".attention.k_proj.", ".attn.k."},
    {ANYWHERE, ".attention.v_proj.", ".attn.v."},
    {ANYWHERE, ".attention.o_proj.", ".attn.proj."},
    {ANYWHERE, ".attention.relative_position_bias.relative_position_bias_table", ".attn.relative_position_bias_table"},
    {ANYWHERE, ".attention.logit_scale", ".attn.logit_scale"},
    {ANYWHERE, ".attention.cpb_mlp.", ".attn.cpb_mlp."},
    /* timm V2 separate q / v biases (k bias is a zero buffer) */
    {ANYWHERE, ".attn.q_bias", ".attn.q.bias"},
    {ANYWHERE, ".attn.v_bias", ".attn.v.bias"},
    /* older timm / MS original classifier */
    {AT_START, "head.weight", "head.fc.weight"},
    {AT_START, "head.bias", "head.fc.bias"},
};

/* prefixes dropped before rewriting (HF model wrappers, DDP / EMA checkpoints) */
static const char *const PREFIXES[] = {"module.", "model.", "swinv2.", "swin."};

/* buffers that checkpoints may carry; swin recomputes them */
static const char *const BUFFERS[] = {
    "relative_position_index", "relative_coords_table", "attn_mask", "num_batches_tracked", ".attn.k_bias",
};

static void replace(char *s, size_t size, char *at, size_t from_len, const char *to) {
    char tail[512];
    snprintf(tail, sizeof tail, "%s", at + from_len);
    size_t head = (size_t)(at - s);
    snprintf(at, size - head, "%s%s", to, tail);
}

swin_key_kind swin_name_canonical(const char *key, int merge_at_end, char *out, size_t size) {
    for (size_t i = 0; i < sizeof BUFFERS / sizeof BUFFERS[0]; i++)
        if (strstr(key, BUFFERS[i])) {
            snprintf(out, size, "%s", key);
            return SWIN_KEY_BUFFER;
        }
    const char *k = key;
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < sizeof PREFIXES / sizeof PREFIXES[0]; i++) {
            size_t l = strlen(PREFIXES[i]);
            if (!strncmp(k, PREFIXES[i], l)) { k += l; again = 1; }
        }
    }
    snprintf(out, size, "%s", k);
    for (size_t i = 0; i < sizeof REWRITES / sizeof REWRITES[0]; i++) {
        size_t l = strlen(REWRITES[i].from);
        char *at = REWRITES[i].at == AT_START ? (strncmp(out, REWRITES[i].from, l) ? NULL : out)
                                              : strstr(out, REWRITES[i].from);
        if (at) replace(out, size, at, l, REWRITES[i].to);
    }
    /* patch merging at the end of stage S (MS / HF / old timm) is our stage S+1's merge */
    int s = 0, n = 0;
    if (merge_at_end && sscanf(out, "layers.%d.downsample.%n", &s, &n) == 1 && n > 0 && s >= 0 && s < 64) {
        char rest[256];
        snprintf(rest, sizeof rest, "%s", out + n);
        snprintf(out, size, "layers.%d.downsample.%s", s + 1, rest);
    }
    return SWIN_KEY_WEIGHT;
}

int swin_names_hf_layout(const char *const *keys, int n) {
    for (int i = 0; i < n; i++) {
        const char *k = keys[i];
        for (int again = 1; again;) {   /* the wrapper prefixes, as swin_name_canonical drops them */
            again = 0;
            for (size_t j = 0; j < sizeof PREFIXES / sizeof PREFIXES[0]; j++) {
                size_t l = strlen(PREFIXES[j]);
                if (!strncmp(k, PREFIXES[j], l)) { k += l; again = 1; }
            }
        }
        if (!strncmp(k, "embeddings.", 11) || !strncmp(k, "encoder.layers.", 15)) return 1;
    }
    return 0;
}

int swin_names_merge_at_end(const char *const *keys, int n) {
    char c[256];
    for (int i = 0; i < n; i++)
        if (swin_name_canonical(keys[i], 0, c, sizeof c) == SWIN_KEY_WEIGHT && !strncmp(c, "layers.0.downsample.", 20))
            return 1;
    return 0;
}

/* ---- which canonical tensor fills which field */
typedef enum { SC_MODEL, SC_STAGE, SC_BLOCK } scope;
typedef enum {   /* shapes; C = stage dim, Cp = previous stage dim, H = MLP hidden, C0 / Cl first / last */
    SH_C, SH_3C, SH_3C_C, SH_C_C, SH_H, SH_H_C, SH_C_H, SH_TABLE, SH_CPB1_W, SH_CPB1_B, SH_CPB2_W, SH_LOGIT,
    SH_MERGE_NORM, SH_MERGE_RED, SH_PATCH_W, SH_C0, SH_POS, SH_CL, SH_HEAD_W, SH_HEAD_B,
} shape_kind;
enum { V1 = 1, V2 = 2, BOTH = 3 };
enum { ALWAYS = 0, IF_BIAS = 1, IF_APE = 2 };

static const struct {
    scope sc;
    const char *name;      /* canonical, after "layers.S.blocks.B." / "layers.S.downsample." */
    size_t off;            /* offset of the float* in swin_weights / swin_stage_w / swin_block_w */
    shape_kind shape;
    int versions, when, qkv, flat;
} FIELDS[] = {
    {SC_MODEL, "patch_embed.proj.weight", offsetof(swin_weights, patch_embed.w), SH_PATCH_W, BOTH, ALWAYS, 0, 0},
    {SC_MODEL, "patch_embed.proj.bias", offsetof(swin_weights, patch_embed.b), SH_C0, BOTH, ALWAYS, 0, 0},
    {SC_MODEL, "patch_embed.norm.weight", offsetof(swin_weights, patch_norm.w), SH_C0, BOTH, ALWAYS, 0, 0},
    {SC_MODEL, "patch_embed.norm.bias", offsetof(swin_weights, patch_norm.b), SH_C0, BOTH, ALWAYS, 0, 0},
    {SC_MODEL, "absolute_pos_embed", offsetof(swin_weights, abs_pos), SH_POS, BOTH, IF_APE, 0, 1},
    /* stage s > 0: patch merging (V1 norm over 4Cp before the reduction, V2 over 2Cp after) */
    {SC_STAGE, "norm.weight", offsetof(swin_stage_w, merge.norm.w), SH_MERGE_NORM, BOTH, ALWAYS, 0, 0},
    {SC_STAGE, "norm.bias", offsetof(swin_stage_w, merge.norm.b), SH_MERGE_NORM, BOTH, ALWAYS, 0, 0},
    {SC_STAGE, "reduction.weight", offsetof(swin_stage_w, merge.reduction.w), SH_MERGE_RED, BOTH, ALWAYS, 0, 0},
    /* blocks */
    {SC_BLOCK, "norm1.weight", offsetof(swin_block_w, norm1.w), SH_C, BOTH, ALWAYS, 0, 0},
    {SC_BLOCK, "norm1.bias", offsetof(swin_block_w, norm1.b), SH_C, BOTH, ALWAYS, 0, 0},
    {SC_BLOCK, "attn.qkv.weight", offsetof(swin_block_w, qkv.w), SH_3C_C, BOTH, ALWAYS, 1, 0},
    {SC_BLOCK, "attn.qkv.bias", offsetof(swin_block_w, qkv.b), SH_3C, V1, IF_BIAS, 1, 0},
    {SC_BLOCK, "attn.qkv.bias", offsetof(swin_block_w, qkv.b), SH_3C, V2, IF_BIAS, 2, 0},
    {SC_BLOCK, "attn.relative_position_bias_table", offsetof(swin_block_w, rel_table), SH_TABLE, V1, ALWAYS, 0, 0},
    {SC_BLOCK, "attn.cpb_mlp.0.weight", offsetof(swin_block_w, cpb1.w), SH_CPB1_W, V2, ALWAYS, 0, 0},
    {SC_BLOCK, "attn.cpb_mlp.0.bias", offsetof(swin_block_w, cpb1.b), SH_CPB1_B, V2, ALWAYS, 0, 0},
    {SC_BLOCK, "attn.cpb_mlp.2.weight", offsetof(swin_block_w, cpb2.w), SH_CPB2_W, V2, ALWAYS, 0, 0},
    {SC_BLOCK, "attn.logit_scale", offsetof(swin_block_w, logit_scale), SH_LOGIT, V2, ALWAYS, 0, 0},
    {SC_BLOCK, "attn.proj.weight", offsetof(swin_block_w, proj.w), SH_C_C, BOTH, ALWAYS, 0, 0},
    {SC_BLOCK, "attn.proj.bias", offsetof(swin_block_w, proj.b), SH_C, BOTH, ALWAYS, 0, 0},
    {SC_BLOCK, "norm2.weight", offsetof(swin_block_w, norm2.w), SH_C, BOTH, ALWAYS, 0, 0},
    {SC_BLOCK, "norm2.bias", offsetof(swin_block_w, norm2.b), SH_C, BOTH, ALWAYS, 0, 0},
    {SC_BLOCK, "mlp.fc1.weight", offsetof(swin_block_w, fc1.w), SH_H_C, BOTH, ALWAYS, 0, 0},
    {SC_BLOCK, "mlp.fc1.bias", offsetof(swin_block_w, fc1.b), SH_H, BOTH, ALWAYS, 0, 0},
    {SC_BLOCK, "mlp.fc2.weight", offsetof(swin_block_w, fc2.w), SH_C_H, BOTH, ALWAYS, 0, 0},
    {SC_BLOCK, "mlp.fc2.bias", offsetof(swin_block_w, fc2.b), SH_C, BOTH, ALWAYS, 0, 0},
    /* after the last stage */
    {SC_MODEL, "norm.weight", offsetof(swin_weights, norm.w), SH_CL, BOTH, ALWAYS, 0, 0},
    {SC_MODEL, "norm.bias", offsetof(swin_weights, norm.b), SH_CL, BOTH, ALWAYS, 0, 0},
    {SC_MODEL, "head.fc.weight", offsetof(swin_weights, head.w), SH_HEAD_W, BOTH, ALWAYS, 0, 0},
    {SC_MODEL, "head.fc.bias", offsetof(swin_weights, head.b), SH_HEAD_B, BOTH, ALWAYS, 0, 0},
};
#define N_FIELDS (sizeof FIELDS / sizeof FIELDS[0])

static int set_shape(swin_expect *e, const swin_config *c, const swin_weights *w, const swin_stage_w *st,
                     shape_kind k) {
    const swin_stage_w *w0 = &w->stages[0];
    int64_t C = st ? st->dim : 0, Cp = C / 2, H = st ? st->hidden : 0, heads = st ? st->heads : 0;
    int64_t C0 = c->embed_dim, Cl = (int64_t)c->embed_dim << (c->num_stages - 1);
    int64_t L0 = (int64_t)w0->res_h * w0->res_w;                        /* patch grid */
    int64_t Wh = st ? st->win_h : 0, Ww = st ? st->win_w : 0;           /* clamped window */
    int64_t s[4] = {0};
    int rank = 1;
    switch (k) {
    case SH_C: s[0] = C; break;
    case SH_3C: s[0] = 3 * C; break;
    case SH_3C_C: s[0] = 3 * C; s[1] = C; rank = 2; break;
    case SH_C_C: s[0] = C; s[1] = C; rank = 2; break;
    case SH_H: s[0] = H; break;
    case SH_H_C: s[0] = H; s[1] = C; rank = 2; break;
    case SH_C_H: s[0] = C; s[1] = H; rank = 2; break;
    case SH_TABLE: s[0] = (2 * Wh - 1) * (2 * Ww - 1); s[1] = heads; rank = 2; break;
    case SH_CPB1_W: s[0] = 512; s[1] = 2; rank = 2; break;
    case SH_CPB1_B: s[0] = 512; break;
    case SH_CPB2_W: s[0] = heads; s[1] = 512; rank = 2; break;
    case SH_LOGIT: s[0] = heads; s[1] = 1; s[2] = 1; rank = 3; break;
    case SH_MERGE_NORM: s[0] = c->version == 1 ? 4 * Cp : C; break;
    case SH_MERGE_RED: s[0] = C; s[1] = 4 * Cp; rank = 2; break;
    case SH_PATCH_W: s[0] = C0; s[1] = c->in_chans; s[2] = c->patch_size; s[3] = c->patch_size; rank = 4; break;
    case SH_C0: s[0] = C0; break;
    case SH_POS: s[0] = 1; s[1] = L0; s[2] = C0; rank = 3; break;
    case SH_CL: s[0] = Cl; break;
    case SH_HEAD_W: s[0] = c->num_classes; s[1] = Cl; rank = 2; break;
    case SH_HEAD_B: s[0] = c->num_classes; break;
    }
    e->rank = rank;
    memcpy(e->shape, s, sizeof s);
    return rank;
}

static int applies(const swin_config *c, size_t f) {
    if (!(FIELDS[f].versions & (c->version == 2 ? V2 : V1))) return 0;
    if (FIELDS[f].when == IF_BIAS && !c->qkv_bias) return 0;
    if (FIELDS[f].when == IF_APE && !c->ape) return 0;
    return 1;
}

static void add(swin_expect *out, int max, int *n, size_t f, void *base, const swin_config *c, const swin_weights *w,
                const swin_stage_w *st, const char *name) {
    if (out && *n < max) {
        swin_expect *e = &out[*n];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", name);
        e->dst = (float **)((char *)base + FIELDS[f].off);
        e->qkv = FIELDS[f].qkv;
        e->flat = FIELDS[f].flat;
        set_shape(e, c, w, st, FIELDS[f].shape);
    }
    (*n)++;
}

int swin_names_expect(const swin_config *c, swin_weights *w, swin_expect *out, int max) {
    int n = 0;
    char name[96];
    for (size_t f = 0; f < N_FIELDS; f++)   /* model scope, before the stages */
        if (FIELDS[f].sc == SC_MODEL && applies(c, f) && FIELDS[f].shape != SH_CL && FIELDS[f].shape != SH_HEAD_W &&
            FIELDS[f].shape != SH_HEAD_B)
            add(out, max, &n, f, w, c, w, NULL, FIELDS[f].name);
    for (int s = 0; s < c->num_stages; s++) {
        swin_stage_w *st = &w->stages[s];
        for (size_t f = 0; s > 0 && f < N_FIELDS; f++)
            if (FIELDS[f].sc == SC_STAGE && applies(c, f)) {
                snprintf(name, sizeof name, "layers.%d.downsample.%s", s, FIELDS[f].name);
                add(out, max, &n, f, st, c, w, st, name);
            }
        for (int b = 0; b < st->depth; b++)
            for (size_t f = 0; f < N_FIELDS; f++)
                if (FIELDS[f].sc == SC_BLOCK && applies(c, f)) {
                    snprintf(name, sizeof name, "layers.%d.blocks.%d.%s", s, b, FIELDS[f].name);
                    add(out, max, &n, f, st->blocks ? &st->blocks[b] : NULL, c, w, st, name);   /* NULL: counting */
                }
    }
    for (size_t f = 0; f < N_FIELDS; f++)   /* model scope, after the stages */
        if (FIELDS[f].sc == SC_MODEL && applies(c, f) &&
            (FIELDS[f].shape == SH_CL || FIELDS[f].shape == SH_HEAD_W || FIELDS[f].shape == SH_HEAD_B))
            add(out, max, &n, f, w, c, w, NULL, FIELDS[f].name);
    return n;
}
