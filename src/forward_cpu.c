/* forward_cpu.c - the whole Swin V1/V2 model on the CPU: a short loop over stages and blocks,
 * each step one layer function of layers.h (implemented in layers_cpu.c). This is the oracle the
 * CUDA engine is compared with; keep it readable.
 *
 * Scratch (one caller buffer, carved below), sized for the largest stage:
 *   x    [T, C]       the residual stream (T = B * res * res tokens)
 *   win  [T, C]       windows after LN/shift/partition; then the attention output; then LN(x)
 *                     (V1) or the fc2 output (V2)
 *   qkv  [T, 3C]      q|k|v per token; then the proj output
 *   hid  [T, hidden]  the MLP hidden layer; also the im2col patches and the 2x2 merge gather
 *   pool [B, C_last]  the pooled features before the head
 * Test: tests/test_forward_cpu.c (per-stage features against timm/transformers) and
 * tests/cli_verify.sh (logits of every tests/data/ref_* fixture).
 */
#include <string.h>

#include "internal.h"
#include "layers.h"

typedef struct {
    float *x, *win, *qkv, *hid, *pool;
} cpu_scratch;

/* Carve the regions from base (NULL: only count); returns bytes. */
static size_t carve(const swin_model *m, int B, char *base, cpu_scratch *s) {
    const swin_config *c = &m->cfg;
    size_t x = 0, qkv = 0, hid = 0;
    int p = c->patch_size, res0 = c->img_size / p;
    hid = (size_t)B * res0 * res0 * 3 * p * p;                       /* im2col patches */
    for (int i = 0; i < c->num_stages; i++) {
        const swin_stage_w *st = &m->w.stages[i];
        size_t T = (size_t)B * st->res * st->res;
        size_t in_tokens = st->has_merge ? T * 4 : T, in_dim = st->has_merge ? (size_t)st->dim / 2 : 0;
        if (T * st->dim > x) x = T * st->dim;
        if (3 * T * st->dim > qkv) qkv = 3 * T * st->dim;
        if (T * st->hidden > hid) hid = T * st->hidden;
        if (in_tokens * in_dim > hid) hid = in_tokens * in_dim;       /* merge gather [T, 4 * C/2] */
    }
    size_t off = 0;
    cpu_scratch t;
    t.x = swin_carve(base, &off, x * sizeof(float));
    t.win = swin_carve(base, &off, x * sizeof(float));
    t.qkv = swin_carve(base, &off, qkv * sizeof(float));
    t.hid = swin_carve(base, &off, hid * sizeof(float));
    t.pool = swin_carve(base, &off, (size_t)B * (c->embed_dim << (c->num_stages - 1)) * sizeof(float));
    if (s) *s = t;
    return off + 256;
}

size_t swin_forward_cpu_scratch(const swin_model *m, int B) {
    return (carve(m, B, NULL, NULL) + sizeof(float) - 1) / sizeof(float);
}

swin_dims swin_block_dims(const swin_model *m, int stage, int block, int B) {
    const swin_stage_w *st = &m->w.stages[stage];
    swin_dims d;
    d.B = B;
    d.res = st->res;
    d.C = st->dim;
    d.heads = st->heads;
    d.head_dim = st->head_dim;
    d.window = st->blocks[block].window;
    d.shift = st->blocks[block].shift;
    d.version = m->cfg.version;
    d.eps = m->cfg.ln_eps;
    return d;
}

// ---- one block: x [B, res, res, C] updated in place

static void block_v1(const swin_block_w *w, const swin_dims *d, int hidden, cpu_scratch *s) {
    int T = d->B * d->res * d->res, C = d->C;
    swin_ln_shift_partition_cpu(s->win, s->x, &w->norm1, d);
    swin_linear_cpu(s->qkv, s->win, &w->qkv, NULL, T, C, 3 * C, SWIN_ACT_NONE);
    swin_window_attention_cpu(s->win, s->qkv, w->bias_table, w->attn_scale, d);
    swin_linear_cpu(s->qkv, s->win, &w->proj, NULL, T, C, C, SWIN_ACT_NONE);
    swin_window_reverse_residual_ln_cpu(s->x, s->win, s->qkv, &w->norm2, d);
    swin_linear_cpu(s->hid, s->win, &w->fc1, NULL, T, C, hidden, SWIN_ACT_GELU);
    swin_linear_cpu(s->x, s->hid, &w->fc2, s->x, T, hidden, C, SWIN_ACT_NONE);
}

static void block_v2(const swin_block_w *w, const swin_dims *d, int hidden, cpu_scratch *s) {
    int T = d->B * d->res * d->res, C = d->C;
    swin_ln_shift_partition_cpu(s->win, s->x, NULL, d);
    swin_linear_cpu(s->qkv, s->win, &w->qkv, NULL, T, C, 3 * C, SWIN_ACT_NONE);
    swin_window_attention_cpu(s->win, s->qkv, w->bias_table, w->attn_scale, d);
    swin_linear_cpu(s->qkv, s->win, &w->proj, NULL, T, C, C, SWIN_ACT_NONE);
    swin_window_reverse_residual_cpu(s->x, s->qkv, &w->norm1, d);
    swin_linear_cpu(s->hid, s->x, &w->fc1, NULL, T, C, hidden, SWIN_ACT_GELU);
    swin_linear_cpu(s->win, s->hid, &w->fc2, NULL, T, hidden, C, SWIN_ACT_NONE);
    swin_layernorm_residual_cpu(s->x, s->win, &w->norm2, T, C, d->eps);
}

// ---- the model

void swin_forward_cpu_stages(float *logits, const float *img, const swin_model *m, int B, float *scratch,
                             float *const *stage_out) {
    const swin_config *c = &m->cfg;
    const swin_weights *w = &m->w;
    cpu_scratch s;
    carve(m, B, (char *)scratch, &s);

    // patch embedding: im2col -> linear -> LayerNorm (-> + absolute position)
    int p = c->patch_size, res = c->img_size / p, C = c->embed_dim, L = res * res;
    swin_im2col_patch_cpu(s.hid, img, B, c->img_size, c->img_size, p);
    swin_linear_cpu(s.x, s.hid, &w->patch_embed, NULL, B * L, 3 * p * p, C, SWIN_ACT_NONE);
    swin_layernorm_cpu(s.x, s.x, &w->patch_norm, B * L, C, c->ln_eps);
    if (w->abs_pos) swin_add_pos_cpu(s.x, w->abs_pos, B, L, C);

    for (int si = 0; si < c->num_stages; si++) {
        const swin_stage_w *st = &w->stages[si];
        if (st->has_merge) {   // V1: gather -> LN(4C) -> reduction; V2: gather -> reduction -> LN(2C)
            int in_res = st->res * 2, in_C = st->dim / 2, T = B * st->res * st->res;
            swin_merge_gather_cpu(s.hid, s.x, c->version == 1 ? &st->merge.norm : NULL, B, in_res, in_C,
                                  c->ln_eps);
            swin_linear_cpu(s.x, s.hid, &st->merge.reduction, NULL, T, 4 * in_C, st->dim, SWIN_ACT_NONE);
            if (c->version == 2) swin_layernorm_cpu(s.x, s.x, &st->merge.norm, T, st->dim, c->ln_eps);
        }
        for (int bi = 0; bi < st->depth; bi++) {
            swin_dims d = swin_block_dims(m, si, bi, B);
            if (c->version == 1) block_v1(&st->blocks[bi], &d, st->hidden, &s);
            else block_v2(&st->blocks[bi], &d, st->hidden, &s);
        }
        if (stage_out && stage_out[si])
            memcpy(stage_out[si], s.x, sizeof(float) * (size_t)B * st->res * st->res * st->dim);
    }

    // head: LayerNorm -> mean over tokens -> linear
    const swin_stage_w *last = &w->stages[c->num_stages - 1];
    swin_ln_pool_cpu(s.pool, s.x, &w->norm, B, last->res * last->res, last->dim, c->ln_eps);
    swin_linear_cpu(logits, s.pool, &w->head, NULL, B, last->dim, c->num_classes, SWIN_ACT_NONE);
}

void swin_forward_cpu(float *logits, const float *img, const swin_model *m, int B, float *scratch) {
    swin_forward_cpu_stages(logits, img, m, B, scratch, NULL);
}
