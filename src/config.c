/* config.c - parse a model's config.json (timm or Hugging Face), validate a swin_config, and count
 * its parameters and FLOPs.
 *
 *   timm:  {"architecture": "swin_tiny_patch4_window7_224", "num_classes": 1000,
 *           "model_args": {...overrides...}, "pretrained_cfg": {"input_size": [3,224,224],
 *           "crop_pct": 0.9, "interpolation": "bicubic", "mean": [..], "std": [..]},
 *           "label_names": [..]}
 *   HF:    {"model_type": "swin"|"swinv2", "embed_dim": 96, "depths": [..], "num_heads": [..],
 *           "window_size": 7, "image_size": 224, "patch_size": 4, ..., "id2label": {"0": ..}}
 *          plus preprocessor_config.json (image_mean, image_std, resample) next to it.
 * Every wrong JSON type is SWIN_ERR_CONFIG naming the file and the field.
 * Test: tests/test_malformed.c (config cases), tests/cli_info.sh (counts).
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "model.h"

#define CONFIG_MAX_BYTES (64u << 20)   /* id2label of 21k classes is ~1 MB */

static const float IMAGENET_MEAN[3] = {0.485f, 0.456f, 0.406f};
static const float IMAGENET_STD[3] = {0.229f, 0.224f, 0.225f};

/* ---- typed JSON field readers: absent -> OK and *out untouched; wrong type -> SWIN_ERR_CONFIG */
static const char *json_type(const cJSON *j) {
    if (cJSON_IsString(j)) return "a string";
    if (cJSON_IsNumber(j)) return "a number";
    if (cJSON_IsBool(j)) return "a boolean";
    if (cJSON_IsArray(j)) return "an array";
    if (cJSON_IsObject(j)) return "an object";
    if (cJSON_IsNull(j)) return "null";
    return "invalid";
}

static swin_status bad_type(const char *file, const char *field, const char *want, const cJSON *j) {
    return swin_fail(SWIN_ERR_CONFIG, "%s: field '%s' must be %s (got %s)", file, field, want, json_type(j));
}

static int as_int(const cJSON *j, int *out) {
    if (!cJSON_IsNumber(j)) return 0;
    double v = j->valuedouble;
    if (v != floor(v) || v < -2147483647.0 || v > 2147483647.0) return 0;
    *out = (int)v;
    return 1;
}

static swin_status get_int(const cJSON *o, const char *key, const char *file, int *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j)) return SWIN_OK;
    if (!as_int(j, out)) return bad_type(file, key, "an integer", j);
    return SWIN_OK;
}

static swin_status get_float(const cJSON *o, const char *key, const char *file, float *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j)) return SWIN_OK;
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble)) return bad_type(file, key, "a number", j);
    *out = (float)j->valuedouble;
    return SWIN_OK;
}

static swin_status get_bool(const cJSON *o, const char *key, const char *file, int *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j)) return SWIN_OK;
    if (cJSON_IsBool(j)) { *out = cJSON_IsTrue(j); return SWIN_OK; }
    if (cJSON_IsNumber(j) && (j->valuedouble == 0 || j->valuedouble == 1)) { *out = (int)j->valuedouble; return SWIN_OK; }
    return bad_type(file, key, "true or false", j);
}

/* integer array of 1..max entries; *n receives the count */
static swin_status get_int_list(const cJSON *o, const char *key, const char *file, int *out, int max, int *n) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j)) return SWIN_OK;
    if (!cJSON_IsArray(j)) return bad_type(file, key, "an array of integers", j);
    int len = cJSON_GetArraySize(j);
    if (len < 1 || len > max)
        return swin_fail(SWIN_ERR_CONFIG, "%s: field '%s' has %d entries, expected 1 to %d", file, key, len, max);
    for (int i = 0; i < len; i++)
        if (!as_int(cJSON_GetArrayItem(j, i), &out[i]))
            return swin_fail(SWIN_ERR_CONFIG, "%s: field '%s' entry %d must be an integer (got %s)", file, key, i,
                             json_type(cJSON_GetArrayItem(j, i)));
    *n = len;
    return SWIN_OK;
}

/* a size: an integer (square), or [h, w] / [c, h, w] (skip_lead = 1 for input_size) */
static swin_status get_size(const cJSON *o, const char *key, const char *file, int skip_lead, int *h, int *w) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j)) return SWIN_OK;
    if (cJSON_IsNumber(j) && !skip_lead) {
        SWIN_TRY(get_int(o, key, file, h));
        *w = *h;
        return SWIN_OK;
    }
    int v[4] = {0}, n = 0;
    SWIN_TRY(get_int_list(o, key, file, v, 4, &n));
    if (n != 2 + skip_lead)
        return swin_fail(SWIN_ERR_CONFIG, "%s: field '%s' has %d entries, expected %d", file, key, n, 2 + skip_lead);
    *h = v[skip_lead];
    *w = v[skip_lead + 1];
    return SWIN_OK;
}

/* a square size: an integer, or [s, s] (patch_size) */
static swin_status get_square(const cJSON *o, const char *key, const char *file, int *out) {
    int h = *out, w = *out;
    SWIN_TRY(get_size(o, key, file, 0, &h, &w));
    if (h != w)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: field '%s' is %d x %d; swin supports square patches only",
                         file, key, h, w);
    *out = h;
    return SWIN_OK;
}

static swin_status get_float3(const cJSON *o, const char *key, const char *file, float *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j)) return SWIN_OK;
    if (cJSON_IsNumber(j)) {   /* HF allows one value for all channels */
        for (int c = 0; c < 3; c++) out[c] = (float)j->valuedouble;
        return SWIN_OK;
    }
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != 3) return bad_type(file, key, "an array of 3 numbers", j);
    for (int c = 0; c < 3; c++) {
        const cJSON *e = cJSON_GetArrayItem(j, c);
        if (!cJSON_IsNumber(e)) return bad_type(file, key, "an array of 3 numbers", j);
        out[c] = (float)e->valuedouble;
    }
    return SWIN_OK;
}

/* window_size: an integer, [w, w], or one equal value per stage */
static swin_status get_window(const cJSON *o, const char *key, const char *file, int *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j)) return SWIN_OK;
    if (cJSON_IsNumber(j)) return get_int(o, key, file, out);
    int v[SWIN_MAX_STAGES] = {0}, n = 0;
    SWIN_TRY(get_int_list(o, key, file, v, SWIN_MAX_STAGES, &n));
    for (int i = 1; i < n; i++)
        if (v[i] != v[0])
            return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: field '%s' has different windows (%d, %d); swin supports "
                             "one square window size", file, key, v[0], v[i]);
    *out = v[0];
    return SWIN_OK;
}

/* A field that is there must be positive: 0 is not "unknown" (a field left out is; the loader then
 * takes it from the weights where they tell it). Run after the typed readers accepted the field. */
static swin_status check_positive(const cJSON *o, const char *key, const char *file) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j)) return SWIN_OK;
    if (cJSON_IsNumber(j) && j->valuedouble < 1)
        return swin_fail(SWIN_ERR_CONFIG, "%s: field '%s' is %g; it must be a positive integer (or be left out)", file,
                         key, j->valuedouble);
    int i = 0;
    for (const cJSON *e = cJSON_IsArray(j) ? j->child : NULL; e; e = e->next, i++)
        if (cJSON_IsNumber(e) && e->valuedouble < 1)
            return swin_fail(SWIN_ERR_CONFIG, "%s: field '%s' entry %d is %g; it must be a positive integer", file, key,
                             i, e->valuedouble);
    return SWIN_OK;
}

static swin_status check_positives(const cJSON *o, const char *const *keys, const char *file) {
    for (int i = 0; keys[i]; i++) SWIN_TRY(check_positive(o, keys[i], file));
    return SWIN_OK;
}

/* ---- labels */
static swin_status set_label(swin_parsed_config *p, int i, const char *s, const char *file) {
    size_t l = strlen(s);
    p->labels[i] = malloc(l + 1);
    if (!p->labels[i]) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", file);
    memcpy(p->labels[i], s, l + 1);
    return SWIN_OK;
}

/* label_names: ["a", "b", ...] (timm) */
static swin_status get_label_names(const cJSON *o, const char *key, const char *file, swin_parsed_config *p) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j)) return SWIN_OK;
    if (!cJSON_IsArray(j)) return bad_type(file, key, "an array of strings", j);
    int n = cJSON_GetArraySize(j);
    if (n < 1 || n > 1000000) return swin_fail(SWIN_ERR_CONFIG, "%s: field '%s' has %d entries", file, key, n);
    for (int i = 0; i < p->num_labels; i++) free(p->labels[i]);
    free(p->labels);
    p->num_labels = 0;
    p->labels = calloc((size_t)n, sizeof *p->labels);
    if (!p->labels) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", file);
    p->num_labels = n;
    int i = 0;
    for (const cJSON *e = j->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e))
            return swin_fail(SWIN_ERR_CONFIG, "%s: field '%s' entry %d must be a string (got %s)", file, key, i,
                             json_type(e));
        SWIN_TRY(set_label(p, i, e->valuestring, file));
    }
    return SWIN_OK;
}

/* id2label: {"0": "a", "1": "b", ...} (HF); every id in [0, n) exactly once */
static swin_status get_id2label(const cJSON *o, const char *file, swin_parsed_config *p) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, "id2label");
    if (!j || cJSON_IsNull(j)) return SWIN_OK;
    if (!cJSON_IsObject(j)) return bad_type(file, "id2label", "an object", j);
    int n = cJSON_GetArraySize(j);
    if (n < 1 || n > 1000000) return swin_fail(SWIN_ERR_CONFIG, "%s: field 'id2label' has %d entries", file, n);
    p->labels = calloc((size_t)n, sizeof *p->labels);
    if (!p->labels) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", file);
    p->num_labels = n;
    for (const cJSON *e = j->child; e; e = e->next) {
        char *end = NULL;
        long id = strtol(e->string, &end, 10);
        if (!*e->string || *end || id < 0 || id >= n)
            return swin_fail(SWIN_ERR_CONFIG, "%s: id2label key '%s' is not a class id in [0, %d)", file, e->string, n);
        if (!cJSON_IsString(e))
            return swin_fail(SWIN_ERR_CONFIG, "%s: id2label['%s'] must be a string (got %s)", file, e->string,
                             json_type(e));
        if (p->labels[id]) return swin_fail(SWIN_ERR_CONFIG, "%s: id2label has class %ld twice", file, id);
        SWIN_TRY(set_label(p, (int)id, e->valuestring, file));
    }
    return SWIN_OK;
}

/* ---- timm */
static swin_status parse_interp(const char *s, const char *file, swin_interp *out) {
    if (!strcmp(s, "bicubic")) *out = SWIN_INTERP_BICUBIC;
    else if (!strcmp(s, "bilinear")) *out = SWIN_INTERP_BILINEAR;
    else if (!strcmp(s, "nearest")) *out = SWIN_INTERP_NEAREST;
    else return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: interpolation '%s' is not supported (bicubic, bilinear, nearest)",
                          file, s);
    return SWIN_OK;
}

/* model_args keys, timm spelling */
static swin_status parse_timm_args(const cJSON *a, const char *file, swin_config *c) {
    int n = 0, depths[SWIN_MAX_STAGES], heads[SWIN_MAX_STAGES], nh = 0;
    if (!cJSON_IsObject(a)) return bad_type(file, "model_args", "an object", a);
    SWIN_TRY(get_size(a, "img_size", file, 0, &c->img_h, &c->img_w));
    SWIN_TRY(get_int(a, "patch_size", file, &c->patch_size));
    SWIN_TRY(get_int(a, "in_chans", file, &c->in_chans));
    SWIN_TRY(get_int(a, "num_classes", file, &c->num_classes));
    SWIN_TRY(get_int(a, "embed_dim", file, &c->embed_dim));
    SWIN_TRY(get_window(a, "window_size", file, &c->window_size));
    SWIN_TRY(get_float(a, "mlp_ratio", file, &c->mlp_ratio));
    SWIN_TRY(get_bool(a, "qkv_bias", file, &c->qkv_bias));
    SWIN_TRY(get_bool(a, "ape", file, &c->ape));
    SWIN_TRY(get_int_list(a, "depths", file, depths, SWIN_MAX_STAGES, &n));
    SWIN_TRY(get_int_list(a, "num_heads", file, heads, SWIN_MAX_STAGES, &nh));
    if (n) { c->num_stages = n; memcpy(c->depths, depths, sizeof(int) * (size_t)n); }
    static const char *const positive[] = {"img_size", "patch_size", "in_chans", "embed_dim", "window_size",
                                           "depths", "num_heads", NULL};
    SWIN_TRY(check_positives(a, positive, file));
    if (nh) {
        int want = n ? n : c->num_stages;
        if (want && nh != want)
            return swin_fail(SWIN_ERR_CONFIG, "%s: model_args 'num_heads' has %d entries but there are %d stages",
                             file, nh, want);
        memcpy(c->num_heads, heads, sizeof(int) * (size_t)nh);
    }
    int pw[SWIN_MAX_STAGES] = {0}, npw = 0;
    SWIN_TRY(get_int_list(a, "pretrained_window_sizes", file, pw, SWIN_MAX_STAGES, &npw));
    if (npw) memcpy(c->pretrained_window_sizes, pw, sizeof pw);
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(a, "head_dim");
    if (hd && !cJSON_IsNull(hd))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: model_args 'head_dim' is not supported (head_dim = dim / heads)", file);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(a, "act_layer");
    if (act && cJSON_IsString(act) && strcmp(act->valuestring, "gelu"))
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: model_args act_layer '%s' is not supported (gelu only)", file,
                         act->valuestring);
    return SWIN_OK;
}

static swin_status parse_timm(const cJSON *root, const char *file, swin_parsed_config *p) {
    swin_config *c = &p->cfg;
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architecture");
    if (!cJSON_IsString(arch)) return bad_type(file, "architecture", "a string", arch);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(root, "model_args");
    const swin_preset *pre = swin_preset_find(arch->valuestring);
    if (pre) {
        swin_config_from_preset(pre, c);
        c->num_classes = 0;   /* from the config or the head, not the preset's default */
    } else {
        const char *a = arch->valuestring;
        if (strncmp(a, "swin", 4) || !cJSON_IsObject(args))
            return swin_fail(SWIN_ERR_CONFIG,
                             "%s: unknown architecture '%.100s' (not a timm Swin preset such as "
                             "swin_tiny_patch4_window7_224; a custom Swin needs complete model_args)", file, a);
        c->version = strncmp(a, "swinv2", 6) ? 1 : 2;
        snprintf(c->arch, sizeof c->arch, "%s", a);
        c->qkv_bias = -1;
        c->ape = -1;
        c->interp = SWIN_INTERP_BICUBIC;
        c->crop_pct = 0.875f;   /* timm DEFAULT_CROP_PCT */
    }
    c->pre_style = SWIN_PRE_TIMM;
    c->family = SWIN_FAMILY_TIMM;
    SWIN_TRY(get_int(root, "num_classes", file, &c->num_classes));
    const cJSON *pc = cJSON_GetObjectItemCaseSensitive(root, "pretrained_cfg");
    if (pc && !cJSON_IsNull(pc)) {
        if (!cJSON_IsObject(pc)) return bad_type(file, "pretrained_cfg", "an object", pc);
        int classes = 0;
        SWIN_TRY(get_int(pc, "num_classes", file, &classes));
        if (classes > 0 && c->num_classes == 0) c->num_classes = classes;
        SWIN_TRY(get_size(pc, "input_size", file, 1, &c->img_h, &c->img_w));
        SWIN_TRY(get_float(pc, "crop_pct", file, &c->crop_pct));
        SWIN_TRY(get_float3(pc, "mean", file, c->mean));
        SWIN_TRY(get_float3(pc, "std", file, c->std));
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(pc, "interpolation");
        if (it && !cJSON_IsNull(it)) {
            if (!cJSON_IsString(it)) return bad_type(file, "interpolation", "a string", it);
            SWIN_TRY(parse_interp(it->valuestring, file, &c->interp));
        }
        SWIN_TRY(get_label_names(pc, "label_names", file, p));
    }
    SWIN_TRY(get_label_names(root, "label_names", file, p));
    if (args && !cJSON_IsNull(args)) SWIN_TRY(parse_timm_args(args, file, c));
    return SWIN_OK;
}

/* ---- Hugging Face */
static swin_status parse_hf_preprocessor(const char *dir, swin_config *c) {
    char path[1100];
    snprintf(path, sizeof path, "%s/preprocessor_config.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return SWIN_OK;   /* optional */
    fclose(f);
    char *text = NULL;
    size_t len = 0;
    SWIN_TRY(swin_read_text(path, CONFIG_MAX_BYTES, &text, &len));
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return swin_fail(SWIN_ERR_CONFIG, "%s: not a JSON object", path);
    }
    swin_status st = SWIN_OK;
    int resample = -1, normalize = 1;
    if ((st = get_float3(root, "image_mean", path, c->mean)) != SWIN_OK) goto done;
    if ((st = get_float3(root, "image_std", path, c->std)) != SWIN_OK) goto done;
    if ((st = get_bool(root, "do_normalize", path, &normalize)) != SWIN_OK) goto done;
    if ((st = get_int(root, "resample", path, &resample)) != SWIN_OK) goto done;
    if (!normalize)
        for (int i = 0; i < 3; i++) { c->mean[i] = 0.0f; c->std[i] = 1.0f; }
    /* PIL: 0 nearest, 2 bilinear, 3 bicubic (1 lanczos, 4 box, 5 hamming are not implemented) */
    if (resample == 0) c->interp = SWIN_INTERP_NEAREST;
    else if (resample == 2) c->interp = SWIN_INTERP_BILINEAR;
    else if (resample == 3) c->interp = SWIN_INTERP_BICUBIC;
    else if (resample != -1)
        st = swin_fail(SWIN_ERR_UNSUPPORTED, "%s: resample %d is not supported (0 nearest, 2 bilinear, 3 bicubic)",
                       path, resample);
done:
    cJSON_Delete(root);
    return st;
}

static swin_status parse_hf(const cJSON *root, const char *file, const char *dir, swin_parsed_config *p) {
    swin_config *c = &p->cfg;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!cJSON_IsString(mt)) return bad_type(file, "model_type", "a string", mt);
    if (!strcmp(mt->valuestring, "swin")) c->version = 1;
    else if (!strcmp(mt->valuestring, "swinv2")) c->version = 2;
    else return swin_fail(SWIN_ERR_CONFIG, "%s: model_type '%.64s' is not a Swin model (expected swin or swinv2)",
                          file, mt->valuestring);
    snprintf(c->arch, sizeof c->arch, "%s", c->version == 2 ? "hf-swinv2" : "hf-swin");
    c->pre_style = SWIN_PRE_HF;
    c->interp = SWIN_INTERP_BICUBIC;
    c->crop_pct = 1.0f;           /* HF resizes straight to the model size, no crop */
    c->img_h = c->img_w = 224;    /* SwinConfig default */
    c->family = SWIN_FAMILY_HF;
    c->qkv_bias = -1;
    c->ape = -1;
    int n = 0, nh = 0, npw = 0;
    SWIN_TRY(get_size(root, "image_size", file, 0, &c->img_h, &c->img_w));
    SWIN_TRY(get_square(root, "patch_size", file, &c->patch_size));
    SWIN_TRY(get_int(root, "num_channels", file, &c->in_chans));
    SWIN_TRY(get_int(root, "embed_dim", file, &c->embed_dim));
    SWIN_TRY(get_int_list(root, "depths", file, c->depths, SWIN_MAX_STAGES, &n));
    SWIN_TRY(get_int_list(root, "num_heads", file, c->num_heads, SWIN_MAX_STAGES, &nh));
    SWIN_TRY(get_int(root, "window_size", file, &c->window_size));
    SWIN_TRY(get_float(root, "mlp_ratio", file, &c->mlp_ratio));
    SWIN_TRY(get_bool(root, "qkv_bias", file, &c->qkv_bias));
    SWIN_TRY(get_float(root, "layer_norm_eps", file, &c->ln_eps));
    SWIN_TRY(get_bool(root, "use_absolute_embeddings", file, &c->ape));
    SWIN_TRY(get_int_list(root, "pretrained_window_sizes", file, c->pretrained_window_sizes, SWIN_MAX_STAGES, &npw));
    SWIN_TRY(get_int(root, "num_labels", file, &c->num_classes));
    static const char *const positive[] = {"image_size", "patch_size", "num_channels", "embed_dim", "window_size",
                                           "depths", "num_heads", NULL};
    SWIN_TRY(check_positives(root, positive, file));
    if (n && nh && n != nh)
        return swin_fail(SWIN_ERR_CONFIG, "%s: 'depths' has %d entries but 'num_heads' has %d", file, n, nh);
    c->num_stages = n;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    if (act && !cJSON_IsNull(act)) {
        if (!cJSON_IsString(act)) return bad_type(file, "hidden_act", "a string", act);
        if (strcmp(act->valuestring, "gelu"))
            return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: hidden_act '%s' is not supported (gelu only)", file,
                             act->valuestring);
    }
    SWIN_TRY(get_id2label(root, file, p));
    if (c->num_classes == 0 && p->num_labels > 0) c->num_classes = p->num_labels;
    return dir ? parse_hf_preprocessor(dir, c) : SWIN_OK;
}

/* ---- entry points */
swin_status swin_config_parse_json(const char *text, size_t len, const char *name, const char *dir,
                                   swin_parsed_config *out) {
    memset(out, 0, sizeof *out);
    memcpy(out->cfg.mean, IMAGENET_MEAN, sizeof IMAGENET_MEAN);
    memcpy(out->cfg.std, IMAGENET_STD, sizeof IMAGENET_STD);
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) {
        const char *err = cJSON_GetErrorPtr();
        long at = (err && err >= text && err <= text + len) ? (long)(err - text) : -1;
        return swin_fail(SWIN_ERR_CONFIG, "%s: invalid JSON (error near byte %ld)", name, at);
    }
    swin_status st;
    if (!cJSON_IsObject(root))
        st = swin_fail(SWIN_ERR_CONFIG, "%s: not a JSON object", name);
    else if (cJSON_GetObjectItemCaseSensitive(root, "architecture"))
        st = parse_timm(root, name, out);
    else if (cJSON_GetObjectItemCaseSensitive(root, "model_type"))
        st = parse_hf(root, name, dir, out);
    else
        st = swin_fail(SWIN_ERR_CONFIG, "%s: neither 'architecture' (timm) nor 'model_type' (Hugging Face) is set",
                       name);
    cJSON_Delete(root);
    return st;
}

swin_status swin_config_parse_file(const char *path, swin_parsed_config *out) {
    memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len = 0;
    SWIN_TRY(swin_read_text(path, CONFIG_MAX_BYTES, &text, &len));
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    swin_status st = swin_config_parse_json(text, len, path, dir, out);
    free(text);
    return st;
}

swin_status swin_config_parse_arch(const char *arch, swin_parsed_config *out) {
    memset(out, 0, sizeof *out);
    const swin_preset *p = swin_preset_find(arch);
    if (!p)
        return swin_fail(SWIN_ERR_CONFIG, "unknown architecture '%.100s' (swin info --help lists the presets)",
                         arch ? arch : "");
    swin_config_from_preset(p, &out->cfg);
    out->cfg.num_classes = 0;
    return SWIN_OK;
}

void swin_parsed_config_free(swin_parsed_config *p) {
    if (!p) return;
    for (int i = 0; i < p->num_labels; i++) free(p->labels[i]);
    free(p->labels);
    p->labels = NULL;
    p->num_labels = 0;
}

/* ---- defaults and validation */
#define RANGE(field, lo, hi)                                                                     \
    if (!(c->field >= (lo) && c->field <= (hi)))                                                 \
        return swin_fail(SWIN_ERR_CONFIG, "%s: " #field " %g is %s (expected %g to %g)", what,   \
                         (double)c->field, c->field ? "out of range" : "missing", (double)(lo), (double)(hi));

swin_status swin_config_finish(swin_config *c, const char *what) {
    if (c->qkv_bias < 0) c->qkv_bias = 1;
    if (c->ape < 0) c->ape = 0;
    if (c->mlp_ratio == 0) c->mlp_ratio = 4.0f;
    if (c->ln_eps == 0) c->ln_eps = 1e-5f;
    if (c->in_chans == 0) c->in_chans = 3;
    if (c->crop_pct == 0) c->crop_pct = c->pre_style == SWIN_PRE_HF ? 1.0f : 0.875f;
    RANGE(version, 1, 2);
    RANGE(num_stages, 1, SWIN_MAX_STAGES);
    RANGE(img_h, 1, 16384);
    RANGE(img_w, 1, 16384);
    RANGE(patch_size, 1, 1024);
    RANGE(embed_dim, 1, 65536);
    RANGE(window_size, 1, 1024);
    RANGE(mlp_ratio, 0.01, 64);
    RANGE(ln_eps, 1e-12, 1);
    RANGE(num_classes, 1, 10000000);
    RANGE(crop_pct, 0.01, 4);
    if (c->in_chans != 3)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: %d input channels; swin classifies RGB images (3 channels)",
                         what, c->in_chans);
    for (int s = 0; s < c->num_stages; s++) {
        if (c->depths[s] < 1 || c->depths[s] > 1024)
            return swin_fail(SWIN_ERR_CONFIG, "%s: depths[%d] = %d is %s (expected 1 to 1024)", what, s, c->depths[s],
                             c->depths[s] ? "out of range" : "missing");
        if (c->num_heads[s] < 1 || c->num_heads[s] > 4096)
            return swin_fail(SWIN_ERR_CONFIG, "%s: num_heads[%d] = %d is %s (expected 1 to 4096)", what, s,
                             c->num_heads[s], c->num_heads[s] ? "out of range" : "missing");
        int pw = c->pretrained_window_sizes[s];
        if (pw < 0 || pw == 1 || pw > 1024)
            return swin_fail(SWIN_ERR_CONFIG, "%s: pretrained_window_sizes[%d] = %d (expected 0 or 2 to 1024)",
                             what, s, pw);
    }
    for (int s = c->num_stages; s < SWIN_MAX_STAGES; s++) c->depths[s] = c->num_heads[s] = 0;
    for (int i = 0; i < 3; i++)
        if (!isfinite(c->mean[i]) || !isfinite(c->std[i]) || !(c->std[i] > 0))
            return swin_fail(SWIN_ERR_CONFIG, "%s: mean/std channel %d is %g/%g (std must be positive)", what, i,
                             (double)c->mean[i], (double)c->std[i]);
    if ((int64_t)c->embed_dim << (c->num_stages - 1) > 65536)
        return swin_fail(SWIN_ERR_CONFIG, "%s: embed_dim %d gives too many channels in the last stage", what,
                         c->embed_dim);
    for (int s = 0; s < c->num_stages; s++)
        if ((c->embed_dim << s) % c->num_heads[s])
            return swin_fail(SWIN_ERR_CONFIG, "%s: num_heads[%d] %d does not divide the stage's channels: stage %d has "
                             "%d channels, not divisible by %d heads (embed_dim %d)", what, s, c->num_heads[s], s,
                             c->embed_dim << s, c->num_heads[s], c->embed_dim);
    return SWIN_OK;
}

/* ---- counts, over the planned geometry (grids, clamped windows, padding: swin_model_plan) */
int64_t swin_config_param_count(const swin_config *c) {
    swin_weights g;
    memset(&g, 0, sizeof g);
    if (swin_model_plan(c, &g) != SWIN_OK) return 0;
    int64_t C0 = c->embed_dim, p = c->patch_size, L0 = (int64_t)g.stages[0].res_h * g.stages[0].res_w;
    int64_t n = C0 * c->in_chans * p * p + C0 + 2 * C0;          /* patch embed conv + norm */
    if (c->ape) n += L0 * C0;
    for (int s = 0; s < c->num_stages; s++) {
        const swin_stage_w *st = &g.stages[s];
        int64_t C = C0 << s, H = (int64_t)(C * c->mlp_ratio), heads = c->num_heads[s];
        int64_t T = (int64_t)(2 * st->win_h - 1) * (2 * st->win_w - 1);
        if (s > 0) n += 2 * (C / 2) * 4 * (C / 2) + 2 * (c->version == 1 ? 4 * (C / 2) : C);  /* merge */
        int64_t blk = 4 * C                                  /* norm1, norm2 */
                      + 3 * C * C + C * C + C                /* qkv, proj */
                      + H * C + H + C * H + C;               /* fc1, fc2 */
        if (c->version == 1) blk += (c->qkv_bias ? 3 * C : 0) + T * heads;
        else blk += (c->qkv_bias ? 2 * C : 0) + 2 * 512 + 512 + heads * 512 + heads;
        n += blk * c->depths[s];
    }
    int64_t Cl = C0 << (c->num_stages - 1);
    return n + 2 * Cl + Cl * c->num_classes + c->num_classes;
}

/* The attention sublayer (qkv, QK^T, PV, proj) runs over the padded grid, as in both libraries;
 * the MLP over the image tokens. */
double swin_config_gflops(const swin_config *c) {
    swin_weights g;
    memset(&g, 0, sizeof g);
    if (swin_model_plan(c, &g) != SWIN_OK) return 0.0;
    double C0 = c->embed_dim, p = c->patch_size, L0 = (double)g.stages[0].res_h * g.stages[0].res_w;
    double macs = L0 * C0 * c->in_chans * p * p;   /* patch embedding */
    for (int s = 0; s < c->num_stages; s++) {
        const swin_stage_w *st = &g.stages[s];
        double C = C0 * (1 << s), L = (double)st->res_h * st->res_w, Lp = (double)st->hp * st->wp;
        double N = (double)st->win_h * st->win_w, H = (double)(int64_t)(C * c->mlp_ratio);
        if (s > 0) macs += L * (2 * C) * C;                        /* merge: [L, 4C'] x [4C', 2C'], C' = C/2 */
        double blk = Lp * C * 3 * C                                /* qkv */
                     + 2 * Lp * N * C                              /* QK^T and PV over all heads */
                     + Lp * C * C                                  /* proj */
                     + 2 * L * C * H;                              /* fc1, fc2 */
        macs += blk * c->depths[s];
    }
    macs += (C0 * (1 << (c->num_stages - 1))) * c->num_classes;    /* head */
    return 2.0 * macs / 1e9;
}
