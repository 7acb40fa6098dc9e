/* test_fp8_session.c - FP8 scales files (src/fp8.c) and FP8 / calibrating CPU sessions.
 *
 *   - a written file (version 2) reads back to the very scales (margin x amax / 448, 1 for an
 *     amax of 0), the qkv sites' channel scales included, and holds format, version, arch, margin,
 *     source, images and out_amax / out_scale on the 4 qkv sites only; a non-finite amax is
 *     refused naming the site, and for a qkv output entry the channel;
 *   - a version 1 file reads with every channel scale 0; a version 2 one without out_scale too,
 *     and with it on one qkv site, that site's channels;
 *   - every malformed file is SWIN_ERR_FORMAT with the file and the key or site in the message:
 *     not JSON, not an object, wrong format or version (3), no sites, a site missing, unknown or
 *     twice, a scale that is zero, negative, a string, subnormal or beyond the float range; an
 *     out_scale that is not an array, of the wrong length, with an entry that is null, a string,
 *     zero, negative, subnormal, beyond the float range or inf, or on a proj site; a different
 *     "arch" with every site is accepted; a failed write leaves no temporary file;
 *   - sessions: fp8 with calibrate, scales with fp32, fp16 on the CPU are refused; a calibrating
 *     session counts its images and saves scales; the default calibration warns once and equals
 *     a file calibrated on the same random images (bit-identical logits); scales are used.
 * Run: ctest -R test_fp8_session (argv[1] = source dir).
 */
#define _POSIX_C_SOURCE 200809L /* opendir */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8.h"
#include "fp8_session.h"
#include "testutil.h"

static char g_dir[512];

/* scale / amax arrays of the digits model: swin_fp8_scale_count, 1169 */
#define MAX_SCALES 2048

/* g_dir/name; the last 16 results stay valid */
static const char *tmp_path(const char *name) {
    static char p[16][1024];
    static int next;
    char *r = p[next++ % 16];
    snprintf(r, sizeof p[0], "%s/%s", g_dir, name);
    return r;
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fputs(text, f);
    return fclose(f);
}

/* "[v, v, ..., v]": n copies of v, entry `bad` (-1: none) `bad_text` instead, into buf */
static const char *number_list(char *buf, size_t size, int n, const char *v, int bad, const char *bad_text) {
    size_t len = 0;
    len += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", i == bad ? bad_text : v);
    if (len < size) snprintf(buf + len, size - len, "]");
    return buf;
}

/* the digits model's 17 site entries, scale 0.5 each, with site `skip` left out and `extra`
 * (a JSON member, or "") first, and `qkv` ("" or members starting with ", ") in every qkv
 * site's entry: a scales file body of `version` */
static char *sites_json(const swin_model *m, int version, int skip, const char *extra, const char *qkv) {
    static char buf[1 << 16];
    int n = swin_fp8_sites(m, NULL), len = 0, any = extra[0] != '\0';
    swin_fp8_site s[64];
    swin_fp8_sites(m, s);
    len += snprintf(buf + len, sizeof buf - len, "{\"format\": \"swin-fp8-scales\", \"version\": %d, \"sites\": {%s",
                    version, extra);
    for (int i = 0; i < n; i++) {
        char name[64];
        if (i == skip) continue;
        swin_fp8_site_name(&s[i], name, sizeof name);
        len += snprintf(buf + len, sizeof buf - len, "%s\"%s\": {\"scale\": 0.5%s}", any++ ? ", " : "", name,
                        s[i].kind == SWIN_SITE_QKV ? qkv : "");
    }
    snprintf(buf + len, sizeof buf - len, "}}");
    return buf;
}

/* path holding text must be refused with SWIN_ERR_FORMAT, naming the file and `what` */
static void refused(const swin_model *m, const char *label, const char *text, const char *what) {
    const char *path = tmp_path("bad.json");
    static float scale[MAX_SCALES];
    write_text(path, text);
    swin_status st = swin_fp8_scales_read(m, path, scale);
    const char *e = swin_last_error();
    CHECK(st == SWIN_ERR_FORMAT && strstr(e, path) && strstr(e, what), "%s: status %s, message '%s' (want '%s')",
          label, swin_status_str(st), e, what);
}

/* occurrences of needle in text */
static int count_of(const char *text, const char *needle) {
    int k = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++) k++;
    return k;
}

static void test_files(const swin_model *m) {
    int n = swin_fp8_sites(m, NULL), count = swin_fp8_scale_count(m);
    static float amax[MAX_SCALES], scale[MAX_SCALES], back[MAX_SCALES];
    if (!CHECK(count <= MAX_SCALES, "digits: %d scale entries fit in %d", count, MAX_SCALES)) return;
    for (int i = 0; i < count; i++) amax[i] = (float)(i + 1) * 0.37f;
    amax[3] = 0.0f;
    amax[n + 7] = 0.0f;   /* a qkv channel that saw only zeros */
    const char *path = tmp_path("scales.json");
    CHECK(swin_fp8_scales_write(m, path, amax, 2.0f, "images somewhere", 42) == SWIN_OK, "write: %s", swin_last_error());
    CHECK(swin_fp8_scales_read(m, path, back) == SWIN_OK, "read back: %s", swin_last_error());
    swin_fp8_scales_from_amax(count, amax, 2.0f, scale);
    CHECK(memcmp(scale, back, sizeof(float) * count) == 0 && back[3] == 1.0f && back[0] == 2.0f * 0.37f / 448.0f &&
          back[n + 7] == 1.0f && back[count - 1] == 2.0f * ((float)count * 0.37f) / 448.0f,
          "the scales read back, the %d qkv channels' included, are 2 amax / 448 exactly, 1 for amax 0", count - n);
    size_t len = 0;
    char *text = (char *)tu_read_file(path, &len);
    CHECK(text && strstr(text, "\"swin-fp8-scales\"") && strstr(text, "\"swin_digits\"") && strstr(text, "\"margin\"") &&
          strstr(text, "\"images somewhere\"") && strstr(text, "42") && strstr(text, "\"layers.1.downsample.reduction\""),
          "the file holds format, arch, margin, source, images and the site names");
    CHECK(text && strstr(text, "\"version\":\t2") && count_of(text, "\"out_amax\":") == 4 &&
          count_of(text, "\"out_scale\":") == 4 && count_of(text, "\"scale\":") == 17,
          "version 2, out_amax and out_scale on the 4 qkv sites, scale on the 17 sites");
    free(text);
    amax[5] = NAN;
    swin_status st = swin_fp8_scales_write(m, tmp_path("nan.json"), amax, 2.0f, "random", 1);
    CHECK(st == SWIN_ERR_VALUE && strstr(swin_last_error(), "layers.0.blocks.1.attn.proj"),
          "a NaN amax is refused naming its site: %s", swin_last_error());
    amax[5] = 1.0f;
    amax[209 + 5] = INFINITY;   /* layers.0.blocks.1.attn.qkv's channel 5 */
    st = swin_fp8_scales_write(m, tmp_path("inf.json"), amax, 2.0f, "random", 1);
    CHECK(st == SWIN_ERR_VALUE && strstr(swin_last_error(), "site 'layers.0.blocks.1.attn.qkv' output channel 5 "),
          "an inf channel amax is refused naming its site and channel: %s", swin_last_error());
    amax[209 + 5] = 1.0f;
    st = swin_fp8_scales_write(m, tmp_path("no/such/dir.json"), amax, 2.0f, "random", 1);
    CHECK(st == SWIN_ERR_IO && strstr(swin_last_error(), "no/such/dir.json"), "unwritable path: %s", swin_last_error());
    CHECK(swin_fp8_scales_write(m, path, amax, 0.0f, "random", 1) == SWIN_ERR_ARGUMENT, "margin 0 is refused");

    /* version 1, and version 2 without out_scale: channel scales 0; with it on one site: those */
    static const char *plain[] = {"v1", "v2 without out_scale"};
    for (int v = 1; v <= 2; v++) {
        const char *p = tmp_path("plain.json");
        write_text(p, sites_json(m, v, -1, "", ""));
        for (int i = 0; i < count; i++) back[i] = -1;
        int zeros = 1;
        st = swin_fp8_scales_read(m, p, back);
        for (int i = n; i < count; i++) zeros &= back[i] == 0.0f;
        CHECK(st == SWIN_OK && back[0] == 0.5f && back[n - 1] == 0.5f && zeros, "%s: read (%s), scales 0.5, every "
              "channel scale 0", plain[v - 1], st == SWIN_OK ? "ok" : swin_last_error());
    }
    char list[4096], member[4200], one[4400];
    snprintf(member, sizeof member, "\"out_scale\": %s", number_list(list, sizeof list, 192, "0.25", 3, "0.125"));
    snprintf(one, sizeof one, "\"layers.0.blocks.1.attn.qkv\": {\"scale\": 0.5, %s}", member);
    write_text(tmp_path("one.json"), sites_json(m, 2, 4, one, ""));
    st = swin_fp8_scales_read(m, tmp_path("one.json"), back);
    int others = 1;
    for (int i = n; i < count; i++) others &= (i >= 209 && i < 401) || back[i] == 0.0f;
    CHECK(st == SWIN_OK && back[209] == 0.25f && back[212] == 0.125f && back[400] == 0.25f && others,
          "v2 with out_scale on one qkv site: its 192 channels (%s), the other sites' 0",
          st == SWIN_OK ? "ok" : swin_last_error());

    refused(m, "not JSON", "{\"format\": ", "malformed JSON");
    refused(m, "an array", "[1, 2]", "not a JSON object");
    refused(m, "another format", "{\"format\": \"onnx\", \"version\": 1, \"sites\": {}}", "'format'");
    refused(m, "version 3", sites_json(m, 3, -1, "", ""), "'version' is not 1 or 2");
    refused(m, "no sites", "{\"format\": \"swin-fp8-scales\", \"version\": 1}", "'sites'");
    refused(m, "a missing site", sites_json(m, 1, 8, "", ""), "site 'layers.1.downsample.reduction' is missing");
    refused(m, "an unknown site", sites_json(m, 1, -1, "\"layers.7.blocks.0.attn.qkv\": {\"scale\": 1}", ""),
            "site 'layers.7.blocks.0.attn.qkv' is not a site of this model");
    refused(m, "a site twice", sites_json(m, 1, -1, "\"layers.0.blocks.1.mlp.fc1\": {\"scale\": 1}", ""),
            "site 'layers.0.blocks.1.mlp.fc1' appears twice");
    static const char *bad_scale[] = {"0", "-1", "\"0.5\"", "1e-40", "1e39", "null"};
    for (int i = 0; i < 6; i++) {
        char extra[128], label[64];
        snprintf(extra, sizeof extra, "\"layers.0.blocks.0.attn.qkv\": {\"scale\": %s}", bad_scale[i]);
        snprintf(label, sizeof label, "scale %s", bad_scale[i]);
        refused(m, label, sites_json(m, 1, 0, extra, ""), "site 'layers.0.blocks.0.attn.qkv': 'scale'");
    }
    refused(m, "a site that is a number", sites_json(m, 1, 0, "\"layers.0.blocks.0.attn.qkv\": 3", ""),
            "site 'layers.0.blocks.0.attn.qkv': 'scale'");

    /* out_scale wrong on layers.0.blocks.1.attn.qkv (192 channels), absent on the other qkv sites;
     * as_is: the JSON value itself, else `length` numbers 0.25 with entry 7 `text` */
    refused(m, "out_scale of 2 on every qkv site", sites_json(m, 2, -1, "", ", \"out_scale\": [0.25, 0.25]"),
            "site 'layers.0.blocks.0.attn.qkv': 'out_scale' has 2 entries, expected 192");
    static const struct { const char *label; int as_is, length; const char *text, *what; } bad_out[] = {
        {"out_scale a number", 1, 0, "0.25", "'out_scale' is not an array"},
        {"out_scale an object", 1, 0, "{}", "'out_scale' is not an array"},
        {"out_scale of 191", 0, 191, "0.25", "'out_scale' has 191 entries, expected 192"},
        {"out_scale of 193", 0, 193, "0.25", "'out_scale' has 193 entries, expected 192"},
        {"out_scale entry null", 0, 192, "null", "'out_scale' entry 7 must be a finite number"},
        {"out_scale entry a string", 0, 192, "\"0.25\"", "'out_scale' entry 7 must be a finite number"},
        {"out_scale entry 0", 0, 192, "0", "'out_scale' entry 7 must be a finite number"},
        {"out_scale entry -1", 0, 192, "-1", "'out_scale' entry 7 must be a finite number"},
        {"out_scale entry 1e-40", 0, 192, "1e-40", "'out_scale' entry 7 must be a finite number >= 1.17549e-38"},
        {"out_scale entry 1e39", 0, 192, "1e39", "'out_scale' entry 7, 1e+39, is out of the float range"},
        {"out_scale entry inf", 0, 192, "1e999", "'out_scale' entry 7 must be a finite number"}};
    for (size_t i = 0; i < sizeof bad_out / sizeof bad_out[0]; i++) {
        const char *value = bad_out[i].as_is ? bad_out[i].text
                                             : number_list(list, sizeof list, bad_out[i].length, "0.25", 7, bad_out[i].text);
        char what[200];
        snprintf(one, sizeof one, "\"layers.0.blocks.1.attn.qkv\": {\"scale\": 0.5, \"out_scale\": %s}", value);
        snprintf(what, sizeof what, "site 'layers.0.blocks.1.attn.qkv': %s", bad_out[i].what);
        refused(m, bad_out[i].label, sites_json(m, 2, 4, one, ""), what);
    }
    snprintf(one, sizeof one, "\"layers.0.blocks.0.attn.proj\": {\"scale\": 0.5, \"out_scale\": %s}",
             number_list(list, sizeof list, 64, "0.25", -1, ""));
    refused(m, "out_scale on a proj site", sites_json(m, 2, 1, one, ""),
            "site 'layers.0.blocks.0.attn.proj': 'out_scale' on a site that is not an attn.qkv");

    const char *other = tmp_path("other.json");
    static char body[1 << 16];
    snprintf(body, sizeof body, "{\"arch\": \"swin_tiny_patch4_window7_224\", %s", sites_json(m, 1, -1, "", "") + 1);
    write_text(other, body);
    CHECK(swin_fp8_scales_read(m, other, back) == SWIN_OK && back[16] == 0.5f, "another arch with every site: read (%s)",
          swin_last_error());
    st = swin_fp8_scales_read(m, tmp_path("missing.json"), back);
    CHECK(st == SWIN_ERR_IO && strstr(swin_last_error(), "missing.json"), "a missing file: %s", swin_last_error());

    int leftovers = 0;   /* every write above, good or bad, leaves no temporary file */
    DIR *d = opendir(g_dir);
    for (struct dirent *e; d && (e = readdir(d));) leftovers += strstr(e->d_name, ".tmp-") != NULL;
    if (d) closedir(d);
    CHECK(leftovers == 0, "no temporary files left (%d)", leftovers);
}

// ---- sessions

static int g_warnings;
static char g_warning[512];
static void on_warn(const char *msg, void *user) {
    g_warnings++;
    snprintf(g_warning, sizeof g_warning, "%s", msg);
}

static void test_sessions(const swin_model *m) {
    enum { B = 3 };
    const swin_config *c = swin_model_config(m);
    size_t nin = (size_t)8 * 3 * c->img_h * c->img_w, nl = (size_t)B * c->num_classes;
    float *x = malloc(nin * sizeof(float)), l1[B * 16], l2[B * 16];
    swin_fp8_random_images(c, 0, 8, x);
    swin_session *s = NULL;
    swin_session_options o = swin_session_options_default();
    o.warn = on_warn;
    o.max_batch = B;
    o.precision = SWIN_FP8;
    o.calibrate = 1;
    CHECK(swin_session_create(m, &o, &s) == SWIN_ERR_ARGUMENT && strstr(swin_last_error(), "fp32"),
          "fp8 with calibrate is refused: %s", swin_last_error());
    o.calibrate = 0;
    o.precision = SWIN_FP32;
    o.fp8_scales = tmp_path("scales.json");
    CHECK(swin_session_create(m, &o, &s) == SWIN_ERR_ARGUMENT && strstr(swin_last_error(), "scales.json"),
          "a scales file with fp32 is refused: %s", swin_last_error());
    o.fp8_scales = NULL;
    o.precision = SWIN_FP16;
    CHECK(swin_session_create(m, &o, &s) == SWIN_ERR_UNSUPPORTED, "fp16 on the CPU is refused");

    /* a calibrating session on the 8 random images of the default calibration, in batches of 3 */
    o.precision = SWIN_FP32;
    o.calibrate = 1;
    if (!CHECK(swin_session_create(m, &o, &s) == SWIN_OK, "calibrating session: %s", swin_last_error())) return;
    const char *cal = tmp_path("random8.json");
    CHECK(swin_session_save_scales(s, cal, 2.0f, "random") == SWIN_ERR_ARGUMENT, "nothing to save before a forward");
    for (int i = 0; i < 8; i += B)
        swin_forward(s, x + (size_t)i * 3 * c->img_h * c->img_w, i + B <= 8 ? B : 8 - i, l1);
    CHECK(swin_session_calibrated_images(s) == 8, "8 images calibrated (%d)", swin_session_calibrated_images(s));
    CHECK(swin_session_save_scales(s, cal, 2.0f, "random") == SWIN_OK, "save: %s", swin_last_error());
    swin_session_free(s);

    /* fp8 without a file: the default calibration, one warning; with the file: the same logits */
    o.calibrate = 0;
    o.precision = SWIN_FP8;
    g_warnings = 0;
    swin_session *d = NULL, *f = NULL;
    CHECK(swin_session_create(m, &o, &d) == SWIN_OK, "fp8 session, default scales: %s", swin_last_error());
    CHECK(g_warnings == 1 && strstr(g_warning, "random images") && strstr(g_warning, "swin calibrate"),
          "one warning about random images: '%s'", g_warning);
    o.fp8_scales = cal;
    CHECK(swin_session_create(m, &o, &f) == SWIN_OK, "fp8 session with %s: %s", cal, swin_last_error());
    CHECK(g_warnings == 1, "no warning with a scales file");
    if (d && f && swin_forward(d, x, B, l1) == SWIN_OK && swin_forward(f, x, B, l2) == SWIN_OK)
        CHECK(memcmp(l1, l2, nl * sizeof(float)) == 0, "default calibration = a file calibrated on the same images");
    char plan[512] = "";
    if (f) swin_session_describe(f, plan, sizeof plan);
    CHECK(strstr(plan, "fp8 (emulated)") && strstr(plan, "17 sites") && !strstr(plan, "q, k, v in E4M3"),
          "describe (digits' 4x4 windows keep q, k, v: fp8.h swin_fp8_qkv_e4m3_block): %s", plan);
    swin_session_free(d);
    swin_session_free(f);

    /* a version 1 file: q, k, v stay fp32 */
    o.fp8_scales = tmp_path("v1.json");
    write_text(o.fp8_scales, sites_json(m, 1, -1, "", ""));
    plan[0] = '\0';
    if (CHECK(swin_session_create(m, &o, &f) == SWIN_OK, "fp8 session with a version 1 file: %s", swin_last_error()))
        swin_session_describe(f, plan, sizeof plan);
    CHECK(strstr(plan, "17 sites") && !strstr(plan, "E4M3"), "describe, version 1: %s", plan);
    swin_session_free(f);

    /* the file's scales are the ones used: all halved, the logits move */
    static float scale[MAX_SCALES], amax[MAX_SCALES];
    int count = swin_fp8_scale_count(m);
    swin_fp8_scales_read(m, cal, scale);
    for (int i = 0; i < count; i++) amax[i] = scale[i] * 448.0f / 64.0f;   /* margin 1/32 of the original */
    const char *small = tmp_path("small.json");
    swin_fp8_scales_write(m, small, amax, 1.0f, "random", 8);
    o.fp8_scales = small;
    if (CHECK(swin_session_create(m, &o, &f) == SWIN_OK, "fp8 session with %s: %s", small, swin_last_error()) &&
        swin_forward(f, x, B, l1) == SWIN_OK)
        CHECK(tu_max_abs_diff(l1, l2, nl) > 1e-2 * tu_max_abs(l2, nl), "scales / 64 (saturating) move the logits");
    swin_session_free(f);
    free(x);
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    char path[1200];
    snprintf(path, sizeof path, "%s/weights/digits", src);
    swin_model *m = NULL;
    swin_load_options lo = swin_load_options_default();
    if (!CHECK(swin_model_load(path, &lo, &m) == SWIN_OK, "load %s: %s", path, swin_last_error()) ||
        !CHECK(tu_tmpdir(g_dir, sizeof g_dir, "test_fp8") == 0, "temporary directory"))
        return tu_finish("test_fp8_session");
    test_files(m);
    test_sessions(m);
    swin_model_free(m);
    tu_rmtree(g_dir);
    return tu_finish("test_fp8_session");
}
