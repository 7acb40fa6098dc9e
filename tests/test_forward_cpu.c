/* test_forward_cpu.c - the whole-model CPU forward (src/forward_cpu.c) against timm/transformers,
 * stage by stage, on every fixture of tests/data/ref_* (tools/export_reference.py).
 *
 * Per fixture: the output of each stage (`stageK` [B,H,W,C], float64 PyTorch) and the logits must
 * agree to max|d|/max|ref| <= 1e-4 (the first stage that does not names the divergent layer);
 * the logits buffer is poisoned with NaN and followed by guard values, the scratch buffer too;
 * sample 1 run alone must give bit-identical logits to sample 1 of the batch; a second run must
 * be bit-identical (no state kept between calls).
 * Run: ctest -R test_forward_cpu (argv[1] = source dir).
 */
#define _POSIX_C_SOURCE 200809L   /* opendir, strdup */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "safetensors.h"
#include "testutil.h"

#define TOL 1e-4
#define GUARD 64
#define SENTINEL 12345.678f

/* fresh buffer of n floats + GUARD sentinels, filled with NaN */
static float *poisoned(size_t n) {
    float *p = malloc((n + GUARD) * sizeof(float));
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    for (size_t i = n; i < n + GUARD; i++) p[i] = SENTINEL;
    return p;
}

static int guards_ok(const float *p, size_t n) {
    for (size_t i = n; i < n + GUARD; i++)
        if (p[i] != SENTINEL) return 0;
    return 1;
}

static int all_finite(const float *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(p[i])) return 0;
    return 1;
}

/* tensor `name` of f as fp32 (heap) with numel check; NULL if absent or wrong size */
static float *load(const swin_st *f, const char *name, size_t numel) {
    const swin_st_tensor *t = swin_st_find(f, name);
    if (!t || (size_t)t->numel != numel) return NULL;
    float *p = malloc(numel * sizeof(float));
    if (p && swin_st_read_f32(f, t, p) != SWIN_OK) { free(p); return NULL; }
    return p;
}

static void check_fixture(const char *dir, const char *name) {
    char path[1200];
    swin_model *m = NULL;
    swin_load_options lo = swin_load_options_default();
    int loaded = swin_model_load(dir, &lo, &m) == SWIN_OK;
    CHECK(loaded, "%s: load: %s", name, swin_last_error());
    if (!loaded) return;
    snprintf(path, sizeof path, "%s/reference.safetensors", dir);
    swin_st *f = NULL;
    int opened = swin_st_open(path, &f) == SWIN_OK;
    CHECK(opened, "%s: %s", name, swin_last_error());
    if (!opened) { swin_model_free(m); return; }

    const swin_config *c = &m->cfg;
    const swin_st_tensor *ti = swin_st_find(f, "input");
    int B = ti && ti->rank == 4 ? (int)ti->shape[0] : 0;
    size_t n_in = (size_t)B * 3 * c->img_h * c->img_w, n_lg = (size_t)B * c->num_classes;
    float *input = load(f, "input", n_in), *ref = load(f, "logits", n_lg);
    CHECK(B >= 2 && input && ref, "%s: reference input/logits do not fit the model", name);
    float *stage_out[SWIN_MAX_STAGES] = {0}, *stage_ref[SWIN_MAX_STAGES] = {0};
    size_t n_st[SWIN_MAX_STAGES] = {0};
    for (int s = 0; s < c->num_stages; s++) {
        const swin_stage_w *st = &m->w.stages[s];
        char key[16];
        snprintf(key, sizeof key, "stage%d", s);
        n_st[s] = (size_t)B * st->res_h * st->res_w * st->dim;
        stage_ref[s] = load(f, key, n_st[s]);
        stage_out[s] = poisoned(n_st[s]);
        CHECK(stage_ref[s] != NULL, "%s: no %s [B,%d,%d,%d] in the reference", name, key, st->res_h, st->res_w,
              st->dim);
    }
    size_t n_scr = swin_forward_cpu_scratch(m, B);
    float *scratch = poisoned(n_scr), *logits = poisoned(n_lg), *again = poisoned(n_lg), *one = poisoned(n_lg);
    if (!input || !ref || !scratch || !logits || !again || !one) goto done;

    swin_forward_cpu_stages(logits, input, m, B, scratch, stage_out);
    CHECK(guards_ok(scratch, n_scr) && guards_ok(logits, n_lg), "%s: write past the scratch or logits", name);
    for (int s = 0; s < c->num_stages; s++) {
        if (!stage_ref[s]) continue;
        double d = tu_max_abs_diff(stage_out[s], stage_ref[s], n_st[s]), r = tu_max_abs(stage_ref[s], n_st[s]);
        CHECK(guards_ok(stage_out[s], n_st[s]) && all_finite(stage_out[s], n_st[s]) && d <= TOL * r,
              "%s: stage %d (grid %dx%d, dim %d) rel error %.3g > %g (max|d| %.3g, max|ref| %.3g)", name, s,
              m->w.stages[s].res_h, m->w.stages[s].res_w, m->w.stages[s].dim, d / r, TOL, d, r);
    }
    double d = tu_max_abs_diff(logits, ref, n_lg), r = tu_max_abs(ref, n_lg);
    CHECK(all_finite(logits, n_lg) && d <= TOL * r, "%s: logits rel error %.3g > %g", name, d / r, TOL);
    printf("# %-20s logits rel error %.2e\n", name, d / r);

    swin_forward_cpu(again, input, m, B, scratch);
    CHECK(!memcmp(again, logits, n_lg * sizeof(float)), "%s: a second run differs", name);
    size_t per_img = 3 * (size_t)c->img_h * c->img_w;
    swin_forward_cpu(one, input + per_img, m, 1, scratch);
    CHECK(!memcmp(one, logits + c->num_classes, (size_t)c->num_classes * sizeof(float)) &&
          isnan(one[c->num_classes]),
          "%s: sample 1 alone differs from sample 1 in the batch (or batch 1 wrote past its logits)", name);
done:
    for (int s = 0; s < SWIN_MAX_STAGES; s++) { free(stage_out[s]); free(stage_ref[s]); }
    free(scratch); free(logits); free(again); free(one); free(input); free(ref);
    swin_st_close(f);
    swin_model_free(m);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    char data[1024], dir[1100];
    snprintf(data, sizeof data, "%s/tests/data", src);
    DIR *dp = opendir(data);
    CHECK(dp != NULL, "cannot open %s", data);
    char *names[64];
    int n = 0;
    for (struct dirent *e; dp && (e = readdir(dp)) && n < 64;)
        if (!strncmp(e->d_name, "ref_", 4)) names[n++] = strdup(e->d_name);
    if (dp) closedir(dp);
    qsort(names, (size_t)n, sizeof *names, by_name);
    CHECK(n >= 19, "expected at least 19 fixtures tests/data/ref_*, found %d", n);
    for (int i = 0; i < n; i++) {
        snprintf(dir, sizeof dir, "%s/%s", data, names[i]);
        check_fixture(dir, names[i] + 4);
        free(names[i]);
    }
    return tu_finish("forward_cpu");
}
