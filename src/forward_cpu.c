/* forward_cpu.c - the whole Swin V1/V2 model on the CPU: a short loop over stages and blocks,
 * each step one layer function of layers.h (implemented in layers_cpu.c). This is the oracle the
 * CUDA engine is compared with; keep it readable.
 *
 * Scratch (one caller buffer, carved below), sized for the largest stage:
 *   x    [T, C]       the residual stream (T = B * res_h * res_w tokens)
 *   win  [Tp, C]      windows after LN/shift/partition (Tp = B * hp * wp: the grid padded to
 *                     multiples of the window); then the attention output; then LN(x) (V1) or
 *                     the fc2 output (V2)
 *   qkv  [Tp, 3C]     q|k|v per window token; then the proj output
 *   hid  [T, hidden]  the MLP hidden layer; also the im2col patches and the 2x2 merge gather
 *   pool [B, C_last]  the pooled features before the head
 * The GEMMs of the FP8 sites (src/fp8.h: merge reductions, qkv, proj, fc1, fc2) go through
 * site_linear, which records their inputs' max |x| (calibration; qkv_linear also its output's
 * max |y| per channel) or runs them in emulated FP8 when the caller asks (swin_forward_cpu_fp8);
 * otherwise they are plain fp32 linears.
 * Test: tests/test_forward_cpu.c (per-stage features against timm/transformers) and
 * tests/cli_verify.sh (logits of every tests/data/ref_* fixture); tests/test_fp8.c, tests/cli_fp8.sh.
 */
#include <math.h>
#include <string.h>

#include "fp8.h"
#include "internal.h"
#include "layers.h"

typedef struct {
    float *x, *win, *qkv, *hid, *pool;
} cpu_scratch;

/* Carve the regions from base (NULL: only count); returns bytes. */
static size_t carve(const swin_model *m, int B, char *base, cpu_scratch *s) {
    const swin_config *c = &m->cfg;
    size_t x = 0, win = 0, qkv = 0, hid = 0;
    int p = c->patch_size;
    hid = (size_t)B * m->w.stages[0].res_h * m->w.stages[0].res_w * 3 * p * p;   /* im2col patches */
    for (int i = 0; i < c->num_stages; i++) {
        const swin_stage_w *st = &m->w.stages[i];
        size_t T = (size_t)B * st->res_h * st->res_w, Tp = (size_t)B * st->hp * st->wp;   /* padded */
        size_t in_dim = st->has_merge ? (size_t)st->dim / 2 : 0;
        if (T * st->dim > x) x = T * st->dim;
        if (Tp * st->dim > win) win = Tp * st->dim;
        if (3 * Tp * st->dim > qkv) qkv = 3 * Tp * st->dim;
        if (T * st->hidden > hid) hid = T * st->hidden;
        if (T * 4 * in_dim > hid) hid = T * 4 * in_dim;             /* merge gather [T, 4 * C/2] */
    }
    size_t off = 0;
    cpu_scratch t;
    t.x = swin_carve(base, &off, x * sizeof(float));
    t.win = swin_carve(base, &off, win * sizeof(float));
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
    d.res_h = st->res_h;
    d.res_w = st->res_w;
    d.C = st->dim;
    d.heads = st->heads;
    d.head_dim = st->head_dim;
    d.win_h = st->win_h;
    d.win_w = st->win_w;
    d.shift_h = st->blocks[block].shift_h;
    d.shift_w = st->blocks[block].shift_w;
    d.hp = st->hp;
    d.wp = st->wp;
    d.pad_first = m->cfg.family == SWIN_FAMILY_HF;
    d.version = m->cfg.version;
    d.eps = m->cfg.ln_eps;
    return d;
}

size_t swin_forward_cpu_xq_floats(const swin_model *m, int B) {
    size_t most = 0;
    for (int i = 0; i < m->cfg.num_stages; i++) {
        const swin_stage_w *st = &m->w.stages[i];
        size_t T = (size_t)B * st->res_h * st->res_w, Tp = (size_t)B * st->hp * st->wp;
        size_t in[] = {st->has_merge ? T * 4 * m->w.stages[i - 1].dim : 0,   /* reduction */
                       Tp * st->dim, T * st->dim, T * st->hidden};           /* qkv, proj; fc1; fc2 */
        for (int k = 0; k < 4; k++)
            if (in[k] > most) most = in[k];
    }
    return most;
}

// ---- the FP8 sites (fp8.h): every GEMM of a site goes through site_linear, in forward order

typedef struct {
    const swin_fp8_forward *fp8;   /* NULL: plain fp32 */
    int next;                      /* the site the next site_linear call runs */
    int next_out;                  /* the next qkv site's out_off: qkv sites come in site order */
} fp8_sites;

/* fp32 as swin_linear_cpu, recording the input's max |x| when calibrating; or the FP8 GEMM */
static void site_linear(fp8_sites *q, float *out, const float *in, const swin_linear_w *w, const float *residual,
                        int M, int K, int N, swin_act act) {
    const swin_fp8_forward *f = q->fp8;
    int i = q->next++;
    if (f && f->amax) {
        float a = swin_absmax_cpu(in, (size_t)M * K);
        if (a > f->amax[i] || isnan(a)) f->amax[i] = a;   /* a NaN is kept: the scales file refuses it */
    }
    if (f && f->sites) swin_linear_fp8_cpu(out, in, &f->sites[i], residual, M, K, N, act, f->xq);
    else swin_linear_cpu(out, in, w, residual, M, K, N, act);
}

/* a qkv site: site_linear, then its output's max |y| per channel when calibrating (q, k and v's
 * scales), over all M rows, padding windows' included (fp8.h) */
static void qkv_linear(fp8_sites *q, float *out, const float *in, const swin_linear_w *w, int M, int K, int N) {
    site_linear(q, out, in, w, NULL, M, K, N, SWIN_ACT_NONE);
    if (q->fp8 && q->fp8->amax) swin_absmax_cols_cpu(q->fp8->amax + q->next_out, out, M, N);
    q->next_out += N;
}

// ---- one block: x [B, res_h, res_w, C] updated in place; attention over the padded windows
// (Tp tokens, padding included), the MLP over the T image tokens

static void block_v1(const swin_block_w *w, const swin_dims *d, int hidden, cpu_scratch *s, fp8_sites *q) {
    int T = d->B * swin_dims_tokens(d), Tp = d->B * swin_dims_nw(d) * swin_dims_n(d), C = d->C;
    swin_ln_shift_partition_cpu(s->win, s->x, &w->norm1, d);
    qkv_linear(q, s->qkv, s->win, &w->qkv, Tp, C, 3 * C);
    swin_window_attention_cpu(s->win, s->qkv, w->bias_table, w->attn_scale, d);
    site_linear(q, s->qkv, s->win, &w->proj, NULL, Tp, C, C, SWIN_ACT_NONE);
    swin_window_reverse_residual_ln_cpu(s->x, s->win, s->qkv, &w->norm2, d);
    site_linear(q, s->hid, s->win, &w->fc1, NULL, T, C, hidden, SWIN_ACT_GELU);
    site_linear(q, s->x, s->hid, &w->fc2, s->x, T, hidden, C, SWIN_ACT_NONE);
}

static void block_v2(const swin_block_w *w, const swin_dims *d, int hidden, cpu_scratch *s, fp8_sites *q) {
    int T = d->B * swin_dims_tokens(d), Tp = d->B * swin_dims_nw(d) * swin_dims_n(d), C = d->C;
    swin_ln_shift_partition_cpu(s->win, s->x, NULL, d);
    qkv_linear(q, s->qkv, s->win, &w->qkv, Tp, C, 3 * C);
    swin_window_attention_cpu(s->win, s->qkv, w->bias_table, w->attn_scale, d);
    site_linear(q, s->qkv, s->win, &w->proj, NULL, Tp, C, C, SWIN_ACT_NONE);
    swin_window_reverse_residual_cpu(s->x, s->qkv, &w->norm1, d);
    site_linear(q, s->hid, s->x, &w->fc1, NULL, T, C, hidden, SWIN_ACT_GELU);
    site_linear(q, s->win, s->hid, &w->fc2, NULL, T, hidden, C, SWIN_ACT_NONE);
    swin_layernorm_residual_cpu(s->x, s->win, &w->norm2, T, C, d->eps);
}

// ---- the model

void swin_forward_cpu_fp8(float *logits, const float *img, const swin_model *m, int B, float *scratch,
                          float *const *stage_out, const swin_fp8_forward *fp8) {
    const swin_config *c = &m->cfg;
    const swin_weights *w = &m->w;
    cpu_scratch s;
    carve(m, B, (char *)scratch, &s);
    fp8_sites q = {fp8, 0, swin_fp8_sites(m, NULL)};

    // patch embedding: im2col -> linear -> LayerNorm (-> + absolute position)
    const swin_stage_w *first = &w->stages[0];
    int p = c->patch_size, C = c->embed_dim, L = first->res_h * first->res_w;
    swin_im2col_patch_cpu(s.hid, img, B, c->img_h, c->img_w, p, first->res_h, first->res_w);
    swin_linear_cpu(s.x, s.hid, &w->patch_embed, NULL, B * L, 3 * p * p, C, SWIN_ACT_NONE);
    swin_layernorm_cpu(s.x, s.x, &w->patch_norm, B * L, C, c->ln_eps);
    if (w->abs_pos) swin_add_pos_cpu(s.x, w->abs_pos, B, L, C);

    for (int si = 0; si < c->num_stages; si++) {
        const swin_stage_w *st = &w->stages[si];
        if (st->has_merge) {   // V1: gather -> LN(4C) -> reduction; V2: gather -> reduction -> LN(2C)
            const swin_stage_w *prev = &w->stages[si - 1];
            int in_C = prev->dim, T = B * st->res_h * st->res_w;
            swin_merge_gather_cpu(s.hid, s.x, c->version == 1 ? &st->merge.norm : NULL, B, prev->res_h,
                                  prev->res_w, in_C, c->ln_eps);
            site_linear(&q, s.x, s.hid, &st->merge.reduction, NULL, T, 4 * in_C, st->dim, SWIN_ACT_NONE);
            if (c->version == 2) swin_layernorm_cpu(s.x, s.x, &st->merge.norm, T, st->dim, c->ln_eps);
        }
        for (int bi = 0; bi < st->depth; bi++) {
            swin_dims d = swin_block_dims(m, si, bi, B);
            if (c->version == 1) block_v1(&st->blocks[bi], &d, st->hidden, &s, &q);
            else block_v2(&st->blocks[bi], &d, st->hidden, &s, &q);
        }
        if (stage_out && stage_out[si])
            memcpy(stage_out[si], s.x, sizeof(float) * (size_t)B * st->res_h * st->res_w * st->dim);
    }

    // head: LayerNorm -> mean over tokens -> linear
    const swin_stage_w *last = &w->stages[c->num_stages - 1];
    swin_ln_pool_cpu(s.pool, s.x, &w->norm, B, last->res_h * last->res_w, last->dim, c->ln_eps);
    swin_linear_cpu(logits, s.pool, &w->head, NULL, B, last->dim, c->num_classes, SWIN_ACT_NONE);
}

void swin_forward_cpu_stages(float *logits, const float *img, const swin_model *m, int B, float *scratch,
                             float *const *stage_out) {
    swin_forward_cpu_fp8(logits, img, m, B, scratch, stage_out, NULL);
}

void swin_forward_cpu(float *logits, const float *img, const swin_model *m, int B, float *scratch) {
    swin_forward_cpu_stages(logits, img, m, B, scratch, NULL);
}
