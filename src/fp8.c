/* fp8.c - E4M3 conversion, the FP8 sites of a model, weight quantisation and the scales file
 * (src/fp8.h says what runs in FP8 and the arithmetic; README "FP8" the file format).
 * Test: tests/test_fp8.c (conversion against a brute-force nearest search, sites, the file),
 * tests/cli_fp8.sh (swin calibrate, --scales).
 */
#define _POSIX_C_SOURCE 200809L /* fdopen */
#include "fp8.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fp8_session.h"
#include "layers.h"
#include "internal.h"

#define SCALES_FORMAT "swin-fp8-scales"
#define SCALES_VERSION 2   /* written; 1 (no channel scales) is read too */
/* Swin-L, the largest: 54,144 qkv output channels (24 blocks, N up to 4608), each with an amax
 * and a scale of ~21 printed bytes (as in the digits model's file): about 2.5 MB */
#define SCALES_MAX_BYTES (16u << 20)

// ---- E4M3: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities, S.1111.111 is NaN.
// Normal: (1 + m/8) 2^(e-7), e = 1..15 (e = 15 with m = 7 is NaN), largest 448 = 0x7E.
// Subnormal (e = 0): m/8 2^-6 = m 2^-9.

uint8_t swin_e4m3_from_float(float x) {
    if (isnan(x)) return 0x7F;
    uint8_t sign = signbit(x) ? 0x80 : 0x00;
    float a = fabsf(x);
    if (a >= SWIN_E4M3_MAX) return sign | 0x7E;      /* saturate (448 itself is 0x7E) */
    if (a < 0x1p-6f) {                                /* subnormal: a multiple of 2^-9 */
        int q = (int)nearbyintf(a * 512.0f);          /* exact scaling, ties to even; 8 = 2^-6 */
        return sign | (uint8_t)q;                     /* q = 8 is the code of the smallest normal */
    }
    int e2;
    float f = frexpf(a, &e2);                         /* a = f 2^e2, f in [0.5, 1) */
    int e = e2 - 1;                                   /* a = (2f) 2^e, 2f in [1, 2) */
    int m = (int)nearbyintf((2.0f * f - 1.0f) * 8.0f);   /* exact, ties to even */
    if (m == 8) { m = 0; e++; }                       /* rounded up to the next binade */
    return sign | (uint8_t)(((e + 7) << 3) | m);      /* e <= 8 here since a < 448 */
}

float swin_e4m3_to_float(uint8_t v) {
    int e = (v >> 3) & 15, m = v & 7;
    float a;
    if (e == 15 && m == 7) a = NAN;
    else if (e == 0) a = ldexpf((float)m, -9);
    else a = ldexpf(1.0f + (float)m / 8.0f, e - 7);
    return v & 0x80 ? -a : a;
}

// ---- sites

/* the sites of m without filling them: a merge per stage after the first, four per block */
static int count_sites(const swin_model *m) {
    int n = 0;
    for (int s = 0; s < m->cfg.num_stages; s++) n += m->w.stages[s].has_merge + 4 * m->w.stages[s].depth;
    return n;
}

int swin_fp8_sites(const swin_model *m, swin_fp8_site *out) {
    int n = 0, off = count_sites(m);   /* the qkv output channels' entries follow the sites' */
    for (int s = 0; s < m->cfg.num_stages; s++) {
        const swin_stage_w *st = &m->w.stages[s];
        if (st->has_merge) {
            if (out) out[n] = (swin_fp8_site){SWIN_SITE_REDUCTION, s, -1, &st->merge.reduction, 4 * m->w.stages[s - 1].dim,
                                         st->dim, -1};
            n++;
        }
        for (int b = 0; b < st->depth; b++) {
            const swin_block_w *bw = &st->blocks[b];
            if (out) {
                out[n] = (swin_fp8_site){SWIN_SITE_QKV, s, b, &bw->qkv, st->dim, 3 * st->dim, off};
                out[n + 1] = (swin_fp8_site){SWIN_SITE_PROJ, s, b, &bw->proj, st->dim, st->dim, -1};
                out[n + 2] = (swin_fp8_site){SWIN_SITE_FC1, s, b, &bw->fc1, st->dim, st->hidden, -1};
                out[n + 3] = (swin_fp8_site){SWIN_SITE_FC2, s, b, &bw->fc2, st->hidden, st->dim, -1};
            }
            n += 4;
            off += 3 * st->dim;
        }
    }
    return n;
}

int swin_fp8_scale_count(const swin_model *m) {
    int n = count_sites(m);
    for (int s = 0; s < m->cfg.num_stages; s++) n += m->w.stages[s].depth * 3 * m->w.stages[s].dim;
    return n;
}

/* SWIN_FP8_QKV (read once; swin_fp8_qkv_e4m3_block) */
static int qkv_e4m3_on(void) {
    static int on = -1;
    if (on < 0) on = swin_env_on("SWIN_FP8_QKV", 1);
    return on;
}

float swin_fp8_qkv_scale(float so) {
    float x = fminf(fmaxf(so, 0x1p-14f), 65504.0f);   /* fp16's normal range */
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u += 0x0FFFu + ((u >> 13) & 1u);   /* 24 -> 11 significant bits, ties to even */
    u &= ~0x1FFFu;
    memcpy(&x, &u, sizeof x);
    return fminf(x, 65504.0f);
}

void swin_fp8_qkv_scales(const float *so, int C, int hd, float *out) {
    for (int n = C; n < 3 * C; n++) out[n] = swin_fp8_qkv_scale(so[n]);
    for (int c0 = 0; hd > 0 && c0 < C; c0 += hd) {
        float f = 0.0f;
        for (int c = c0; c < c0 + hd && c < C; c++) f = fmaxf(f, so[c] * out[C + c]);
        f = fminf(fmaxf(f, 0x1p-100f), 0x1p100f);
        for (int c = c0; c < c0 + hd && c < C; c++) out[c] = f / out[C + c];
    }
}

int swin_fp8_qkv_e4m3_block(const swin_dims *d) {
    const int n = swin_dims_n(d);
    return qkv_e4m3_on() && d->version == 1 && d->head_dim == 32 && n >= 49 && n <= 64 && d->C % 16 == 0;
}

void swin_fp8_site_name(const swin_fp8_site *s, char *buf, size_t size) {
    static const char *leaf[] = {"downsample.reduction", "attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2"};
    if (s->kind == SWIN_SITE_REDUCTION) snprintf(buf, size, "layers.%d.%s", s->stage, leaf[s->kind]);
    else snprintf(buf, size, "layers.%d.blocks.%d.%s", s->stage, s->block, leaf[s->kind]);
}

void swin_fp8_quantize_weights(const swin_linear_w *w, int N, int K, uint8_t *wq, float *ws) {
    for (int n = 0; n < N; n++) {
        const float *row = w->w + (size_t)n * K;
        float amax = 0.0f;
        for (int k = 0; k < K; k++) amax = fmaxf(amax, fabsf(row[k]));
        ws[n] = amax > 0.0f ? amax / SWIN_E4M3_MAX : 1.0f;
        float inv = 1.0f / ws[n];
        for (int k = 0; k < K; k++) wq[(size_t)n * K + k] = swin_e4m3_from_float(row[k] * inv);
    }
}

/* Input scales must have a finite inverse too (x * (1 / s)): at least FLT_MIN. */
static int scale_ok(double s) { return isfinite(s) && s >= FLT_MIN; }

void swin_fp8_scales_from_amax(int n, const float *amax, float margin, float *scale) {
    for (int i = 0; i < n; i++) {
        float s = margin * amax[i] / SWIN_E4M3_MAX;
        scale[i] = amax[i] > 0.0f ? fmaxf(s, FLT_MIN) : 1.0f;   /* a site that saw only zeros: 1 */
    }
}

// ---- the scales file

/* The model's sites and their names, for the file's messages. */
typedef struct {
    int n;
    swin_fp8_site *site;   /* [n] */
    char (*name)[64];      /* [n] */
} site_table;

static void table_free(site_table *t) {
    free(t->site);
    free(t->name);
}

static swin_status table_make(const swin_model *m, const char *path, site_table *t) {
    t->n = swin_fp8_sites(m, NULL);
    t->site = malloc(sizeof *t->site * (size_t)(t->n > 0 ? t->n : 1));
    t->name = calloc((size_t)(t->n > 0 ? t->n : 1), sizeof *t->name);
    if (!t->site || !t->name) {
        table_free(t);
        return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path);
    }
    swin_fp8_sites(m, t->site);
    for (int i = 0; i < t->n; i++) swin_fp8_site_name(&t->site[i], t->name[i], sizeof t->name[i]);
    return SWIN_OK;
}

/* The site of entry i of a scale / amax array, and *channel its output channel (-1: the input). */
static int table_entry(const site_table *t, int i, int *channel) {
    *channel = -1;
    if (i < t->n) return i;
    int k = 0;
    while (k < t->n && !(t->site[k].out_off >= 0 && i < t->site[k].out_off + t->site[k].N)) k++;
    *channel = i - t->site[k].out_off;   /* i < swin_fp8_scale_count: the last qkv site at most */
    return k;
}

swin_status swin_fp8_check_amax(const swin_model *m, const float *amax, const char *where) {
    int n = swin_fp8_scale_count(m);
    for (int i = 0; i < n; i++) {
        if (isfinite(amax[i])) continue;
        site_table t;
        SWIN_TRY(table_make(m, where, &t));
        int channel, k = table_entry(&t, i, &channel);
        swin_status st = channel < 0
            ? swin_fail(SWIN_ERR_VALUE, "%s: site '%s' saw a non-finite value (amax %g): no scale", where, t.name[k],
                        (double)amax[i])
            : swin_fail(SWIN_ERR_VALUE, "%s: site '%s' output channel %d saw a non-finite value (amax %g): no scale",
                        where, t.name[k], channel, (double)amax[i]);
        table_free(&t);
        return st;
    }
    return SWIN_OK;
}

/* the version (1 or 2) into *version */
static swin_status check_header(const cJSON *root, const char *path, int *version) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsString(f) || strcmp(f->valuestring, SCALES_FORMAT))
        return swin_fail(SWIN_ERR_FORMAT, "%s: key 'format' is not \"" SCALES_FORMAT "\" (not an FP8 scales file)", path);
    if (!cJSON_IsNumber(v) || (v->valuedouble != 1 && v->valuedouble != SCALES_VERSION))
        return swin_fail(SWIN_ERR_FORMAT, "%s: key 'version' is not 1 or %d (a scales file this swin cannot read)", path,
                         SCALES_VERSION);
    if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "sites")))
        return swin_fail(SWIN_ERR_FORMAT, "%s: key 'sites' is missing or not an object", path);
    *version = (int)v->valuedouble;
    return SWIN_OK;
}

/* a qkv site's "out_scale" (version 2), N good numbers, into scale[0 .. N) */
static swin_status read_out_scale(const cJSON *a, const char *path, const char *site, int N, float *scale) {
    if (!cJSON_IsArray(a))
        return swin_fail(SWIN_ERR_FORMAT, "%s: site '%s': 'out_scale' is not an array", path, site);
    int found = cJSON_GetArraySize(a), j = 0;
    if (found != N)
        return swin_fail(SWIN_ERR_FORMAT, "%s: site '%s': 'out_scale' has %d entries, expected %d (q, k and v's "
                         "channels)", path, site, found, N);
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        if (!cJSON_IsNumber(e) || !scale_ok(e->valuedouble))
            return swin_fail(SWIN_ERR_FORMAT, "%s: site '%s': 'out_scale' entry %d must be a finite number >= %g", path,
                             site, j, (double)FLT_MIN);
        scale[j] = (float)e->valuedouble;
        if (!scale_ok(scale[j]))   /* a double that rounds to 0 or inf as a float */
            return swin_fail(SWIN_ERR_FORMAT, "%s: site '%s': 'out_scale' entry %d, %g, is out of the float range",
                             path, site, j, e->valuedouble);
        j++;
    }
    return SWIN_OK;
}

static int site_index(const site_table *t, const char *name) {
    int i = 0;
    while (i < t->n && strcmp(t->name[i], name)) i++;
    return i;
}

/* every entry of "sites" is a site of the model, once, and every site is there: checked before
 * the values, so that another model's file is told by its names */
static swin_status match_sites(const cJSON *sites, const char *path, const site_table *t, char *seen) {
    const cJSON *e;
    cJSON_ArrayForEach(e, sites) {
        int i = site_index(t, e->string);
        if (i == t->n) return swin_fail(SWIN_ERR_FORMAT, "%s: site '%s' is not a site of this model", path, e->string);
        if (seen[i]) return swin_fail(SWIN_ERR_FORMAT, "%s: site '%s' appears twice", path, e->string);
        seen[i] = 1;
    }
    for (int i = 0; i < t->n; i++)
        if (!seen[i]) return swin_fail(SWIN_ERR_FORMAT, "%s: site '%s' is missing", path, t->name[i]);
    return SWIN_OK;
}

/* each site's good scale (into scale[index]) and, from version 2 on, a qkv site's channel scales
 * when it has them (into scale[out_off ..)) */
static swin_status read_sites(const cJSON *sites, const char *path, const site_table *t, int version, float *scale) {
    const cJSON *e;
    cJSON_ArrayForEach(e, sites) {
        int i = site_index(t, e->string);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "scale");
        if (!cJSON_IsNumber(s) || !scale_ok(s->valuedouble))
            return swin_fail(SWIN_ERR_FORMAT, "%s: site '%s': 'scale' must be a finite number >= %g", path, e->string,
                             (double)FLT_MIN);
        scale[i] = (float)s->valuedouble;
        if (!scale_ok(scale[i]))   /* a double that rounds to 0 or inf as a float */
            return swin_fail(SWIN_ERR_FORMAT, "%s: site '%s': 'scale' %g is out of the float range", path, e->string,
                             s->valuedouble);
        const cJSON *out = version >= 2 ? cJSON_GetObjectItemCaseSensitive(e, "out_scale") : NULL;
        if (!out) continue;   /* no channel scales: q, k, v stay 16-bit */
        if (t->site[i].out_off < 0)
            return swin_fail(SWIN_ERR_FORMAT, "%s: site '%s': 'out_scale' on a site that is not an attn.qkv (only q, "
                             "k and v have channel scales)", path, e->string);
        SWIN_TRY(read_out_scale(out, path, e->string, t->site[i].N, scale + t->site[i].out_off));
    }
    return SWIN_OK;
}

swin_status swin_fp8_scales_read(const swin_model *m, const char *path, float *scale) {
    if (!m || !path || !scale) return swin_fail(SWIN_ERR_ARGUMENT, "swin_fp8_scales_read: NULL argument");
    char *text = NULL, *seen = NULL;
    site_table t = {0};
    size_t len = 0;
    int version = 0, n = swin_fp8_sites(m, NULL);
    SWIN_TRY(swin_read_text(path, SCALES_MAX_BYTES, &text, &len));
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    swin_status st = SWIN_OK;
    if (!root)
        st = swin_fail(SWIN_ERR_FORMAT, "%s: malformed JSON near byte %ld", path, (long)(end ? end - text : 0));
    else if (!cJSON_IsObject(root))
        st = swin_fail(SWIN_ERR_FORMAT, "%s: not a JSON object", path);
    if (st == SWIN_OK) st = check_header(root, path, &version);
    if (st == SWIN_OK) st = table_make(m, path, &t);
    if (st == SWIN_OK && !(seen = calloc((size_t)n + 1, 1))) st = swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path);
    if (st == SWIN_OK) {
        /* channel scales 0 unless the file has them */
        memset(scale + n, 0, sizeof(float) * (size_t)(swin_fp8_scale_count(m) - n));
        const cJSON *sites = cJSON_GetObjectItemCaseSensitive(root, "sites");
        st = match_sites(sites, path, &t, seen);
        if (st == SWIN_OK) st = read_sites(sites, path, &t, version, scale);
    }
    cJSON_Delete(root);
    free(text);
    table_free(&t);
    free(seen);
    return st;
}

/* text into path through a temporary file beside it, renamed over path when complete (as
 * safetensors_write.c does); a path that exists and is not a regular file (/dev/stdout) is written
 * directly. */
static swin_status write_atomic(const char *path, const char *text) {
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        FILE *f = fopen(path, "w");
        int ok = f && fputs(text, f) >= 0;
        if (f && fclose(f) != 0) ok = 0;
        return ok ? SWIN_OK : swin_fail(SWIN_ERR_IO, "%s: cannot write (%s)", path, strerror(errno));
    }
    size_t len = strlen(path) + 48;
    char *tmp = malloc(len);
    if (!tmp) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path);
    int fd = -1;
    for (int k = 0; k < 100 && fd < 0; k++) {
        snprintf(tmp, len, "%s.tmp-%ld-%d", path, (long)getpid(), k);
        if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666)) < 0 && errno != EEXIST) break;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) { close(fd); unlink(tmp); }
        free(tmp);
        return swin_fail(SWIN_ERR_IO, "%s: cannot create (%s)", path, strerror(e));
    }
    int ok = fputs(text, f) >= 0;
    ok &= fclose(f) == 0;
    ok = ok && rename(tmp, path) == 0;
    int e = errno;
    if (!ok) unlink(tmp);
    free(tmp);
    return ok ? SWIN_OK : swin_fail(SWIN_ERR_IO, "%s: cannot write (%s)", path, strerror(e));
}

/* a qkv site's output channels: their amax and scales, beside the site's own */
static void add_out_arrays(cJSON *e, const swin_fp8_site *site, const float *amax, const float *scale) {
    cJSON_AddItemToObject(e, "out_amax", cJSON_CreateFloatArray(amax + site->out_off, site->N));
    cJSON_AddItemToObject(e, "out_scale", cJSON_CreateFloatArray(scale + site->out_off, site->N));
}

swin_status swin_fp8_scales_write(const swin_model *m, const char *path, const float *amax, float margin,
                                  const char *source, int images) {
    if (!m || !path || !amax || !source) return swin_fail(SWIN_ERR_ARGUMENT, "swin_fp8_scales_write: NULL argument");
    if (!(margin > 0.0f) || !isfinite(margin))
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: margin %g must be a finite number > 0", path, (double)margin);
    SWIN_TRY(swin_fp8_check_amax(m, amax, path));
    int count = swin_fp8_scale_count(m);
    site_table t;
    SWIN_TRY(table_make(m, path, &t));
    float *scale = malloc(sizeof(float) * (size_t)count);
    if (!scale) {
        table_free(&t);
        return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path);
    }
    swin_fp8_scales_from_amax(count, amax, margin, scale);
    cJSON *root = cJSON_CreateObject(), *sites;
    cJSON_AddStringToObject(root, "format", SCALES_FORMAT);
    cJSON_AddNumberToObject(root, "version", SCALES_VERSION);
    cJSON_AddStringToObject(root, "arch", m->cfg.arch);
    cJSON_AddNumberToObject(root, "margin", margin);
    cJSON_AddStringToObject(root, "source", source);
    cJSON_AddNumberToObject(root, "images", images);
    sites = cJSON_AddObjectToObject(root, "sites");
    for (int i = 0; i < t.n; i++) {
        cJSON *e = cJSON_AddObjectToObject(sites, t.name[i]);
        cJSON_AddNumberToObject(e, "amax", amax[i]);
        cJSON_AddNumberToObject(e, "scale", scale[i]);
        if (t.site[i].out_off >= 0) add_out_arrays(e, &t.site[i], amax, scale);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    table_free(&t);
    free(scale);
    if (!text) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path);
    swin_status st = write_atomic(path, text);
    free(text);
    return st;
}
