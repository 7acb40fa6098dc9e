/* model_plan.c - model geometry (swin_model_plan), the one-arena layout (swin_model_alloc),
 * derived attention tables (swin_model_derive) and random-weight models (swin_model_random).
 *
 * Geometry follows timm's _calc_window_shift and HF's set_shift_and_window_size: stage s has
 * dim embed*2^s and resolution img/patch/2^s; window = min(window_size, res); odd blocks shift by
 * window/2 unless res <= window_size. Inputs timm would pad (res % window != 0, odd resolutions
 * at a merge, img % patch != 0) are refused with SWIN_ERR_UNSUPPORTED.
 * Test: tests/test_malformed.c (tiny models), tests/cli_info.sh (windows printed per stage).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "internal.h"
#include "names.h"

swin_status swin_model_plan(const swin_config *c, swin_weights *w) {
    if (!c || !w) return swin_fail(SWIN_ERR_ARGUMENT, "swin_model_plan: NULL argument");
    if (c->num_stages < 1 || c->num_stages > SWIN_MAX_STAGES || c->patch_size < 1 || c->window_size < 1 ||
        c->embed_dim < 1)
        return swin_fail(SWIN_ERR_CONFIG, "%s: incomplete configuration (stages %d, patch %d, window %d, embed %d)",
                         c->arch, c->num_stages, c->patch_size, c->window_size, c->embed_dim);
    if (c->img_size % c->patch_size)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: image size %d is not a multiple of patch size %d "
                         "(timm would pad; swin refuses)", c->arch, c->img_size, c->patch_size);
    int res = c->img_size / c->patch_size;
    for (int s = 0; s < c->num_stages; s++) {
        swin_stage_w *st = &w->stages[s];
        if (s > 0) {
            if (res % 2)
                return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: stage %d merges a %dx%d token grid, which is odd "
                                 "(timm would pad; swin refuses)", c->arch, s, res, res);
            res /= 2;
        }
        int dim = c->embed_dim << s, heads = c->num_heads[s];
        if (heads < 1 || dim % heads)
            return swin_fail(SWIN_ERR_CONFIG, "%s: stage %d has %d channels, not divisible by %d heads", c->arch, s,
                             dim, heads);
        int window = res < c->window_size ? res : c->window_size;
        if (res % window)
            return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: stage %d resolution %d is not a multiple of window %d "
                             "(timm would pad; swin refuses)", c->arch, s, res, window);
        st->dim = dim;
        st->res = res;
        st->depth = c->depths[s];
        st->heads = heads;
        st->head_dim = dim / heads;
        st->hidden = (int)((float)dim * c->mlp_ratio);
        st->has_merge = s > 0;
        if (st->hidden < 1)
            return swin_fail(SWIN_ERR_CONFIG, "%s: stage %d MLP hidden size %d (mlp_ratio %g)", c->arch, s,
                             st->hidden, (double)c->mlp_ratio);
        for (int b = 0; st->blocks && b < st->depth; b++) {
            st->blocks[b].window = window;
            st->blocks[b].shift = (b % 2 == 1 && res > c->window_size) ? window / 2 : 0;
            st->blocks[b].heads = heads;
        }
    }
    for (int s = c->num_stages; s < SWIN_MAX_STAGES; s++) memset(&w->stages[s], 0, sizeof w->stages[s]);
    return SWIN_OK;
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
        int W = st->res < c->window_size ? st->res : c->window_size;
        size_t table = (size_t)(2 * W - 1) * (size_t)(2 * W - 1) * (size_t)st->heads;
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
static void derive_v2_table(float *table, const swin_block_w *b, int W, int pretrained, int heads) {
    int T = 2 * W - 1;
    float hid[512];
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            /* timm _make_pair_wise_relative_positions: normalise to [-8, 8], log-space */
            float xy[2] = {(float)(i - (W - 1)), (float)(j - (W - 1))};
            for (int k = 0; k < 2; k++) {
                if (pretrained > 0) xy[k] /= (float)(pretrained - 1);
                else if (W > 1) xy[k] /= (float)(W - 1);
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
                table[((size_t)i * T + j) * heads + h] = (float)(16.0 / (1.0 + exp(-acc)));
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
                derive_v2_table(b->bias_table, b, b->window, c->pretrained_window_sizes[s], st->heads);
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
