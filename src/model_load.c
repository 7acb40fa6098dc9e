/* model_load.c - swin_model_load: config.json + model.safetensors (timm or Hugging Face layout),
 * or a bare .safetensors with an architecture preset, into one arena of fp32 weights.
 *
 * Steps: resolve the path; parse the config; open the checkpoint and rewrite every key to its
 * canonical name (names.c); infer what the config left out from tensor shapes; check what it states
 * against them (SWIN_ERR_CONFIG: the config, the field, the tensor, both values); validate and plan;
 * copy every expected tensor with exact shape checks, F16/BF16 conversion and a NaN/Inf scan;
 * warn about unknown tensors; derive the attention tables. Nothing from the file is trusted.
 * Test: tests/test_malformed.c (every rejection, timm and HF layouts), tests/cli_malformed.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "internal.h"
#include "names.h"
#include "safetensors.h"

typedef struct {
    char name[256];             /* canonical */
    const swin_st_tensor *t;    /* as in the file (t->name is the file's key) */
    int used;
} ckpt_key;

typedef struct {
    swin_st *f;
    const char *file;           /* path for messages */
    ckpt_key *keys;             /* sorted by canonical name; buffers excluded */
    int n;
    int hf_keys;                /* the keys are transformers' (swin_names_hf_layout) */
} ckpt;

swin_load_options swin_load_options_default(void) {
    swin_load_options o;
    memset(&o, 0, sizeof o);
    return o;
}

static void warn(const swin_load_options *o, const char *fmt, ...) SWIN_PRINTF(2, 3);
static void warn(const swin_load_options *o, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (o && o->warn) o->warn(msg, o->warn_user);
    else fprintf(stderr, "warning: %s\n", msg);
}

/* ---- canonical key index */
static int cmp_key(const void *a, const void *b) { return strcmp(((const ckpt_key *)a)->name, ((const ckpt_key *)b)->name); }

static const ckpt_key *find(const ckpt *k, const char *name) {
    ckpt_key probe;
    snprintf(probe.name, sizeof probe.name, "%s", name);
    return bsearch(&probe, k->keys, (size_t)k->n, sizeof *k->keys, cmp_key);
}

static swin_status index_keys(ckpt *k) {
    int n = swin_st_count(k->f);
    const char **names = calloc((size_t)n + 1, sizeof *names);
    k->keys = calloc((size_t)n + 1, sizeof *k->keys);
    if (!names || !k->keys) { free(names); return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", k->file); }
    for (int i = 0; i < n; i++) names[i] = swin_st_at(k->f, i)->name;
    int at_end = swin_names_merge_at_end(names, n);
    k->hf_keys = swin_names_hf_layout(names, n);
    free(names);
    k->n = 0;
    for (int i = 0; i < n; i++) {
        const swin_st_tensor *t = swin_st_at(k->f, i);
        ckpt_key *e = &k->keys[k->n];
        if (swin_name_canonical(t->name, at_end, e->name, sizeof e->name) == SWIN_KEY_BUFFER) continue;
        e->t = t;
        k->n++;
    }
    qsort(k->keys, (size_t)k->n, sizeof *k->keys, cmp_key);
    for (int i = 1; i < k->n; i++)
        if (!strcmp(k->keys[i - 1].name, k->keys[i].name))
            return swin_fail(SWIN_ERR_TENSOR, "%s: tensors '%s' and '%s' both map to '%s'", k->file,
                             k->keys[i - 1].t->name, k->keys[i].t->name, k->keys[i].name);
    return SWIN_OK;
}

/* ---- inference of fields the config left out */
static const swin_st_tensor *tensor(const ckpt *k, const char *fmt, int a, int b) {
    char name[256];
    snprintf(name, sizeof name, fmt, a, b);
    const ckpt_key *e = find(k, name);
    return e ? e->t : NULL;
}

static void infer(swin_config *c, const ckpt *k) {
    const swin_st_tensor *t = tensor(k, "patch_embed.proj.weight", 0, 0);
    if (t && t->rank == 4 && t->shape[0] < 65536 && t->shape[2] < 65536) {
        if (!c->embed_dim) c->embed_dim = (int)t->shape[0];
        if (!c->in_chans) c->in_chans = (int)t->shape[1];
        if (!c->patch_size) c->patch_size = (int)t->shape[2];
    }
    if (!c->num_stages) {
        for (int i = 0; i < k->n; i++) {
            int s, b;
            if (sscanf(k->keys[i].name, "layers.%d.blocks.%d.", &s, &b) == 2 && s >= 0 && s < SWIN_MAX_STAGES &&
                b >= 0 && b < 1024) {
                if (s + 1 > c->num_stages) c->num_stages = s + 1;
                if (b + 1 > c->depths[s]) c->depths[s] = b + 1;
            }
        }
    }
    for (int s = 0; s < c->num_stages; s++) {
        if (c->num_heads[s]) continue;
        const swin_st_tensor *h = c->version == 2 ? tensor(k, "layers.%d.blocks.%d.attn.logit_scale", s, 0)
                                                  : tensor(k, "layers.%d.blocks.%d.attn.relative_position_bias_table", s, 0);
        if (h && h->rank >= 1) {
            int64_t v = c->version == 2 ? h->shape[0] : (h->rank == 2 ? h->shape[1] : 0);
            if (v > 0 && v < 4096) c->num_heads[s] = (int)v;
        }
    }
    t = tensor(k, "layers.%d.blocks.%d.attn.relative_position_bias_table", 0, 0);
    if (!c->window_size && t && t->rank == 2) {
        int side = (int)lround(sqrt((double)t->shape[0]));
        if (side % 2 == 1 && (int64_t)side * side == t->shape[0]) c->window_size = (side + 1) / 2;
    }
    t = tensor(k, "head.fc.weight", 0, 0);
    if (!c->num_classes && t && t->rank == 2 && t->shape[0] <= 10000000) c->num_classes = (int)t->shape[0];
    if (c->qkv_bias < 0)
        c->qkv_bias = tensor(k, "layers.%d.blocks.%d.attn.qkv.bias", 0, 0) || tensor(k, "layers.%d.blocks.%d.attn.q.bias", 0, 0);
    if (c->ape < 0) c->ape = tensor(k, "absolute_pos_embed", 0, 0) != NULL;
    t = tensor(k, "layers.%d.blocks.%d.mlp.fc1.weight", 0, 0);
    if (c->mlp_ratio == 0 && t && t->rank == 2 && c->embed_dim > 0) c->mlp_ratio = (float)t->shape[0] / (float)c->embed_dim;
}

/* ---- the config against the weights: a value the config states (or its preset gives) that a
 * tensor's shape contradicts is SWIN_ERR_CONFIG naming the config, the field, the tensor and both
 * values. Fields the config left out were inferred from these very shapes (infer), so they agree;
 * shapes that say nothing about the config (a transposed qkv, say) are left to copy_tensor. */
typedef struct {
    const swin_config *c;
    const ckpt *k;
    const char *what;   /* the config file, or the --arch preset */
    int hf;             /* the field names of transformers' config.json */
} cfg_check;

static const char *field(const cfg_check *x, const char *timm, const char *hf) { return x->hf ? hf : timm; }

/* the square window a table / buffer extent is for: rows (2W-1)^2, or 0 if none */
static int window_of_rows(int64_t rows) {
    int64_t side = (int64_t)llround(sqrt((double)rows));
    return side * side == rows && side % 2 == 1 ? (int)(side + 1) / 2 : 0;
}

static swin_status window_error(const cfg_check *x, int s, const swin_stage_w *st, const swin_st_tensor *t, int w) {
    const swin_config *c = x->c;
    char shp[128], has[64];
    swin_st_shape_str(t, shp, sizeof shp);
    if (w > 0) snprintf(has, sizeof has, "window %d", w);
    else snprintf(has, sizeof has, "not a square window");
    if (st->win_h == c->window_size && st->win_w == c->window_size)
        return swin_fail(SWIN_ERR_CONFIG, "%s: window_size %d contradicts %s %s (%s)", x->what, c->window_size,
                         t->name, shp, has);
    return swin_fail(SWIN_ERR_CONFIG, "%s: window_size %d with %s %dx%d gives stage %d %dx%d windows, which "
                     "contradicts %s %s (%s)", x->what, c->window_size, field(x, "img_size", "image_size"),
                     c->img_h, c->img_w, s, st->win_h, st->win_w, t->name, shp, has);
}

/* ape / qkv_bias stated false with the tensors present, or true with none (before the defaults) */
static swin_status check_flags(const cfg_check *x) {
    const swin_config *c = x->c;
    char shp[128];
    const swin_st_tensor *t = tensor(x->k, "absolute_pos_embed", 0, 0);
    const char *ape = field(x, "ape", "use_absolute_embeddings");
    if (c->ape == 0 && t)
        return swin_fail(SWIN_ERR_CONFIG, "%s: %s false contradicts %s %s (an absolute position embedding)", x->what,
                         ape, t->name, swin_st_shape_str(t, shp, sizeof shp));
    if (c->ape == 1 && !t)
        return swin_fail(SWIN_ERR_CONFIG, "%s: %s true contradicts the checkpoint: it has no absolute_pos_embed",
                         x->what, ape);
    const swin_st_tensor *bias = NULL;
    for (int i = 0; i < x->k->n && !bias; i++) {
        const char *n = x->k->keys[i].name;
        size_t l = strlen(n);
        if ((l > 13 && !strcmp(n + l - 13, "attn.qkv.bias")) || (l > 11 && !strcmp(n + l - 11, "attn.q.bias")))
            bias = x->k->keys[i].t;
    }
    if (c->qkv_bias == 0 && bias)
        return swin_fail(SWIN_ERR_CONFIG, "%s: qkv_bias false contradicts %s %s", x->what, bias->name,
                         swin_st_shape_str(bias, shp, sizeof shp));
    if (c->qkv_bias == 1 && !bias && tensor(x->k, "layers.%d.blocks.%d.attn.proj.weight", 0, 0))
        return swin_fail(SWIN_ERR_CONFIG, "%s: qkv_bias true contradicts the checkpoint: no block has a q/k/v bias",
                         x->what);
    return SWIN_OK;
}

static void int_list(const int *v, int n, char *buf, size_t size) {
    size_t o = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && o < size; i++) o += (size_t)snprintf(buf + o, size - o, "%s%d", i ? ", " : "", v[i]);
    if (o < size) snprintf(buf + o, size - o, "]");
}

/* blocks per stage as the checkpoint holds them vs depths */
static swin_status check_depths(const cfg_check *x) {
    const swin_config *c = x->c;
    int blocks[64] = {0}, stages = 0;
    for (int i = 0; i < x->k->n; i++) {
        int s, b;
        if (sscanf(x->k->keys[i].name, "layers.%d.blocks.%d.", &s, &b) == 2 && s >= 0 && s < 64 && b >= 0 &&
            b < 1000000) {
            if (b + 1 > blocks[s]) blocks[s] = b + 1;
            if (s + 1 > stages) stages = s + 1;
        }
    }
    if (!stages) return SWIN_OK;   /* no blocks at all: the missing tensors say it better */
    char dl[96];
    int_list(c->depths, c->num_stages, dl, sizeof dl);
    if (stages > c->num_stages)
        return swin_fail(SWIN_ERR_CONFIG, "%s: depths %s (%d stage%s) contradicts the checkpoint's %d stages "
                         "(it has layers.%d.blocks.*)", x->what, dl, c->num_stages, c->num_stages == 1 ? "" : "s",
                         stages, stages - 1);
    for (int s = 0; s < c->num_stages; s++) {
        if (blocks[s] == c->depths[s]) continue;
        if (!blocks[s])
            return swin_fail(SWIN_ERR_CONFIG, "%s: depths[%d] %d contradicts the checkpoint: it has no "
                             "layers.%d.blocks.* (%d stages)", x->what, s, c->depths[s], s, stages);
        if (blocks[s] > c->depths[s])
            return swin_fail(SWIN_ERR_CONFIG, "%s: depths[%d] %d contradicts the checkpoint's %d blocks in stage %d "
                             "(it has layers.%d.blocks.%d.*)", x->what, s, c->depths[s], blocks[s], s, s,
                             blocks[s] - 1);
        return swin_fail(SWIN_ERR_CONFIG, "%s: depths[%d] %d contradicts the checkpoint's %d blocks in stage %d "
                         "(it has no layers.%d.blocks.%d.*)", x->what, s, c->depths[s], blocks[s], s, s, blocks[s]);
    }
    return SWIN_OK;
}

/* after swin_config_finish, at the config's own input size */
static swin_status check_config(const cfg_check *x) {
    const swin_config *c = x->c;
    const ckpt *k = x->k;
    const char *what = x->what;
    char shp[128];
    /* patch embedding [embed_dim, in_chans, patch, patch] */
    const swin_st_tensor *t = tensor(k, "patch_embed.proj.weight", 0, 0);
    if (t && t->rank == 4) {
        swin_st_shape_str(t, shp, sizeof shp);
        if (t->shape[0] != c->embed_dim)
            return swin_fail(SWIN_ERR_CONFIG, "%s: embed_dim %d contradicts %s %s (embed_dim %lld)", what,
                             c->embed_dim, t->name, shp, (long long)t->shape[0]);
        if (t->shape[1] != c->in_chans)
            return swin_fail(SWIN_ERR_CONFIG, "%s: %s %d contradicts %s %s (%lld channels)", what,
                             field(x, "in_chans", "num_channels"), c->in_chans, t->name, shp, (long long)t->shape[1]);
        if (t->shape[2] != c->patch_size || t->shape[3] != c->patch_size)
            return swin_fail(SWIN_ERR_CONFIG, "%s: patch_size %d contradicts %s %s (patch %lldx%lld)", what,
                             c->patch_size, t->name, shp, (long long)t->shape[2], (long long)t->shape[3]);
    }
    /* classifier [num_classes, C_last] */
    t = tensor(k, "head.fc.weight", 0, 0);
    if (t && t->rank == 2 && t->shape[0] != c->num_classes)
        return swin_fail(SWIN_ERR_CONFIG, "%s: %s %d contradicts %s %s (%lld classes)", what,
                         field(x, "num_classes", "num_labels"), c->num_classes, t->name,
                         swin_st_shape_str(t, shp, sizeof shp), (long long)t->shape[0]);
    SWIN_TRY(check_depths(x));
    /* heads: V1 relative_position_bias_table [T, heads]; V2 logit_scale [heads, 1, 1], cpb_mlp.2 [heads, 512] */
    for (int s = 0; s < c->num_stages; s++) {
        const swin_st_tensor *h[2] = {NULL, NULL};
        int dim[2] = {1, 0};
        if (c->version == 1) h[0] = tensor(k, "layers.%d.blocks.%d.attn.relative_position_bias_table", s, 0);
        else {
            h[0] = tensor(k, "layers.%d.blocks.%d.attn.logit_scale", s, 0);
            h[1] = tensor(k, "layers.%d.blocks.%d.attn.cpb_mlp.2.weight", s, 0);
            dim[0] = 0;
        }
        for (int i = 0; i < 2; i++)
            if (h[i] && h[i]->rank == (c->version == 1 ? 2 : (i ? 2 : 3)) && h[i]->shape[dim[i]] != c->num_heads[s])
                return swin_fail(SWIN_ERR_CONFIG, "%s: num_heads[%d] %d contradicts %s %s (%lld heads)", what, s,
                                 c->num_heads[s], h[i]->name, swin_st_shape_str(h[i], shp, sizeof shp),
                                 (long long)h[i]->shape[dim[i]]);
    }
    swin_weights g;
    memset(&g, 0, sizeof g);
    swin_status st = swin_model_plan(c, &g);
    if (st != SWIN_OK) return swin_fail_prefix(st, "%s", what);
    /* windows: V1 tables [(2Wh-1)(2Ww-1), heads]; buffers of either version, if the file has them:
     * relative_position_index [Wh*Ww, Wh*Ww], relative_coords_table [1, 2Wh-1, 2Ww-1, 2] */
    for (int s = 0; c->version == 1 && s < c->num_stages; s++) {
        const swin_stage_w *w = &g.stages[s];
        t = tensor(k, "layers.%d.blocks.%d.attn.relative_position_bias_table", s, 0);
        if (t && t->rank == 2 && t->shape[0] != (int64_t)(2 * w->win_h - 1) * (2 * w->win_w - 1))
            return window_error(x, s, w, t, window_of_rows(t->shape[0]));
    }
    for (int i = 0; i < swin_st_count(k->f); i++) {
        t = swin_st_at(k->f, i);
        int index = strstr(t->name, "relative_position_index") != NULL;
        int coords = strstr(t->name, "relative_coords_table") != NULL;
        const char *at = strstr(t->name, "layers.");
        int s, b;
        if (!(index || coords) || !at || sscanf(at, "layers.%d.blocks.%d.", &s, &b) != 2 || s < 0 ||
            s >= c->num_stages)
            continue;
        const swin_stage_w *w = &g.stages[s];
        int64_t n = (int64_t)w->win_h * w->win_w, side = (int64_t)llround(sqrt((double)t->shape[0]));
        if (index && t->rank == 2 && (t->shape[0] != n || t->shape[1] != n))
            return window_error(x, s, w, t, t->shape[0] == t->shape[1] && side * side == t->shape[0] ? (int)side : 0);
        if (coords && t->rank == 4 && (t->shape[1] != 2 * w->win_h - 1 || t->shape[2] != 2 * w->win_w - 1))
            return window_error(x, s, w, t,
                                t->shape[1] == t->shape[2] && t->shape[1] % 2 ? (int)(t->shape[1] + 1) / 2 : 0);
    }
    /* absolute_pos_embed [1, L, C] or [1, H, W, C]: L the patch grid of the image size */
    t = tensor(k, "absolute_pos_embed", 0, 0);
    if (c->ape && t && t->rank >= 2 && t->shape[t->rank - 1] == c->embed_dim) {
        int64_t pos = t->numel / c->embed_dim, grid = (int64_t)g.stages[0].res_h * g.stages[0].res_w;
        if (pos != grid)
            return swin_fail(SWIN_ERR_CONFIG, "%s: %s %dx%d (a %dx%d patch grid, %lld positions) contradicts %s %s "
                             "(%lld positions)", what, field(x, "img_size", "image_size"), c->img_h, c->img_w,
                             g.stages[0].res_h, g.stages[0].res_w, (long long)grid, t->name,
                             swin_st_shape_str(t, shp, sizeof shp), (long long)pos);
    }
    return SWIN_OK;
}

/* ---- running at another input size (swin_load_options img_h / img_w): the config's size
 * becomes the new one, as timm.create_model(..., img_size=) or transformers' image_size would make
 * it, as long as every tensor of the checkpoint keeps its shape */
static swin_status apply_img_size(swin_config *c, const swin_load_options *o, const char *what) {
    if (!o || (!o->img_h && !o->img_w)) return SWIN_OK;
    if (o->img_h < 1 || o->img_w < 1 || o->img_h > 16384 || o->img_w > 16384)
        return swin_fail(SWIN_ERR_ARGUMENT, "input size %dx%d is out of range (1 to 16384 each)", o->img_h,
                         o->img_w);
    swin_config run = *c;
    run.img_h = o->img_h;
    run.img_w = o->img_w;
    swin_weights native, next;
    memset(&native, 0, sizeof native);
    memset(&next, 0, sizeof next);
    SWIN_TRY(swin_model_plan(c, &native));
    swin_status st = swin_model_plan(&run, &next);
    if (st != SWIN_OK) return swin_fail_prefix(st, "at a %dx%d input", run.img_h, run.img_w);
    const swin_stage_w *a = &native.stages[0], *b = &next.stages[0];
    if (c->ape && (a->res_h != b->res_h || a->res_w != b->res_w))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: absolute_pos_embed is for the %dx%d patch grid of %dx%d "
                         "inputs; at %dx%d the grid is %dx%d, and swin does not resample position embeddings",
                         what, a->res_h, a->res_w, c->img_h, c->img_w, run.img_h, run.img_w, b->res_h, b->res_w);
    for (int s = 0; c->version == 1 && s < c->num_stages; s++) {
        a = &native.stages[s];
        b = &next.stages[s];
        if (a->win_h != b->win_h || a->win_w != b->win_w)
            return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: at %dx%d stage %d has %dx%d windows, but its "
                             "relative_position_bias_table (layers.%d.blocks.*.attn) is for %dx%d windows "
                             "(timm would interpolate it; swin does not)", what, run.img_h, run.img_w, s,
                             b->win_h, b->win_w, s, a->win_h, a->win_w);
    }
    *c = run;
    return SWIN_OK;
}

/* ---- copying tensors */
static const char *shape_str(int rank, const int64_t *shape, char *buf, size_t size) {
    swin_st_tensor t;
    memset(&t, 0, sizeof t);
    t.rank = rank;
    memcpy(t.shape, shape, sizeof(int64_t) * (size_t)rank);
    return swin_st_shape_str(&t, buf, size);
}

static swin_status copy_tensor(ckpt *k, const ckpt_key *e, const int64_t *shape, int rank, int flat, float *dst) {
    const swin_st_tensor *t = e->t;
    int64_t want = 1;
    for (int d = 0; d < rank; d++) want *= shape[d];
    int same = t->rank == rank;
    for (int d = 0; same && d < rank; d++) same = t->shape[d] == shape[d];
    if (!same && !(flat && t->numel == want)) {
        char a[128], b[128];
        return swin_fail(SWIN_ERR_TENSOR, "%s: tensor '%s' has shape %s, expected %s", k->file, t->name,
                         swin_st_shape_str(t, a, sizeof a), shape_str(rank, shape, b, sizeof b));
    }
    SWIN_TRY(swin_st_read_f32(k->f, t, dst));
    for (int64_t i = 0; i < want; i++)
        if (!isfinite(dst[i]))
            return swin_fail(SWIN_ERR_VALUE, "%s: tensor '%s' has a non-finite value (%s) at index %lld", k->file,
                             t->name, isnan(dst[i]) ? "NaN" : "Inf", (long long)i);
    ((ckpt_key *)e)->used = 1;
    return SWIN_OK;
}

static swin_status missing(const ckpt *k, const char *name, int hf) {
    return swin_fail(SWIN_ERR_TENSOR, "%s: missing tensor '%s'%s", k->file, name,
                     hf ? " (timm name; the checkpoint's Hugging Face keys were mapped to timm names)" : "");
}

static swin_status load_expected(ckpt *k, const swin_expect *x, int hf) {
    const ckpt_key *e = find(k, x->name);
    if (e) return copy_tensor(k, e, x->shape, x->rank, x->flat, *x->dst);
    if (!x->qkv) return missing(k, x->name, hf);
    /* q / k / v parts: "attn.qkv.X" -> "attn.q.X", "attn.k.X", "attn.v.X", each a third of the rows */
    const char *at = strstr(x->name, "attn.qkv.");
    int64_t part[2] = {x->shape[0] / 3, x->rank == 2 ? x->shape[1] : 0};
    size_t part_numel = (size_t)part[0] * (x->rank == 2 ? (size_t)part[1] : 1);
    for (int p = 0; p < 3; p++) {
        char name[128];
        snprintf(name, sizeof name, "%.*sattn.%c.%s", (int)(at - x->name), x->name, "qkv"[p], at + 9);
        const ckpt_key *pe = find(k, name);
        float *dst = *x->dst + (size_t)p * part_numel;
        if (!pe && p == 1 && x->qkv == 2) { memset(dst, 0, part_numel * sizeof(float)); continue; }  /* V2 k bias */
        if (!pe) {
            if (p == 0) return missing(k, x->name, hf);
            return missing(k, name, hf);
        }
        SWIN_TRY(copy_tensor(k, pe, part, x->rank, 0, dst));
    }
    return SWIN_OK;
}

/* ---- path resolution */
static int is_dir(const char *p) { struct stat sb; return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode); }
static int is_file(const char *p) { struct stat sb; return stat(p, &sb) == 0 && S_ISREG(sb.st_mode); }
static int ends_with(const char *s, const char *x) {
    size_t a = strlen(s), b = strlen(x);
    return a >= b && !strcmp(s + a - b, x);
}

/* config (may be "" = none) and weights file for path */
static swin_status resolve(const char *path, const swin_load_options *o, char *config, char *weights, size_t size) {
    config[0] = weights[0] = '\0';
    if (is_dir(path)) {
        snprintf(config, size, "%s/config.json", path);
        snprintf(weights, size, "%s/model.safetensors", path);
        if (!is_file(weights))
            return swin_fail(SWIN_ERR_IO, "%s: directory has no model.safetensors", path);
        if (!is_file(config)) {
            if (!o || !o->arch)
                return swin_fail(SWIN_ERR_ARGUMENT, "%s: directory has no config.json; give the architecture "
                                 "(--arch, e.g. swin_tiny_patch4_window7_224)", path);
            config[0] = '\0';
        }
        return SWIN_OK;
    }
    if (!is_file(path)) return swin_fail(SWIN_ERR_IO, "%s: no such file or directory", path);
    if (ends_with(path, "config.json")) {   /* the config itself: weights next to it */
        snprintf(config, size, "%s", path);
        snprintf(weights, size, "%s", path);
        char *slash = strrchr(weights, '/');
        snprintf(slash ? slash + 1 : weights, size - (size_t)(slash ? slash + 1 - weights : 0), "model.safetensors");
        if (!is_file(weights)) return swin_fail(SWIN_ERR_IO, "%s: no model.safetensors next to it", path);
        return SWIN_OK;
    }
    if (!o || !o->arch)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: a bare .safetensors file needs its architecture "
                         "(--arch, e.g. swin_tiny_patch4_window7_224)", path);
    snprintf(weights, size, "%s", path);
    return SWIN_OK;
}

/* ---- the loader */
static swin_status load(swin_model *m, const char *path, const swin_load_options *o, swin_parsed_config *pc,
                        ckpt *k) {
    char config[1100], weights[1100];
    SWIN_TRY(resolve(path, o, config, weights, sizeof config));
    if (config[0]) SWIN_TRY(swin_config_parse_file(config, pc));
    else SWIN_TRY(swin_config_parse_arch(o->arch, pc));
    const char *what = config[0] ? config : o->arch;
    SWIN_TRY(swin_st_open(weights, &k->f));
    k->file = swin_st_path(k->f);
    SWIN_TRY(index_keys(k));
    infer(&pc->cfg, k);
    if (!config[0] && k->hf_keys) pc->cfg.family = SWIN_FAMILY_HF;   /* a bare transformers checkpoint */
    const swin_preset *preset = swin_preset_find(pc->cfg.arch);
    if (!pc->cfg.num_classes && preset) pc->cfg.num_classes = preset->num_classes;   /* no head: report it missing */
    cfg_check x = {&pc->cfg, k, what, pc->cfg.pre_style == SWIN_PRE_HF};
    SWIN_TRY(check_flags(&x));
    SWIN_TRY(swin_config_finish(&pc->cfg, what));
    SWIN_TRY(check_config(&x));
    SWIN_TRY(apply_img_size(&pc->cfg, o, what));
    m->cfg = pc->cfg;
    if (pc->num_labels && pc->num_labels != m->cfg.num_classes)
        return swin_fail(SWIN_ERR_CONFIG, "%s: %d labels for %d classes", what, pc->num_labels, m->cfg.num_classes);
    size_t label_bytes = 0;
    for (int i = 0; i < pc->num_labels; i++) label_bytes += strlen(pc->labels[i]) + 1;
    char *space = NULL;
    swin_expect *ex = NULL;
    int n = 0;
    swin_status st = swin_model_alloc(m, pc->num_labels, label_bytes, &space, &ex, &n);
    if (st != SWIN_OK && config[0]) swin_fail_prefix(st, "%s", config);   /* the geometry's file */
    int hf = m->cfg.pre_style == SWIN_PRE_HF;
    for (int i = 0; st == SWIN_OK && i < n; i++) st = load_expected(k, &ex[i], hf);
    free(ex);
    SWIN_TRY(st);
    for (int i = 0; i < pc->num_labels; i++) {
        size_t l = strlen(pc->labels[i]) + 1;
        memcpy(space, pc->labels[i], l);
        m->labels[i] = space;
        space += l;
    }
    for (int i = 0; i < k->n; i++)
        if (!k->keys[i].used) {
            char shp[128];
            warn(o, "%s: ignoring unknown tensor '%s' %s", k->file, k->keys[i].t->name,
                 swin_st_shape_str(k->keys[i].t, shp, sizeof shp));
        }
    swin_model_derive(m);
    m->n_params = swin_config_param_count(&m->cfg);
    snprintf(m->path, sizeof m->path, "%s", path);
    return SWIN_OK;
}

swin_status swin_model_load(const char *path, const swin_load_options *options, swin_model **out) {
    if (!path || !out) return swin_fail(SWIN_ERR_ARGUMENT, "swin_model_load: NULL argument");
    *out = NULL;
    swin_model *m = calloc(1, sizeof *m);
    if (!m) return swin_fail(SWIN_ERR_MEMORY, "out of memory");
    swin_parsed_config pc;
    memset(&pc, 0, sizeof pc);
    ckpt k;
    memset(&k, 0, sizeof k);
    swin_status st = load(m, path, options, &pc, &k);
    swin_parsed_config_free(&pc);
    free(k.keys);
    swin_st_close(k.f);
    if (st != SWIN_OK) { swin_model_free(m); return st; }
    *out = m;
    return SWIN_OK;
}

void swin_model_free(swin_model *m) {
    if (!m) return;
    free(m->arena);
    free(m);
}

const swin_config *swin_model_config(const swin_model *m) { return m ? &m->cfg : NULL; }

const char *swin_model_label(const swin_model *m, int i) {
    static _Thread_local char buf[32];
    if (m && i >= 0 && i < m->cfg.num_classes) {
        if (m->labels) return m->labels[i];
        if (m->cfg.num_classes == 1000) return swin_imagenet_labels[i];
    }
    snprintf(buf, sizeof buf, "class_%d", i);
    return buf;
}

int64_t swin_model_param_count(const swin_model *m) { return m ? m->n_params : 0; }

double swin_model_gflops(const swin_model *m) { return m ? swin_config_gflops(&m->cfg) : 0.0; }
