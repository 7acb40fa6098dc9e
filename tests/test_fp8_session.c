/* test_fp8_session.c - FP8 scales files (src/fp8.c) and FP8 / calibrating CPU sessions.
 *
 *   - a written file reads back to the very scales (margin x amax / 448, 1 for an amax of 0), and
 *     holds format, version, arch, margin, source and images; a non-finite amax is refused;
 *   - every malformed file is SWIN_ERR_FORMAT with the file and the key or site in the message:
 *     not JSON, not an object, wrong format or version, no sites, a site missing, unknown or
 *     twice, a scale that is zero, negative, a string, subnormal or beyond the float range; a
 *     different "arch" with every site is accepted; a failed write leaves no temporary file;
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

/* the digits model's 17 site entries, scale 0.5 each, with site `skip` left out and `extra`
 * (a JSON member, or "") first: a scales file body */
static char *sites_json(const swin_model *m, int skip, const char *extra) {
    static char buf[8192];
    int n = swin_fp8_sites(m, NULL), len = 0, any = extra[0] != '\0';
    swin_fp8_site s[64];
    swin_fp8_sites(m, s);
    len += snprintf(buf + len, sizeof buf - len, "{\"format\": \"swin-fp8-scales\", \"version\": 1, \"sites\": {%s", extra);
    for (int i = 0; i < n; i++) {
        char name[64];
        if (i == skip) continue;
        swin_fp8_site_name(&s[i], name, sizeof name);
        len += snprintf(buf + len, sizeof buf - len, "%s\"%s\": {\"scale\": 0.5}", any++ ? ", " : "", name);
    }
    snprintf(buf + len, sizeof buf - len, "}}");
    return buf;
}

/* path holding text must be refused with SWIN_ERR_FORMAT, naming the file and `what` */
static void refused(const swin_model *m, const char *label, const char *text, const char *what) {
    const char *path = tmp_path("bad.json");
    float scale[64];
    write_text(path, text);
    swin_status st = swin_fp8_scales_read(m, path, scale);
    const char *e = swin_last_error();
    CHECK(st == SWIN_ERR_FORMAT && strstr(e, path) && strstr(e, what), "%s: status %s, message '%s' (want '%s')",
          label, swin_status_str(st), e, what);
}

static void test_files(const swin_model *m) {
    int n = swin_fp8_sites(m, NULL);
    float amax[64], scale[64], back[64];
    for (int i = 0; i < n; i++) amax[i] = (float)(i + 1) * 0.37f;
    amax[3] = 0.0f;
    const char *path = tmp_path("scales.json");
    CHECK(swin_fp8_scales_write(m, path, amax, 2.0f, "images somewhere", 42) == SWIN_OK, "write: %s", swin_last_error());
    CHECK(swin_fp8_scales_read(m, path, back) == SWIN_OK, "read back: %s", swin_last_error());
    swin_fp8_scales_from_amax(n, amax, 2.0f, scale);
    CHECK(memcmp(scale, back, sizeof(float) * n) == 0 && back[3] == 1.0f && back[0] == 2.0f * 0.37f / 448.0f,
          "the scales read back are 2 amax / 448 exactly, 1 for amax 0");
    size_t len = 0;
    char *text = (char *)tu_read_file(path, &len);
    CHECK(text && strstr(text, "\"swin-fp8-scales\"") && strstr(text, "\"swin_digits\"") && strstr(text, "\"margin\"") &&
          strstr(text, "\"images somewhere\"") && strstr(text, "42") && strstr(text, "\"layers.1.downsample.reduction\""),
          "the file holds format, arch, margin, source, images and the site names");
    free(text);
    amax[5] = NAN;
    swin_status st = swin_fp8_scales_write(m, tmp_path("nan.json"), amax, 2.0f, "random", 1);
    CHECK(st == SWIN_ERR_VALUE && strstr(swin_last_error(), "layers.0.blocks.1.attn.proj"),
          "a NaN amax is refused naming its site: %s", swin_last_error());
    amax[5] = 1.0f;
    st = swin_fp8_scales_write(m, tmp_path("no/such/dir.json"), amax, 2.0f, "random", 1);
    CHECK(st == SWIN_ERR_IO && strstr(swin_last_error(), "no/such/dir.json"), "unwritable path: %s", swin_last_error());
    CHECK(swin_fp8_scales_write(m, path, amax, 0.0f, "random", 1) == SWIN_ERR_ARGUMENT, "margin 0 is refused");

    refused(m, "not JSON", "{\"format\": ", "malformed JSON");
    refused(m, "an array", "[1, 2]", "not a JSON object");
    refused(m, "another format", "{\"format\": \"onnx\", \"version\": 1, \"sites\": {}}", "'format'");
    refused(m, "version 2", "{\"format\": \"swin-fp8-scales\", \"version\": 2, \"sites\": {}}", "'version'");
    refused(m, "no sites", "{\"format\": \"swin-fp8-scales\", \"version\": 1}", "'sites'");
    refused(m, "a missing site", sites_json(m, 8, ""), "site 'layers.1.downsample.reduction' is missing");
    refused(m, "an unknown site", sites_json(m, -1, "\"layers.7.blocks.0.attn.qkv\": {\"scale\": 1}"),
            "site 'layers.7.blocks.0.attn.qkv' is not a site of this model");
    refused(m, "a site twice", sites_json(m, -1, "\"layers.0.blocks.1.mlp.fc1\": {\"scale\": 1}"),
            "site 'layers.0.blocks.1.mlp.fc1' appears twice");
    static const char *bad_scale[] = {"0", "-1", "\"0.5\"", "1e-40", "1e39", "null"};
    for (int i = 0; i < 6; i++) {
        char extra[128], label[64];
        snprintf(extra, sizeof extra, "\"layers.0.blocks.0.attn.qkv\": {\"scale\": %s}", bad_scale[i]);
        snprintf(label, sizeof label, "scale %s", bad_scale[i]);
        refused(m, label, sites_json(m, 0, extra), "site 'layers.0.blocks.0.attn.qkv': 'scale'");
    }
    refused(m, "a site that is a number", sites_json(m, 0, "\"layers.0.blocks.0.attn.qkv\": 3"),
            "site 'layers.0.blocks.0.attn.qkv': 'scale'");
    const char *other = tmp_path("other.json");
    char body[8300];
    snprintf(body, sizeof body, "{\"arch\": \"swin_tiny_patch4_window7_224\", %s", sites_json(m, -1, "") + 1);
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
    CHECK(strstr(plan, "fp8 (emulated)") && strstr(plan, "17 sites"), "describe: %s", plan);
    swin_session_free(d);
    swin_session_free(f);

    /* the file's scales are the ones used: all halved, the logits move */
    float scale[64];
    int n = swin_fp8_sites(m, NULL);
    swin_fp8_scales_read(m, cal, scale);
    float amax[64];
    for (int i = 0; i < n; i++) amax[i] = scale[i] * 448.0f / 64.0f;   /* margin 1/32 of the original */
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
