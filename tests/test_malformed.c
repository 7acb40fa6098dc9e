/* test_malformed.c - swin_model_load on valid and malformed checkpoints and configs.
 *
 * Builds a tiny Swin (embed 8, depths [2, 2], heads [1, 2], window 2, img 16, patch 2, 5 classes)
 * with random weights, V1 and V2, writes it in the timm, Hugging Face and MS-original layouts
 * into a temp dir, checks each loads to the very same weights, then corrupts copies: every case
 * expects a specific status AND a message fragment naming the problem. None may crash; run it
 * under the sanitizer build too (tools/test.sh --sanitize). Config values that contradict the
 * weights (window, heads, depths, embed_dim, patch, classes, ape, qkv_bias, image size) are
 * SWIN_ERR_CONFIG cases; every fixture in tests/data/ref_* and weights/digits must still load.
 * Run: ctest -R test_malformed, or build-dir/tests/test_malformed SRC_DIR.
 */
#define _XOPEN_SOURCE 700
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "internal.h"
#include "model.h"
#include "names.h"
#include "safetensors.h"
#include "testutil.h"

static char g_dir[512];
static char g_warn[1024];
static int g_warns;

static void on_warn(const char *msg, void *user) {
    (void)user;
    g_warns++;
    snprintf(g_warn, sizeof g_warn, "%s", msg);
}

typedef enum { L_TIMM, L_HF, L_MS } layout;

/* ---- the tiny source models */
static swin_config tiny_config(int version) {
    swin_config c;
    memset(&c, 0, sizeof c);
    c.version = version;
    snprintf(c.arch, sizeof c.arch, "%s", version == 2 ? "swinv2_tinytest" : "swin_tinytest");
    c.img_h = c.img_w = 16; c.patch_size = 2; c.in_chans = 3; c.embed_dim = 8; c.num_stages = 2;
    c.depths[0] = 2; c.depths[1] = 2; c.num_heads[0] = 1; c.num_heads[1] = 2;
    c.window_size = 2; c.mlp_ratio = 4; c.qkv_bias = 1; c.ln_eps = 1e-5f; c.num_classes = 5;
    c.crop_pct = 0.9f; c.interp = SWIN_INTERP_BICUBIC;
    for (int i = 0; i < 3; i++) { c.mean[i] = 0.5f; c.std[i] = 0.25f; }
    return c;
}

/* canonical name -> name in a layout (HF: prefix, spelling, merge at the end of stage S-1) */
static const char *const HF_RENAMES[][2] = {
    {"patch_embed.proj.", "embeddings.patch_embeddings.projection."}, {"patch_embed.norm.", "embeddings.norm."},
    {".norm1.", ".layernorm_before."}, {".norm2.", ".layernorm_after."},
    {".attn.relative_position_bias_table", ".attention.self.relative_position_bias_table"},
    {".attn.logit_scale", ".attention.self.logit_scale"},
    {".attn.cpb_mlp.", ".attention.self.continuous_position_bias_mlp."},
    {".attn.proj.", ".attention.output.dense."}, {".mlp.fc1.", ".intermediate.dense."}, {".mlp.fc2.", ".output.dense."},
};

static void layout_name(const char *canon, layout L, int version, char *out, size_t size) {
    char tmp[512];
    int s, n = 0;
    snprintf(tmp, sizeof tmp, "%s", canon);
    if (L != L_TIMM && sscanf(tmp, "layers.%d.downsample.%n", &s, &n) == 1 && n > 0) {
        char rest[512];
        snprintf(rest, sizeof rest, "%s", tmp + n);
        snprintf(tmp, sizeof tmp, "layers.%d.downsample.%.200s", s - 1, rest);
    }
    if (L == L_MS) {
        if (!strncmp(tmp, "head.fc.", 8)) snprintf(out, size, "head.%.200s", tmp + 8);
        else snprintf(out, size, "%s", tmp);
        return;
    }
    if (L == L_TIMM) { snprintf(out, size, "%s", tmp); return; }
    for (size_t i = 0; i < sizeof HF_RENAMES / sizeof HF_RENAMES[0]; i++) {
        char *at = strstr(tmp, HF_RENAMES[i][0]);
        if (!at) continue;
        char rest[512];
        snprintf(rest, sizeof rest, "%s", at + strlen(HF_RENAMES[i][0]));
        snprintf(at, sizeof tmp - (size_t)(at - tmp), "%s%.200s", HF_RENAMES[i][1], rest);
    }
    const char *pre = version == 2 ? "swinv2." : "swin.";
    if (!strncmp(tmp, "head.fc.", 8)) snprintf(out, size, "classifier.%.200s", tmp + 8);
    else if (!strncmp(tmp, "layers.", 7)) snprintf(out, size, "%sencoder.%.200s", pre, tmp);
    else if (!strncmp(tmp, "norm.", 5)) snprintf(out, size, "%slayernorm.%.200s", pre, tmp + 5);
    else snprintf(out, size, "%s%.200s", pre, tmp);
}

/* tensor list of model m in a layout; q/k/v split where the layout does so */
typedef struct { char name[512]; swin_st_tensor t; } named;
typedef struct { named *v; int n; } tlist;

static void push(tlist *l, const char *name, const float *data, int rank, const int64_t *shape) {
    named *e = &l->v[l->n++];
    snprintf(e->name, sizeof e->name, "%s", name);
    memset(&e->t, 0, sizeof e->t);
    e->t.name = e->name;
    e->t.dtype = SWIN_ST_F32;
    e->t.rank = rank;
    memcpy(e->t.shape, shape, sizeof(int64_t) * (size_t)rank);
    e->t.data = data;
}

static tlist tensors_of(swin_model *m, layout L) {
    int n = swin_names_expect(&m->cfg, &m->w, NULL, 0);
    swin_expect *ex = calloc((size_t)n, sizeof *ex);
    swin_names_expect(&m->cfg, &m->w, ex, n);
    tlist l = {calloc((size_t)n * 3 + 8, sizeof(named)), 0};
    for (int i = 0; i < n; i++) {
        char name[512];
        const char *qkv = strstr(ex[i].name, "attn.qkv.");
        int split = qkv && (L == L_HF || (m->cfg.version == 2 && ex[i].rank == 1));
        if (!split) {
            layout_name(ex[i].name, L, m->cfg.version, name, sizeof name);
            push(&l, name, *ex[i].dst, ex[i].rank, ex[i].shape);
            continue;
        }
        int64_t part[2] = {ex[i].shape[0] / 3, ex[i].shape[1]};
        size_t pn = (size_t)part[0] * (ex[i].rank == 2 ? (size_t)part[1] : 1);
        for (int p = 0; p < 3; p++) {
            if (m->cfg.version == 2 && ex[i].rank == 1 && p == 1) continue;   /* V2 has no k bias */
            char blk[96];
            snprintf(blk, sizeof blk, "%.*s", (int)(qkv - ex[i].name), ex[i].name);
            if (L == L_HF) {
                static const char *const hf[3] = {"query", "key", "value"};
                char canon[256];
                snprintf(canon, sizeof canon, "%sattn.proj.", blk);   /* only to get the HF block prefix */
                layout_name(canon, L, m->cfg.version, name, sizeof name);
                char *at = strstr(name, "attention.output.dense.");
                snprintf(at, sizeof name - (size_t)(at - name), "attention.self.%s.%s", hf[p], qkv + 9);
            } else {
                snprintf(name, sizeof name, "%sattn.%c_bias", blk, "qkv"[p]);   /* timm V2 q_bias / v_bias */
            }
            push(&l, name, *ex[i].dst + p * pn, ex[i].rank, part);
        }
    }
    free(ex);
    return l;
}

/* ---- files */
static void path_in(char *out, size_t size, const char *sub, const char *file) {
    snprintf(out, size, "%s/%s%s%s", g_dir, sub, file ? "/" : "", file ? file : "");
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f) { fputs(text, f); fclose(f); }
}

static const char *config_json(int version, layout L, char *buf, size_t size) {
    if (L == L_HF)
        snprintf(buf, size,
                 "{\"model_type\": \"%s\", \"embed_dim\": 8, \"depths\": [2, 2], \"num_heads\": [1, 2],"
                 " \"window_size\": 2, \"image_size\": 16, \"patch_size\": 2, \"num_channels\": 3,"
                 " \"mlp_ratio\": 4.0, \"qkv_bias\": true, \"layer_norm_eps\": 1e-05, \"hidden_act\": \"gelu\","
                 " \"use_absolute_embeddings\": false, \"pretrained_window_sizes\": [0, 0, 0, 0],"
                 " \"id2label\": {\"0\": \"zero\", \"1\": \"one\", \"2\": \"two\", \"3\": \"three\", \"4\": \"four\"}}",
                 version == 2 ? "swinv2" : "swin");
    else
        snprintf(buf, size,
                 "{\"architecture\": \"%s\", \"num_classes\": 5,"
                 " \"model_args\": {\"img_size\": 16, \"patch_size\": 2, \"window_size\": 2, \"embed_dim\": 8,"
                 " \"depths\": [2, 2], \"num_heads\": [1, 2]},"
                 " \"pretrained_cfg\": {\"input_size\": [3, 16, 16], \"crop_pct\": 0.9, \"interpolation\": \"bilinear\","
                 " \"mean\": [0.5, 0.5, 0.5], \"std\": [0.25, 0.25, 0.25]},"
                 " \"label_names\": [\"zero\", \"one\", \"two\", \"three\", \"four\"]}",
                 version == 2 ? "swinv2_tinytest" : "swin_tinytest");
    return buf;
}

/* directory sub/ with config.json and model.safetensors of m in layout L */
static void write_model_dir(const char *sub, swin_model *m, layout L, const char *config) {
    char p[1024], cfg[2048];
    path_in(p, sizeof p, sub, NULL);
    mkdir(p, 0755);
    path_in(p, sizeof p, sub, "config.json");
    write_text(p, config ? config : config_json(m->cfg.version, L, cfg, sizeof cfg));
    tlist l = tensors_of(m, L);
    swin_st_tensor *ts = calloc((size_t)l.n, sizeof *ts);
    for (int i = 0; i < l.n; i++) ts[i] = l.v[i].t;
    path_in(p, sizeof p, sub, "model.safetensors");
    CHECK(swin_st_write(p, ts, l.n) == SWIN_OK, "write %s: %s", p, swin_last_error());
    free(ts);
    free(l.v);
}

static void write_bytes(const char *path, const void *a, size_t na, const void *b, size_t nb) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(a, 1, na, f);
    if (nb) fwrite(b, 1, nb, f);
    fclose(f);
}

/* ---- comparing loaded weights with the source model */
static int same_weights(swin_model *a, swin_model *b, const char *what) {
    int na = swin_names_expect(&a->cfg, &a->w, NULL, 0), nb = swin_names_expect(&b->cfg, &b->w, NULL, 0);
    if (!CHECK(na == nb, "%s: %d vs %d tensors", what, na, nb)) return 0;
    swin_expect *ea = calloc((size_t)na, sizeof *ea), *eb = calloc((size_t)nb, sizeof *eb);
    swin_names_expect(&a->cfg, &a->w, ea, na);
    swin_names_expect(&b->cfg, &b->w, eb, nb);
    int ok = 1;
    for (int i = 0; i < na && ok; i++) {
        size_t n = 1;
        for (int d = 0; d < ea[i].rank; d++) n *= (size_t)ea[i].shape[d];
        ok = CHECK(!strcmp(ea[i].name, eb[i].name) && tu_max_abs_diff(*ea[i].dst, *eb[i].dst, n) == 0,
                   "%s: tensor %s differs", what, ea[i].name);
    }
    for (int s = 0; s < a->cfg.num_stages && ok; s++)
        for (int bl = 0; bl < a->w.stages[s].depth && ok; bl++) {
            const swin_block_w *x = &a->w.stages[s].blocks[bl], *y = &b->w.stages[s].blocks[bl];
            const swin_stage_w *sa = &a->w.stages[s], *sb = &b->w.stages[s];
            int Wh = sa->win_h, Ww = sa->win_w, h = sa->heads;
            ok = CHECK(Wh == sb->win_h && Ww == sb->win_w && x->shift_h == y->shift_h && x->shift_w == y->shift_w &&
                       tu_max_abs_diff(x->bias_table, y->bias_table, (size_t)(2 * Wh - 1) * (2 * Ww - 1) * h) == 0 &&
                       tu_max_abs_diff(x->attn_scale, y->attn_scale, (size_t)h) == 0,
                       "%s: derived tables of stage %d block %d differ", what, s, bl);
        }
    free(ea);
    free(eb);
    return ok;
}

static swin_model *load(const char *sub, const char *file, const char *arch, swin_status *st) {
    char p[1024];
    path_in(p, sizeof p, sub, file);
    swin_load_options o = swin_load_options_default();
    o.arch = arch;
    o.warn = on_warn;
    swin_model *m = (swin_model *)0x1;   /* poison: must be NULL on failure */
    *st = swin_model_load(p, &o, &m);
    return m;
}

/* ---- valid checkpoints */
static swin_model *g_src[3];

static void test_valid(void) {
    for (int v = 1; v <= 2; v++) {
        swin_config c = tiny_config(v);
        CHECK(swin_model_random_config(&c, 1234 + (uint64_t)v, &g_src[v]) == SWIN_OK, "random: %s", swin_last_error());
        if (!g_src[v]) return;
        static const char *const names[] = {"timm", "hf", "ms"};
        for (int L = L_TIMM; L <= L_MS; L++) {
            char sub[32];
            snprintf(sub, sizeof sub, "v%d_%s", v, names[L]);
            write_model_dir(sub, g_src[v], (layout)L, NULL);
            swin_status st;
            g_warns = 0;
            swin_model *m = load(sub, NULL, NULL, &st);
            if (!CHECK(st == SWIN_OK, "%s: %s", sub, swin_last_error())) continue;
            const swin_config *lc = swin_model_config(m);
            CHECK(lc->version == v && lc->num_classes == 5 && lc->img_h == 16 && lc->img_w == 16 &&
                      lc->embed_dim == 8,
                  "%s: config v%d classes %d img %dx%d", sub, lc->version, lc->num_classes, lc->img_h, lc->img_w);
            CHECK(lc->family == (L == L_HF ? SWIN_FAMILY_HF : SWIN_FAMILY_TIMM), "%s: family", sub);
            CHECK(lc->pre_style == (L == L_HF ? SWIN_PRE_HF : SWIN_PRE_TIMM), "%s: pre_style", sub);
            CHECK(!strcmp(swin_model_label(m, 3), "three") && !strcmp(swin_model_label(m, 7), "class_7"),
                  "%s: labels '%s' '%s'", sub, swin_model_label(m, 3), swin_model_label(m, 7));
            CHECK(g_warns == 0, "%s: unexpected warning '%s'", sub, g_warn);
            CHECK(swin_model_param_count(m) == swin_model_param_count(g_src[v]), "%s: params", sub);
            CHECK(m->w.stages[0].blocks[1].shift_h == 1 && m->w.stages[0].blocks[1].shift_w == 1 &&
                  m->w.stages[1].blocks[1].shift_h == 1 && m->w.stages[1].blocks[0].shift_w == 0, "%s: shifts", sub);
            same_weights(m, g_src[v], sub);
            if (L == L_TIMM) CHECK(lc->interp == SWIN_INTERP_BILINEAR && fabsf(lc->std[1] - 0.25f) < 1e-7f, "timm pretrained_cfg");
            swin_model_free(m);
        }
    }
    swin_config ape = tiny_config(1);
    ape.ape = 1;
    CHECK(swin_model_random_config(&ape, 1237, &g_src[0]) == SWIN_OK, "random ape: %s", swin_last_error());
    /* a bare .safetensors with a preset's name is refused politely, with --arch loads geometry from the preset */
    swin_status st;
    swin_model *m = load("v1_timm", "model.safetensors", NULL, &st);
    CHECK(st == SWIN_ERR_ARGUMENT && !m && strstr(swin_last_error(), "needs its architecture"),
          "bare file without arch: %s", swin_last_error());
    /* the same directory without config.json but with options->arch of a matching preset shape
     * is not possible for this tiny model; the preset path is covered by swin_tiny below */
    swin_model *r = NULL;
    CHECK(swin_model_random("swin_tiny_patch4_window7_224", 7, &r) == SWIN_OK && r &&
          swin_model_param_count(r) == 28288354, "random preset: %s", swin_last_error());
    if (r) {
        char p[1024];
        path_in(p, sizeof p, "tiny_bare.safetensors", NULL);
        tlist l = tensors_of(r, L_TIMM);
        swin_st_tensor *ts = calloc((size_t)l.n, sizeof *ts);
        for (int i = 0; i < l.n; i++) ts[i] = l.v[i].t;
        CHECK(swin_st_write(p, ts, l.n) == SWIN_OK, "write bare");
        free(ts);
        free(l.v);
        swin_model *b = load("tiny_bare.safetensors", NULL, "swin_tiny_patch4_window7_224", &st);
        CHECK(st == SWIN_OK && b && !strcmp(swin_model_label(b, 0), "tench"), "bare + arch: %s", swin_last_error());
        if (st == SWIN_OK) { same_weights(b, r, "bare + arch"); swin_model_free(b); }
        b = load("tiny_bare.safetensors", NULL, "swin_bogus_patch4", &st);
        CHECK(st == SWIN_ERR_CONFIG && strstr(swin_last_error(), "unknown architecture 'swin_bogus_patch4'"),
              "bogus arch: %s", swin_last_error());
        swin_model_free(r);
    }
}

/* ---- corruptions of the v1 timm checkpoint */
typedef enum { K_BYTES, K_HEADER, K_TENSORS, K_CONFIG } kind;
typedef struct {
    const char *what;
    kind k;
    const char *arg;          /* K_CONFIG: config text; K_HEADER: tensor to edit */
    int op;                   /* per kind, see corrupt() */
    swin_status want;
    const char *msg;
    int model;                /* source: M_V1 (default), M_V2, M_APE */
} bad_case;

enum { B_CUT_HALF, B_SHORT, B_LEN_BEYOND, B_BAD_JSON, B_NOT_OBJECT };
enum { H_PAST_END, H_REVERSED, H_OVERLAP, H_BYTES, H_DTYPE, H_RANK, H_NEG, H_DROP, H_SHAPE };
enum { T_NAN, T_INF, T_EXTRA, T_BUFFERS, T_F16, T_NO_MODEL, T_NO_CONFIG, T_NONE, T_INDEX, T_COORDS, T_COORDS_OK };
enum { M_V1 = 0, M_V2, M_APE };

/* g_src[1] V1, g_src[2] V2, g_src[0] V1 with an absolute position embedding */
static swin_model *source_of(const bad_case *c) {
    return c->model == M_V2 ? g_src[2] : c->model == M_APE ? g_src[0] : g_src[1];
}

/* a timm config of the tiny model (swin_tinytest: no preset) with these model_args */
#define TIMM_TINY(arch, args) "{\"architecture\": \"" arch "\", \"num_classes\": 5, \"model_args\": {" args "}}"
#define TINY_ARGS(img, patch, win, embed, depths, heads)                                                  \
    "\"img_size\": " img ", \"patch_size\": " patch ", \"window_size\": " win ", \"embed_dim\": " embed \
    ", \"depths\": " depths ", \"num_heads\": " heads

static const bad_case CASES[] = {
    {"truncated file", K_BYTES, NULL, B_CUT_HALF, SWIN_ERR_FORMAT, "file truncated?", M_V1},
    {"file shorter than 8 bytes", K_BYTES, NULL, B_SHORT, SWIN_ERR_FORMAT, "shorter than the 8-byte header length", M_V1},
    {"header length beyond file", K_BYTES, NULL, B_LEN_BEYOND, SWIN_ERR_FORMAT, "exceeds the", M_V1},
    {"invalid header JSON", K_BYTES, NULL, B_BAD_JSON, SWIN_ERR_FORMAT, "header is not valid JSON", M_V1},
    {"header not an object", K_BYTES, NULL, B_NOT_OBJECT, SWIN_ERR_FORMAT, "header is not a JSON object", M_V1},
    {"offsets out of range", K_HEADER, "norm.bias", H_PAST_END, SWIN_ERR_FORMAT, "'norm.bias' data_offsets", M_V1},
    {"offsets reversed", K_HEADER, "norm.bias", H_REVERSED, SWIN_ERR_FORMAT, "are reversed", M_V1},
    {"overlapping tensors", K_HEADER, "norm.bias", H_OVERLAP, SWIN_ERR_FORMAT, "overlap in the data block", M_V1},
    {"byte size != elements x dtype", K_HEADER, "norm.bias", H_BYTES, SWIN_ERR_FORMAT, "'norm.bias' holds", M_V1},
    {"unknown dtype", K_HEADER, "norm.bias", H_DTYPE, SWIN_ERR_FORMAT, "'norm.bias' has unknown dtype 'Q8'", M_V1},
    {"absurd rank", K_HEADER, "norm.bias", H_RANK, SWIN_ERR_FORMAT, "'norm.bias' has rank 12, more than 8", M_V1},
    {"negative dims", K_HEADER, "norm.bias", H_NEG, SWIN_ERR_FORMAT, "'norm.bias' has a negative", M_V1},
    {"missing tensor", K_HEADER, "layers.1.blocks.0.mlp.fc1.weight", H_DROP, SWIN_ERR_TENSOR,
     "missing tensor 'layers.1.blocks.0.mlp.fc1.weight'", M_V1},
    {"wrong shape", K_HEADER, "layers.0.blocks.1.attn.qkv.weight", H_SHAPE, SWIN_ERR_TENSOR,
     "tensor 'layers.0.blocks.1.attn.qkv.weight' has shape [8, 24], expected [24, 8]", M_V1},
    {"NaN weight", K_TENSORS, "layers.1.blocks.1.attn.proj.weight", T_NAN, SWIN_ERR_VALUE,
     "tensor 'layers.1.blocks.1.attn.proj.weight' has a non-finite value (NaN) at index 5", M_V1},
    {"Inf weight", K_TENSORS, "patch_embed.proj.bias", T_INF, SWIN_ERR_VALUE,
     "tensor 'patch_embed.proj.bias' has a non-finite value (Inf) at index 5", M_V1},
    {"config.json invalid JSON", K_CONFIG, "{\"architecture\": \"swin_tinytest\", ", 0, SWIN_ERR_CONFIG,
     "config.json: invalid JSON", M_V1},
    {"config depths a string", K_CONFIG,
     "{\"architecture\": \"swin_tinytest\", \"model_args\": {\"img_size\": 16, \"depths\": \"two\"}}", 0,
     SWIN_ERR_CONFIG, "config.json: field 'depths' must be an array of integers (got a string)", M_V1},
    {"config embed_dim negative", K_CONFIG,
     "{\"architecture\": \"swin_tinytest\", \"model_args\": {\"img_size\": 16, \"patch_size\": 2, \"window_size\": 2,"
     " \"embed_dim\": -8, \"depths\": [2, 2], \"num_heads\": [1, 2]}}", 0, SWIN_ERR_CONFIG,
     "config.json: field 'embed_dim' is -8; it must be a positive integer", M_V1},
    {"config embed_dim a float", K_CONFIG, "{\"model_type\": \"swin\", \"embed_dim\": 8.5}", 0, SWIN_ERR_CONFIG,
     "field 'embed_dim' must be an integer (got a number)", M_V1},
    {"unknown architecture", K_CONFIG, "{\"architecture\": \"resnet50\"}", 0, SWIN_ERR_CONFIG,
     "unknown architecture 'resnet50'", M_V1},
    {"HF unknown model_type", K_CONFIG, "{\"model_type\": \"vit\"}", 0, SWIN_ERR_CONFIG, "model_type 'vit' is not a Swin", M_V1},
    {"labels do not match classes", K_CONFIG,
     "{\"architecture\": \"swin_tinytest\", \"num_classes\": 5, \"label_names\": [\"a\", \"b\"], \"model_args\":"
     " {\"img_size\": 16, \"patch_size\": 2, \"window_size\": 2, \"embed_dim\": 8, \"depths\": [2, 2], \"num_heads\": [1, 2]}}",
     0, SWIN_ERR_CONFIG, "2 labels for 5 classes", M_V1},
    {"classes disagree with the head", K_CONFIG,
     "{\"architecture\": \"swin_tinytest\", \"num_classes\": 6, \"model_args\": {\"img_size\": 16, \"patch_size\": 2,"
     " \"window_size\": 2, \"embed_dim\": 8, \"depths\": [2, 2], \"num_heads\": [1, 2]}}", 0, SWIN_ERR_CONFIG,
     "config.json: num_classes 6 contradicts head.fc.weight [5, 16] (5 classes)", M_V1},
    {"window 3 (padded grids) wants 5x5 position tables", K_CONFIG,
     "{\"architecture\": \"swin_tinytest\", \"model_args\": {\"img_size\": 16, \"patch_size\": 2, \"window_size\": 3,"
     " \"embed_dim\": 8, \"depths\": [2, 2], \"num_heads\": [1, 2]}}", 0, SWIN_ERR_CONFIG,
     "config.json: window_size 3 contradicts layers.0.blocks.0.attn.relative_position_bias_table [9, 1] (window 2)", M_V1},
    {"non-square patch", K_CONFIG, "{\"model_type\": \"swin\", \"patch_size\": [2, 4]}", 0, SWIN_ERR_UNSUPPORTED,
     "field 'patch_size' is 2 x 4; swin supports square patches only", M_V1},
    {"transformers Swin V1 window clamped below its table", K_CONFIG,
     "{\"model_type\": \"swin\", \"image_size\": 16, \"patch_size\": 2, \"window_size\": 8, \"embed_dim\": 8,"
     " \"depths\": [2, 2], \"num_heads\": [1, 2], \"num_labels\": 5}", 0, SWIN_ERR_UNSUPPORTED,
     "stage 1 grid 4x4 clamps the window to 4, below the configured 8", M_V1},
    {"heads do not divide dim", K_CONFIG,
     "{\"architecture\": \"swin_tinytest\", \"model_args\": {\"img_size\": 16, \"patch_size\": 2, \"window_size\": 2,"
     " \"embed_dim\": 8, \"depths\": [2, 2], \"num_heads\": [3, 2]}}", 0, SWIN_ERR_CONFIG,
     "config.json: num_heads[0] 3 does not divide the stage's channels: stage 0 has 8 channels, not divisible by 3 heads", M_V1},
    {"custom arch without img_size", K_CONFIG,
     "{\"architecture\": \"swin_tinytest\", \"model_args\": {\"patch_size\": 2}}", 0, SWIN_ERR_CONFIG,
     "img_h 0 is missing", M_V1},
    {"directory without model.safetensors", K_TENSORS, NULL, T_NO_MODEL, SWIN_ERR_IO, "has no model.safetensors", M_V1},
    {"directory without config.json", K_TENSORS, NULL, T_NO_CONFIG, SWIN_ERR_ARGUMENT, "has no config.json", M_V1},
    /* not errors: extra tensors warn, buffers are ignored silently, F16 converts */
    {"unknown extra tensor", K_TENSORS, NULL, T_EXTRA, SWIN_OK, "ignoring unknown tensor 'foo.bar' [3]", M_V1},
    {"buffers ignored", K_TENSORS, NULL, T_BUFFERS, SWIN_OK, "", M_V1},
    {"F16 checkpoint", K_TENSORS, NULL, T_F16, SWIN_OK, "", M_V1},
    /* the config against the weights (issue 10.6): SWIN_ERR_CONFIG naming the file, the field, the
     * tensor and both values; stated 0 is not "unknown" */
    {"window_size 0 stated", K_CONFIG,
     "{\"model_type\": \"swin\", \"embed_dim\": 8, \"depths\": [2, 2], \"num_heads\": [1, 2], \"window_size\": 0}",
     0, SWIN_ERR_CONFIG, "config.json: field 'window_size' is 0; it must be a positive integer (or be left out)", M_V1},
    {"window_size vs the V1 table, clamped by img_size", K_CONFIG,
     TIMM_TINY("swin_tinytest", TINY_ARGS("4", "2", "2", "8", "[2, 2]", "[1, 2]")), 0, SWIN_ERR_CONFIG,
     "config.json: window_size 2 with img_size 4x4 gives stage 1 1x1 windows, which contradicts "
     "layers.1.blocks.0.attn.relative_position_bias_table [9, 2] (window 2)", M_V1},
    {"window_size vs relative_position_index", K_TENSORS, NULL, T_INDEX, SWIN_ERR_CONFIG,
     "config.json: window_size 2 contradicts layers.0.blocks.1.attn.relative_position_index [9, 9] (window 3)", M_V1},
    {"V2 window_size vs relative_coords_table", K_TENSORS, NULL, T_COORDS, SWIN_ERR_CONFIG,
     "config.json: window_size 2 contradicts layers.1.blocks.0.attn.relative_coords_table [1, 5, 5, 2] (window 3)",
     M_V2},
    {"V2 buffers of the right window", K_TENSORS, NULL, T_COORDS_OK, SWIN_OK, "", M_V2},
    {"num_heads vs the V1 table", K_CONFIG,
     TIMM_TINY("swin_tinytest", TINY_ARGS("16", "2", "2", "8", "[2, 2]", "[2, 2]")), 0, SWIN_ERR_CONFIG,
     "config.json: num_heads[0] 2 contradicts layers.0.blocks.0.attn.relative_position_bias_table [9, 1] (1 heads)", M_V1},
    {"V2 num_heads vs logit_scale", K_CONFIG,
     TIMM_TINY("swinv2_tinytest", TINY_ARGS("16", "2", "2", "8", "[2, 2]", "[1, 1]")), 0, SWIN_ERR_CONFIG,
     "config.json: num_heads[1] 1 contradicts layers.1.blocks.0.attn.logit_scale [2, 1, 1] (2 heads)", M_V2},
    {"depths: a block missing", K_CONFIG,
     TIMM_TINY("swin_tinytest", TINY_ARGS("16", "2", "2", "8", "[2, 3]", "[1, 2]")), 0, SWIN_ERR_CONFIG,
     "config.json: depths[1] 3 contradicts the checkpoint's 2 blocks in stage 1 (it has no layers.1.blocks.2.*)", M_V1},
    {"depths: an extra block", K_CONFIG,
     TIMM_TINY("swin_tinytest", TINY_ARGS("16", "2", "2", "8", "[2, 1]", "[1, 2]")), 0, SWIN_ERR_CONFIG,
     "config.json: depths[1] 1 contradicts the checkpoint's 2 blocks in stage 1 (it has layers.1.blocks.1.*)", M_V1},
    {"depths: an extra stage", K_CONFIG,
     "{\"architecture\": \"swin_tinytest\", \"model_args\": {" TINY_ARGS("16", "2", "2", "8", "[2]", "[1]") "}}",
     0, SWIN_ERR_CONFIG,
     "config.json: depths [2] (1 stage) contradicts the checkpoint's 2 stages (it has layers.1.blocks.*)", M_V1},
    {"embed_dim vs the patch embedding", K_CONFIG,
     TIMM_TINY("swin_tinytest", TINY_ARGS("16", "2", "2", "16", "[2, 2]", "[1, 2]")), 0, SWIN_ERR_CONFIG,
     "config.json: embed_dim 16 contradicts patch_embed.proj.weight [8, 3, 2, 2] (embed_dim 8)", M_V1},
    {"patch_size vs the patch embedding", K_CONFIG,
     TIMM_TINY("swin_tinytest", TINY_ARGS("16", "4", "2", "8", "[2, 2]", "[1, 2]")), 0, SWIN_ERR_CONFIG,
     "config.json: patch_size 4 contradicts patch_embed.proj.weight [8, 3, 2, 2] (patch 2x2)", M_V1},
    {"HF num_labels vs the head", K_CONFIG,
     "{\"model_type\": \"swin\", \"embed_dim\": 8, \"depths\": [2, 2], \"num_heads\": [1, 2], \"window_size\": 2,"
     " \"image_size\": 16, \"patch_size\": 2, \"num_labels\": 7}", 0, SWIN_ERR_CONFIG,
     "config.json: num_labels 7 contradicts head.fc.weight [5, 16] (5 classes)", M_V1},
    {"qkv_bias false vs the biases", K_CONFIG,
     TIMM_TINY("swin_tinytest", TINY_ARGS("16", "2", "2", "8", "[2, 2]", "[1, 2]") ", \"qkv_bias\": false"), 0,
     SWIN_ERR_CONFIG, "config.json: qkv_bias false contradicts layers.0.blocks.0.attn.qkv.bias [24]", M_V1},
    {"ape true without absolute_pos_embed", K_CONFIG,
     TIMM_TINY("swin_tinytest", TINY_ARGS("16", "2", "2", "8", "[2, 2]", "[1, 2]") ", \"ape\": true"), 0,
     SWIN_ERR_CONFIG, "config.json: ape true contradicts the checkpoint: it has no absolute_pos_embed", M_V1},
    {"ape checkpoint loads", K_TENSORS, NULL, T_NONE, SWIN_OK, "", M_APE},
    {"ape false vs absolute_pos_embed", K_CONFIG,
     TIMM_TINY("swin_tinytest", TINY_ARGS("16", "2", "2", "8", "[2, 2]", "[1, 2]") ", \"ape\": false"), 0,
     SWIN_ERR_CONFIG, "config.json: ape false contradicts absolute_pos_embed [1, 64, 8] (an absolute position embedding)",
     M_APE},
    {"img_size vs absolute_pos_embed", K_CONFIG,
     TIMM_TINY("swin_tinytest", TINY_ARGS("32", "2", "2", "8", "[2, 2]", "[1, 2]") ", \"ape\": true"), 0,
     SWIN_ERR_CONFIG, "config.json: img_size 32x32 (a 16x16 patch grid, 256 positions) contradicts "
     "absolute_pos_embed [1, 64, 8] (64 positions)", M_APE},
};

static uint16_t to_half(float f) {   /* exact for values representable in F16 (test data below) */
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t sign = (b >> 16) & 0x8000u;
    int e = (int)((b >> 23) & 0xff) - 127 + 15;
    if (f == 0) return (uint16_t)sign;
    if (e <= 0) return (uint16_t)(sign | (uint32_t)lrintf(fabsf(f) * 16777216.0f));   /* subnormal */
    return (uint16_t)(sign | ((uint32_t)e << 10) | ((b >> 13) & 0x3ffu));
}

/* header of file p as cJSON plus the data block */
static void corrupt_header(const char *p, const bad_case *c) {
    size_t len;
    unsigned char *all = tu_read_file(p, &len);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | all[i];
    cJSON *root = cJSON_ParseWithLength((const char *)all + 8, (size_t)hl);
    cJSON *e = cJSON_GetObjectItem(root, c->arg), *off = cJSON_GetObjectItem(e, "data_offsets");
    cJSON *shape = cJSON_GetObjectItem(e, "shape");
    double b = cJSON_GetArrayItem(off, 0)->valuedouble, en = cJSON_GetArrayItem(off, 1)->valuedouble;
    switch (c->op) {
    case H_PAST_END: cJSON_SetNumberValue(cJSON_GetArrayItem(off, 1), (double)(len * 2)); break;
    case H_REVERSED:
        cJSON_SetNumberValue(cJSON_GetArrayItem(off, 0), en);
        cJSON_SetNumberValue(cJSON_GetArrayItem(off, 1), b);
        break;
    case H_OVERLAP:
        cJSON_SetNumberValue(cJSON_GetArrayItem(off, 0), b - 4);
        cJSON_SetNumberValue(cJSON_GetArrayItem(off, 1), en - 4);
        break;
    case H_BYTES: cJSON_SetNumberValue(cJSON_GetArrayItem(off, 1), en - 4); break;
    case H_DTYPE: cJSON_ReplaceItemInObject(e, "dtype", cJSON_CreateString("Q8")); break;
    case H_RANK:
        for (int i = 0; i < 11; i++) cJSON_AddItemToArray(shape, cJSON_CreateNumber(1));
        break;
    case H_NEG: cJSON_SetNumberValue(cJSON_GetArrayItem(shape, 0), -32); break;
    case H_DROP: cJSON_DeleteItemFromObject(root, c->arg); break;
    case H_SHAPE: {   /* transpose the recorded shape: same bytes, wrong layout */
        double r = cJSON_GetArrayItem(shape, 0)->valuedouble, q = cJSON_GetArrayItem(shape, 1)->valuedouble;
        cJSON_SetNumberValue(cJSON_GetArrayItem(shape, 0), q);
        cJSON_SetNumberValue(cJSON_GetArrayItem(shape, 1), r);
        break;
    }
    }
    char *h = cJSON_PrintUnformatted(root);
    size_t nh = strlen(h);
    unsigned char *out = malloc(8 + nh);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)((uint64_t)nh >> (8 * i));
    memcpy(out + 8, h, nh);
    write_bytes(p, out, 8 + nh, all + 8 + hl, len - 8 - (size_t)hl);
    free(out);
    free(h);
    cJSON_Delete(root);
    free(all);
}

static void corrupt_bytes(const char *p, int op) {
    size_t len;
    unsigned char *all = tu_read_file(p, &len);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | all[i];
    if (op == B_CUT_HALF) write_bytes(p, all, 8 + (size_t)hl + (len - 8 - (size_t)hl) / 2, NULL, 0);
    if (op == B_SHORT) write_bytes(p, all, 5, NULL, 0);
    if (op == B_LEN_BEYOND) {
        for (int i = 0; i < 8; i++) all[i] = (unsigned char)(((uint64_t)len) >> (8 * i));
        write_bytes(p, all, len, NULL, 0);
    }
    if (op == B_BAD_JSON || op == B_NOT_OBJECT) {
        const char *h = op == B_BAD_JSON ? "{\"norm.bias\": {\"dtype\": [" : "[\"norm.bias\", 1, 2]    ";
        memset(all + 8, ' ', (size_t)hl);
        memcpy(all + 8, h, strlen(h));
        write_bytes(p, all, len, NULL, 0);
    }
    free(all);
}

/* rewrite the checkpoint from the source model with a change to the tensor list */
static void corrupt_tensors(const char *sub, const bad_case *c) {
    char p[1024];
    tlist l = tensors_of(source_of(c), L_TIMM);
    swin_st_tensor *ts = calloc((size_t)l.n + 4, sizeof *ts);
    static const float extra[3] = {1, 2, 3};
    static const int64_t idx[81] = {0};
    static const float coords[50] = {0};
    float *poison = NULL;
    uint16_t *halves = NULL;
    int n = l.n;
    for (int i = 0; i < l.n; i++) ts[i] = l.v[i].t;
    for (int i = 0; c->arg && i < n; i++)
        if (!strcmp(ts[i].name, c->arg)) {   /* a copy of the tensor with one bad value */
            size_t k = 1;
            for (int d = 0; d < ts[i].rank; d++) k *= (size_t)ts[i].shape[d];
            poison = malloc(k * sizeof *poison);
            memcpy(poison, ts[i].data, k * sizeof *poison);
            poison[5] = c->op == T_NAN ? NAN : -INFINITY;
            ts[i].data = poison;
        }
    if (c->op == T_EXTRA)
        ts[n++] = (swin_st_tensor){.name = "foo.bar", .dtype = SWIN_ST_F32, .rank = 1, .shape = {3}, .data = extra};
    if (c->op == T_BUFFERS) {
        ts[n++] = (swin_st_tensor){.name = "layers.0.blocks.0.attn.relative_position_index", .dtype = SWIN_ST_I64,
                                   .rank = 2, .shape = {4, 4}, .data = idx};
        ts[n++] = (swin_st_tensor){.name = "layers.0.blocks.1.attn_mask", .dtype = SWIN_ST_F32, .rank = 1,
                                   .shape = {3}, .data = extra};
    }
    if (c->op == T_INDEX)   /* a 3x3 window's index in a model of 2x2 windows */
        ts[n++] = (swin_st_tensor){.name = "layers.0.blocks.1.attn.relative_position_index", .dtype = SWIN_ST_I64,
                                   .rank = 2, .shape = {9, 9}, .data = idx};
    if (c->op == T_COORDS || c->op == T_COORDS_OK) {
        int64_t side = c->op == T_COORDS ? 5 : 3;
        ts[n++] = (swin_st_tensor){.name = "layers.1.blocks.0.attn.relative_coords_table", .dtype = SWIN_ST_F32,
                                   .rank = 4, .shape = {1, side, side, 2}, .data = coords};
        ts[n++] = (swin_st_tensor){.name = "layers.1.blocks.0.attn.relative_position_index", .dtype = SWIN_ST_I64,
                                   .rank = 2, .shape = {4, 4}, .data = idx};
    }
    if (c->op == T_F16) {   /* values rounded to F16 first, so the expected F32 is exact */
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            size_t k = 1;
            for (int d = 0; d < ts[i].rank; d++) k *= (size_t)ts[i].shape[d];
            total += k;
        }
        halves = malloc(total * sizeof *halves);
        size_t o = 0;
        for (int i = 0; i < n; i++) {
            size_t k = 1;
            for (int d = 0; d < ts[i].rank; d++) k *= (size_t)ts[i].shape[d];
            float *src = (float *)ts[i].data;
            for (size_t j = 0; j < k; j++) {
                /* round the source in place to what F16 can hold, then store its bits */
                src[j] = (float)((double)lrintf(src[j] * 1024.0f) / 1024.0);
                halves[o + j] = to_half(src[j]);
            }
            ts[i].dtype = SWIN_ST_F16;
            ts[i].data = halves + o;
            o += k;
        }
    }
    path_in(p, sizeof p, sub, "model.safetensors");
    if (c->op == T_NO_MODEL) remove(p);
    else CHECK(swin_st_write(p, ts, n) == SWIN_OK, "%s: write", c->what);
    if (c->op == T_NO_CONFIG) {
        path_in(p, sizeof p, sub, "config.json");
        remove(p);
    }
    free(halves);
    free(poison);
    free(ts);
    free(l.v);
}

static void test_corrupt(void) {
    if (!g_src[1]) return;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const bad_case *c = &CASES[i];
        char sub[32], p[1024];
        snprintf(sub, sizeof sub, "bad%02zu", i);
        swin_model *src = source_of(c);
        if (!CHECK(src != NULL, "%s: no source model", c->what)) continue;
        write_model_dir(sub, src, L_TIMM, c->k == K_CONFIG ? c->arg : NULL);
        path_in(p, sizeof p, sub, "model.safetensors");
        if (c->k == K_BYTES) corrupt_bytes(p, c->op);
        if (c->k == K_HEADER) corrupt_header(p, c);
        if (c->k == K_TENSORS) corrupt_tensors(sub, c);
        g_warns = 0;
        g_warn[0] = '\0';
        swin_status st;
        swin_model *m = load(sub, NULL, NULL, &st);
        const char *msg = st == SWIN_OK ? g_warn : swin_last_error();
        CHECK(st == c->want, "%s: status '%s', expected '%s' (%s)", c->what, swin_status_str(st),
              swin_status_str(c->want), swin_last_error());
        CHECK(strstr(msg, c->msg) != NULL, "%s: message '%s' lacks '%s'", c->what, msg, c->msg);
        if (st != SWIN_OK) {
            CHECK(m == NULL, "%s: model not NULL on failure", c->what);
            CHECK(c->k == K_CONFIG || strstr(msg, sub) != NULL, "%s: message '%s' does not name the file", c->what, msg);
            continue;
        }
        CHECK(c->op == T_EXTRA ? g_warns == 1 : g_warns == 0, "%s: %d warnings (%s)", c->what, g_warns, g_warn);
        if (c->op == T_F16) same_weights(m, g_src[1], "F16 checkpoint");
        swin_model_free(m);
    }
}

/* ---- the config checks pass on every real fixture: tests/data/ref_* and weights/digits */
static void test_fixtures(const char *src) {
    char dir[1024], p[1300];
    snprintf(dir, sizeof dir, "%s/tests/data", src);
    DIR *d = opendir(dir);
    if (!CHECK(d != NULL, "cannot open %s", dir)) return;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "ref_", 4)) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        swin_load_options o = swin_load_options_default();
        o.warn = on_warn;
        g_warns = 0;
        swin_model *m = NULL;
        CHECK(swin_model_load(p, &o, &m) == SWIN_OK && g_warns == 0, "fixture %s: %s (warning: %s)", e->d_name,
              swin_last_error(), g_warns ? g_warn : "none");
        swin_model_free(m);
        n++;
    }
    closedir(d);
    CHECK(n >= 19, "expected at least 19 fixtures tests/data/ref_*, found %d", n);
    snprintf(p, sizeof p, "%s/weights/digits/model.safetensors", src);
    struct stat sb;
    if (stat(p, &sb) == 0) {
        snprintf(p, sizeof p, "%s/weights/digits", src);
        swin_model *m = NULL;
        CHECK(swin_model_load(p, NULL, &m) == SWIN_OK, "weights/digits: %s", swin_last_error());
        swin_model_free(m);
    }
}

/* swin_read_text (config.json, preprocessor_config.json): a buffer that grows with the file,
 * every byte read whatever the size, and a file over the limit refused */
static void test_read_text(void) {
    static char big[200000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
    char path[700];
    path_in(path, sizeof path, "", "big.txt");
    write_bytes(path, big, sizeof big, NULL, 0);
    static const struct { size_t max; swin_status want; } CASES[] = {
        {sizeof big, SWIN_OK}, {64 << 20, SWIN_OK}, {65535, SWIN_ERR_FORMAT}, {sizeof big - 1, SWIN_ERR_FORMAT}};
    for (int i = 0; i < 4; i++) {
        char *text = NULL;
        size_t len = 0;
        swin_status st = swin_read_text(path, CASES[i].max, &text, &len);
        int ok = st == CASES[i].want &&
                 (st != SWIN_OK || (len == sizeof big && !memcmp(text, big, sizeof big) && text[len] == '\0'));
        printf("%s read_text of %zu bytes, max %zu: %s\n", ok ? "ok  " : "FAIL", sizeof big, CASES[i].max,
               st == SWIN_OK ? "read whole" : swin_last_error());
        CHECK(ok, "swin_read_text max %zu: status %d, %zu bytes", CASES[i].max, (int)st, len);
        free(text);
    }
}

int main(int argc, char **argv) {
    if (tu_tmpdir(g_dir, sizeof g_dir, "swin_malformed")) return 1;
    test_read_text();
    test_valid();
    test_corrupt();
    test_fixtures(argc > 1 ? argv[1] : ".");
    swin_model_free(g_src[0]);
    swin_model_free(g_src[1]);
    swin_model_free(g_src[2]);
    tu_rmtree(g_dir);
    return tu_finish("test_malformed");
}
