/* model_plan.c - model geometry (swin_model_plan), the one-arena layout (swin_model_alloc),
 * derived attention tables (swin_model_derive) and random-weight models (swin_model_random).
 *
 * Geometry, as each library builds it (stage s has dim embed*2^s; ws = the configured window):
 *   patch grid  timm: floor(H/p) x floor(W/p) (the conv drops the remainder);
 *               transformers: ceil(H/p) x ceil(W/p) (maybe_pad pads the image with zeros)
 *   merges      both: ceil(h/2) x ceil(w/2) (an odd grid is padded with a zero row / column)
 *   windows     timm (_calc_window_shift): per dimension, window = min(res, ws) and the odd blocks'
 *               shift ws/2 where res > ws, else 0: a 6x8 grid with ws 7 has 6x7 windows, shift (0, 3).
 *               transformers Swin (set_shift_and_window_size, at run time): one square window,
 *               min(h, w) and no shift when min(h, w) <= ws, else ws and shift ws/2. Its relative
 *               position table is always sized for ws, so a window clamped below ws fails inside
 *               transformers: refused here.
 *               transformers Swinv2 (_compute_window_shift, in the constructor): from the height of
 *               the grid its config image size gives, floor(floor(H/p) / 2^s) = r: a square window
 *               min(r, ws), shift ws/2 where r > ws.
 *   padding     the grid padded with zero tokens up to multiples of the window (both), in the
 *               order of swin_dims.pad_first.
 * The classic geometry (a multiple of the patch, square grids that are multiples of square
 * windows, even at every merge) comes out the same in both: swin_model_plain_geometry.
 * Test: tests/test_malformed.c (tiny models), tests/cli_info.sh (windows printed per stage),
 * tests/test_forward_cpu.c (every tests/data/ref_* fixture, non-square and padded ones included).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "internal.h"
#include "layers.h"
#include "names.h"

static int ceil_div(int a, int b) { return (a + b - 1) / b; }
static int min_i(int a, int b) { return a < b ? a : b; }

/* window and the odd blocks' shift of stage s with grid h x w (see the header) */
static swin_status stage_window(const swin_config *c, int s, swin_stage_w *st) {
    int ws = c->window_size, h = st->res_h, w = st->res_w;
    if (c->family == SWIN_FAMILY_TIMM) {
        st->win_h = min_i(h, ws);
        st->win_w = min_i(w, ws);
        return SWIN_OK;
    }
    if (c->version == 1) {
        int m = min_i(h, w);
        st->win_h = st->win_w = min_i(m, ws);
        if (m < ws)
            return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: stage %d grid %dx%d clamps the window to %d, below the "
                             "configured %d; transformers' Swin keeps its relative position table at %dx%d and "
                             "fails on this input too", c->arch, s, h, w, m, ws, 2 * ws - 1, 2 * ws - 1);
        return SWIN_OK;
    }
    int r = (c->img_h / c->patch_size) >> s;   /* the constructor's grid height */
    if (r < 1)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: image height %d gives stage %d a grid height of 0 in "
                         "transformers' Swinv2 constructor (a window of 0)", c->arch, c->img_h, s);
    st->win_h = st->win_w = min_i(r, ws);
    return SWIN_OK;
}

/* shift of an odd block of stage s along each dimension (0 on even blocks) */
static void stage_shift(const swin_config *c, int s, const swin_stage_w *st, int *sh, int *sw) {
    int ws = c->window_size;
    if (c->family == SWIN_FAMILY_TIMM) {
        *sh = st->res_h > ws ? ws / 2 : 0;
        *sw = st->res_w > ws ? ws / 2 : 0;
    } else if (c->version == 1) {
        *sh = *sw = min_i(st->res_h, st->res_w) > ws ? ws / 2 : 0;
    } else {
        *sh = *sw = ((c->img_h / c->patch_size) >> s) > ws ? ws / 2 : 0;
    }
}

swin_status swin_model_plan(const swin_config *c, swin_weights *w) {
    if (!c || !w) return swin_fail(SWIN_ERR_ARGUMENT, "swin_model_plan: NULL argument");
    if (c->num_stages < 1 || c->num_stages > SWIN_MAX_STAGES || c->patch_size < 1 || c->window_size < 1 ||
        c->embed_dim < 1)
        return swin_fail(SWIN_ERR_CONFIG, "%s: incomplete configuration (stages %d, patch %d, window %d, embed %d)",
                         c->arch, c->num_stages, c->patch_size, c->window_size, c->embed_dim);
    int p = c->patch_size, hf = c->family == SWIN_FAMILY_HF;
    int h = hf ? ceil_div(c->img_h, p) : c->img_h / p, wd = hf ? ceil_div(c->img_w, p) : c->img_w / p;
    if (h < 1 || wd < 1)
        return swin_fail(SWIN_ERR_CONFIG, "%s: image %dx%d is smaller than one %dx%d patch", c->arch, c->img_h,
                         c->img_w, p, p);
    for (int s = 0; s < c->num_stages; s++) {
        swin_stage_w *st = &w->stages[s];
        if (s > 0) {
            h = ceil_div(h, 2);
            wd = ceil_div(wd, 2);
        }
        int dim = c->embed_dim << s, heads = c->num_heads[s];
        if (heads < 1 || dim % heads)
            return swin_fail(SWIN_ERR_CONFIG, "%s: stage %d has %d channels, not divisible by %d heads", c->arch, s,
                             dim, heads);
        st->dim = dim;
        st->res_h = h;
        st->res_w = wd;
        SWIN_TRY(stage_window(c, s, st));
        if (st->win_h * st->win_w > SWIN_CPU_MAX_TOKENS)
            return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: stage %d window %dx%d has more than %d tokens", c->arch, s,
                             st->win_h, st->win_w, SWIN_CPU_MAX_TOKENS);
        st->hp = ceil_div(h, st->win_h) * st->win_h;
        st->wp = ceil_div(wd, st->win_w) * st->win_w;
        st->depth = c->depths[s];
        st->heads = heads;
        st->head_dim = dim / heads;
        st->hidden = (int)((float)dim * c->mlp_ratio);
        st->has_merge = s > 0;
        if (st->hidden < 1)
            return swin_fail(SWIN_ERR_CONFIG, "%s: stage %d MLP hidden size %d (mlp_ratio %g)", c->arch, s,
                             st->hidden, (double)c->mlp_ratio);
        int sh, sw;
        stage_shift(c, s, st, &sh, &sw);
        for (int b = 0; st->blocks && b < st->depth; b++) {
            st->blocks[b].shift_h = b % 2 ? sh : 0;
            st->blocks[b].shift_w = b % 2 ? sw : 0;
            st->blocks[b].heads = heads;
        }
    }
    for (int s = c->num_stages; s < SWIN_MAX_STAGES; s++) memset(&w->stages[s], 0, sizeof w->stages[s]);
    return SWIN_OK;
}

int swin_model_plain_geometry(const swin_model *m, char *why, size_t size) {
    const swin_config *c = &m->cfg;
    char dummy[8];
    if (!why) { why = dummy; size = sizeof dummy; }
    if (c->img_h != c->img_w || c->img_h % c->patch_size) {
        snprintf(why, size, "input %dx%d with patch %d", c->img_h, c->img_w, c->patch_size);
        return 0;
    }
    for (int s = 0; s < c->num_stages; s++) {
        const swin_stage_w *st = &m->w.stages[s];
        const swin_stage_w *prev = s > 0 ? &m->w.stages[s - 1] : NULL;
        if (prev && (prev->res_h % 2 || prev->res_w % 2)) {
            snprintf(why, size, "stage %d merges an odd %dx%d grid", s, prev->res_h, prev->res_w);
            return 0;
        }
        int shifts_equal = 1;
        for (int b = 0; b < st->depth; b++) shifts_equal &= st->blocks[b].shift_h == st->blocks[b].shift_w;
        if (st->res_h != st->res_w || st->win_h != st->win_w || st->hp != st->res_h || st->wp != st->res_w ||
            !shifts_equal) {
            snprintf(why, size, "stage %d: grid %dx%d, window %dx%d, padded to %dx%d", s, st->res_h, st->res_w,
                     st->win_h, st->win_w, st->hp, st->wp);
            return 0;
        }
    }
    return 1;
}

static size_t numel_of(const swin_expect *e) {
    size_t n = 1;
    for (int d = 0; d < e->rank; d++) n *= (size_t)e->shape[d];
    return n;
}

/* carve everything; base == NULL sizes only */
static size_t layout(swin_model *m, char *base, int n_labels, size_t label_bytes, char **label_space,
                     swin_expect *ex, int n_ex) {
    size_t off = 0;
    const swin_config *c = &m->cfg;
    for (int s = 0; s < c->num_stages; s++)
        m->w.stages[s].blocks = swin_carve(base, &off, sizeof(swin_block_w) * (size_t)c->depths[s]);
    if (base) {
        swin_model_plan(c, &m->w);   /* succeeded before; now also fills per-block geometry */
        swin_names_expect(c, &m->w, ex, n_ex);
    }
    for (int i = 0; i < n_ex; i++) {
        float *p = swin_carve(base, &off, numel_of(&ex[i]) * sizeof(float));
        if (base) *ex[i].dst = p;
    }
    for (int s = 0; s < c->num_stages; s++) {
        swin_stage_w *st = &m->w.stages[s];
        size_t table = (size_t)(2 * st->win_h - 1) * (size_t)(2 * st->win_w - 1) * (size_t)st->heads;
        for (int b = 0; b < st->depth; b++) {
            float *bt = c->version == 2 ? swin_carve(base, &off, table * sizeof(float)) : NULL;
            float *sc = swin_carve(base, &off, (size_t)st->heads * sizeof(float));
            if (base) {
                st->blocks[b].bias_table = c->version == 2 ? bt : st->blocks[b].rel_table;
                st->blocks[b].attn_scale = sc;
            }
        }
    }
    char **labels = n_labels ? swin_carve(base, &off, sizeof(char *) * (size_t)n_labels) : NULL;
    char *space = label_bytes ? swin_carve(base, &off, label_bytes) : NULL;
    if (base) {
        m->labels = labels;
        if (label_space) *label_space = space;
    }
    return off + 256;
}

swin_status swin_model_alloc(swin_model *m, int n_labels, size_t label_bytes, char **label_space,
                             swin_expect **ex_out, int *n_out) {
    *ex_out = NULL;
    *n_out = 0;
    memset(&m->w, 0, sizeof m->w);
    SWIN_TRY(swin_model_plan(&m->cfg, &m->w));
    int n = swin_names_expect(&m->cfg, &m->w, NULL, 0);
    swin_expect *ex = calloc((size_t)n, sizeof *ex);
    /* shapes only (no dst yet): a scratch copy of the weights with temporary block arrays */
    swin_weights tmp = m->w;
    swin_block_w *tb = calloc(1024 * SWIN_MAX_STAGES, sizeof *tb);
    if (!ex || !tb) { free(ex); free(tb); return swin_fail(SWIN_ERR_MEMORY, "out of memory"); }
    for (int s = 0; s < m->cfg.num_stages; s++) tmp.stages[s].blocks = tb + 1024 * s;
    swin_names_expect(&m->cfg, &tmp, ex, n);
    free(tb);
    size_t bytes = layout(m, NULL, n_labels, label_bytes, NULL, ex, n);
    m->arena = malloc(bytes);
    if (!m->arena) {
        free(ex);
        return swin_fail(SWIN_ERR_MEMORY, "%s: cannot allocate %zu MB for the weights", m->cfg.arch, bytes >> 20);
    }
    m->arena_bytes = bytes;
    memset(m->arena, 0, bytes);
    layout(m, m->arena, n_labels, label_bytes, label_space, ex, n);
    *ex_out = ex;
    *n_out = n;
    return SWIN_OK;
}

/* ---- derived tables */
/* table [(2Wh-1)*(2Ww-1), heads]: entry (i, j) is the offset (dy, dx) = (i - (Wh-1), j - (Ww-1)) */
static void derive_v2_table(float *table, const swin_block_w *b, int Wh, int Ww, int pretrained, int heads) {
    int Th = 2 * Wh - 1, Tw = 2 * Ww - 1, win[2] = {Wh, Ww};
    float hid[512];
    for (int i = 0; i < Th; i++)
        for (int j = 0; j < Tw; j++) {
            /* timm _make_pair_wise_relative_positions: each axis divided by (pretrained window - 1),
             * else by (window - 1) (not at all for a window of 1), to [-8, 8], log-spaced */
            float xy[2] = {(float)(i - (Wh - 1)), (float)(j - (Ww - 1))};
            for (int k = 0; k < 2; k++) {
                if (pretrained > 0) xy[k] /= (float)(pretrained - 1);
                else if (win[k] > 1) xy[k] /= (float)(win[k] - 1);
                xy[k] *= 8.0f;
                float sg = xy[k] > 0 ? 1.0f : (xy[k] < 0 ? -1.0f : 0.0f);
                xy[k] = sg * log2f(fabsf(xy[k]) + 1.0f) / 3.0f;   /* / log2(8) */
            }
            for (int k = 0; k < 512; k++) {
                float v = b->cpb1.w[2 * k] * xy[0] + b->cpb1.w[2 * k + 1] * xy[1] + b->cpb1.b[k];
                hid[k] = v > 0 ? v : 0;
            }
            for (int h = 0; h < heads; h++) {
                double acc = 0;
                for (int k = 0; k < 512; k++) acc += (double)b->cpb2.w[(size_t)h * 512 + k] * hid[k];
                table[((size_t)i * Tw + j) * heads + h] = (float)(16.0 / (1.0 + exp(-acc)));
            }
        }
}

void swin_model_derive(swin_model *m) {
    const swin_config *c = &m->cfg;
    const float max_logit = (float)log(100.0);
    for (int s = 0; s < c->num_stages; s++) {
        swin_stage_w *st = &m->w.stages[s];
        for (int bi = 0; bi < st->depth; bi++) {
            swin_block_w *b = &st->blocks[bi];
            if (c->version == 1) {
                b->bias_table = b->rel_table;
                for (int h = 0; h < st->heads; h++) b->attn_scale[h] = (float)pow((double)st->head_dim, -0.5);
            } else {
                derive_v2_table(b->bias_table, b, st->win_h, st->win_w, c->pretrained_window_sizes[s], st->heads);
                for (int h = 0; h < st->heads; h++) {
                    float ls = b->logit_scale[h];
                    b->attn_scale[h] = expf(ls < max_logit ? ls : max_logit);
                }
            }
        }
    }
}

/* ---- random models (bench, kernel tests) */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}
static float rng_uniform(uint64_t *s, float lo, float hi) {
    return lo + (hi - lo) * (float)((rng_next(s) >> 40) / 16777216.0);
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

swin_status swin_model_random_config(const swin_config *cfg, uint64_t seed, swin_model **out) {
    if (!cfg || !out) return swin_fail(SWIN_ERR_ARGUMENT, "swin_model_random_config: NULL argument");
    *out = NULL;
    swin_model *m = calloc(1, sizeof *m);
    if (!m) return swin_fail(SWIN_ERR_MEMORY, "out of memory");
    m->cfg = *cfg;
    swin_status st = swin_config_finish(&m->cfg, m->cfg.arch);
    swin_expect *ex = NULL;
    int n = 0;
    if (st == SWIN_OK) st = swin_model_alloc(m, 0, 0, NULL, &ex, &n);
    if (st != SWIN_OK) { free(ex); swin_model_free(m); return st; }
    uint64_t s = seed ? seed : 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < n; i++) {
        size_t numel = numel_of(&ex[i]), fan_in = numel / (size_t)(ex[i].shape[0] ? ex[i].shape[0] : 1);
        float *p = *ex[i].dst, lo = -0.05f, hi = 0.05f, base = 0.0f;
        const char *name = ex[i].name;
        if (strstr(name, "norm") && ends_with(name, ".weight")) { base = 1.0f; lo = -0.1f; hi = 0.1f; }
        else if (ends_with(name, "logit_scale")) { base = logf(10.0f); lo = -0.2f; hi = 0.2f; }
        else if (ends_with(name, "relative_position_bias_table")) { lo = -0.2f; hi = 0.2f; }
        else if (ex[i].rank >= 2) { hi = 1.0f / sqrtf((float)fan_in); lo = -hi; }
        for (size_t k = 0; k < numel; k++) p[k] = base + rng_uniform(&s, lo, hi);
        if (m->cfg.version == 2 && ex[i].qkv == 2)   /* V2 has no k bias: its third stays zero */
            memset(p + numel / 3, 0, numel / 3 * sizeof(float));
    }
    free(ex);
    swin_model_derive(m);
    m->n_params = swin_config_param_count(&m->cfg);
    snprintf(m->path, sizeof m->path, "random:%s", m->cfg.arch);
    *out = m;
    return SWIN_OK;
}

swin_status swin_model_random(const char *arch, uint64_t seed, swin_model **out) {
    if (!out) return swin_fail(SWIN_ERR_ARGUMENT, "swin_model_random: NULL argument");
    *out = NULL;
    const swin_preset *p = swin_preset_find(arch);
    if (!p) return swin_fail(SWIN_ERR_CONFIG, "unknown architecture '%.100s'", arch ? arch : "");
    swin_config c;
    swin_config_from_preset(p, &c);
    return swin_model_random_config(&c, seed, out);
}
