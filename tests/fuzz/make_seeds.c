/* make_seeds.c - the generated part of the fuzz seed corpora (tools/fuzz.sh copies the rest from
 * tests/data): checkpoints and references of the tiny fuzz model (targets.h), small enough that
 * the fuzzer mutates them quickly (tests/data's checkpoints are 0.1 to 2 MB).
 *   fuzz_make_seeds OUT_DIR   writes OUT_DIR/safetensors/, OUT_DIR/reference/ and OUT_DIR/fp8_scales/,
 *                             then runs each seed through its target: every one must load (exit 1
 *                             otherwise)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fp8.h"
#include "model.h"
#include "names.h"
#include "safetensors.h"
#include "targets.h"
#include "testutil.h"

#define MAX_T 64

typedef struct {
    swin_st_tensor t[MAX_T];
    char names[MAX_T][96];
    void *owned[MAX_T];   /* converted copies */
    int n;
} tensors;

static void add(tensors *l, const char *name, swin_st_dtype dt, int rank, const int64_t *shape, const float *x) {
    swin_st_tensor *t = &l->t[l->n];
    snprintf(l->names[l->n], sizeof l->names[0], "%s", name);
    memset(t, 0, sizeof *t);
    t->name = l->names[l->n];
    t->dtype = dt;
    t->rank = rank;
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)(t->shape[i] = shape[i]);
    if (dt == SWIN_ST_F32) {
        t->data = x;
    } else {   /* F16 / BF16 copies of x */
        uint16_t *h = malloc(n * 2 + 1);
        for (size_t i = 0; i < n; i++) h[i] = dt == SWIN_ST_F16 ? tu_f32_to_f16(x[i]) : tu_f32_to_bf16(x[i]);
        t->data = l->owned[l->n] = h;
    }
    l->n++;
}

static int write_tensors(const char *dir, const char *file, tensors *l) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    swin_status st = swin_st_write(path, l->t, l->n);
    for (int i = 0; i < l->n; i++) free(l->owned[i]);
    l->n = 0;
    if (st != SWIN_OK) fprintf(stderr, "fuzz_make_seeds: %s\n", swin_last_error());
    return st == SWIN_OK ? 0 : 1;
}

/* the tiny model of `version` with random weights, every tensor under its canonical (timm) name */
static int checkpoint(const char *dir, const char *file, int version, swin_st_dtype dt, int with_index) {
    swin_config c = swin_fuzz_tiny_config(version);
    swin_model *m = NULL;
    if (swin_model_random_config(&c, 7, &m) != SWIN_OK) {
        fprintf(stderr, "fuzz_make_seeds: %s\n", swin_last_error());
        return 1;
    }
    int n = swin_names_expect(&m->cfg, &m->w, NULL, 0);
    swin_expect *ex = calloc((size_t)n, sizeof *ex);
    swin_names_expect(&m->cfg, &m->w, ex, n);
    tensors l;
    memset(&l, 0, sizeof l);
    for (int i = 0; i < n && l.n < MAX_T - 1; i++) add(&l, ex[i].name, dt, ex[i].rank, ex[i].shape, *ex[i].dst);
    /* a buffer the loader checks and recomputes: an I64 relative_position_index of the 2x2 window */
    static int64_t index[16];
    if (with_index) {
        for (int i = 0; i < 16; i++) index[i] = (i / 4 / 2 - i % 4 / 2 + 1) * 3 + (i / 4 % 2 - i % 4 % 2 + 1);
        swin_st_tensor *t = &l.t[l.n];
        snprintf(l.names[l.n], sizeof l.names[0], "layers.0.blocks.0.attn.relative_position_index");
        memset(t, 0, sizeof *t);
        t->name = l.names[l.n++];
        t->dtype = SWIN_ST_I64;
        t->rank = 2;
        t->shape[0] = t->shape[1] = 4;
        t->data = index;
    }
    int rc = write_tensors(dir, file, &l);
    free(ex);
    swin_model_free(m);
    return rc;
}

/* a reference of the tiny V1 model: input, logits and (optionally) the stage outputs */
static int reference(const char *dir, const char *file, int batch, swin_st_dtype dt, int stages, int rank3) {
    static float x[2 * 3 * 8 * 8];
    tu_fill(x, sizeof x / sizeof x[0], -2.0f, 2.0f);
    tensors l;
    memset(&l, 0, sizeof l);
    int64_t in[4] = {batch, 3, 8, 8}, lg[2] = {batch, 3};
    int64_t s0[4] = {batch, 4, 4, 8}, s0r3[3] = {batch, 16, 8}, s1[4] = {batch, 2, 2, 16};
    add(&l, "input", dt, 4, in, x);
    add(&l, "logits", dt, 2, lg, x);
    if (stages) {
        if (rank3) add(&l, "stage0", dt, 3, s0r3, x);
        else add(&l, "stage0", dt, 4, s0, x);
        add(&l, "stage1", dt, 4, s1, x);
    }
    return write_tensors(dir, file, &l);
}

/* every seed of a target must pass through it */
static int check(const char *dir, const char *target, const char *const *files) {
    int bad = 0;
    for (int i = 0; files[i]; i++) {
        char path[1024];
        size_t n = 0;
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unsigned char *d = tu_read_file(path, &n);
        swin_status st = d ? swin_fuzz_find(target)->run(d, n) : SWIN_ERR_IO;
        printf("%-12s %-24s %6zu bytes  %s%s%s\n", target, files[i], n, swin_status_str(st),
               st == SWIN_OK ? "" : ": ", st == SWIN_OK ? "" : swin_last_error());
        bad |= st != SWIN_OK;
        free(d);
    }
    return bad;
}

/* a version 2 scales file of the tiny V1 model (the reference target's), random amax, margin 2 */
static int scales(const char *dir, const char *file) {
    swin_config c = swin_fuzz_tiny_config(1);
    swin_model *m = NULL;
    if (swin_model_random_config(&c, 1, &m) != SWIN_OK) return 1;
    int n = swin_fp8_scale_count(m);
    float *amax = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) amax[i] = tu_uniform(0.01f, 8.0f);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    swin_status st = swin_fp8_scales_write(m, path, amax, 2.0f, "random", 8);
    if (st != SWIN_OK) fprintf(stderr, "fuzz_make_seeds: %s\n", swin_last_error());
    free(amax);
    swin_model_free(m);
    return st == SWIN_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_make_seeds OUT_DIR\n");
        return 2;
    }
    char st_dir[1024], ref_dir[1024], fp8_dir[1024];
    snprintf(st_dir, sizeof st_dir, "%s/safetensors", argv[1]);
    snprintf(ref_dir, sizeof ref_dir, "%s/reference", argv[1]);
    snprintf(fp8_dir, sizeof fp8_dir, "%s/fp8_scales", argv[1]);
    mkdir(argv[1], 0755);
    mkdir(st_dir, 0755);
    mkdir(ref_dir, 0755);
    mkdir(fp8_dir, 0755);
    tu_seed(11);
    int rc = checkpoint(st_dir, "v1_f32.safetensors", 1, SWIN_ST_F32, 0) |
             checkpoint(st_dir, "v1_f16.safetensors", 1, SWIN_ST_F16, 0) |
             checkpoint(st_dir, "v1_bf16_index.safetensors", 1, SWIN_ST_BF16, 1) |
             checkpoint(st_dir, "v2_f32.safetensors", 2, SWIN_ST_F32, 0) |
             reference(ref_dir, "stages_f32.safetensors", 1, SWIN_ST_F32, 1, 0) |
             reference(ref_dir, "batch2_f16.safetensors", 2, SWIN_ST_F16, 0, 0) |
             reference(ref_dir, "rank3_bf16.safetensors", 1, SWIN_ST_BF16, 1, 1) | scales(fp8_dir, "v2.json");
    static const char *const ST[] = {"v1_f32.safetensors", "v1_f16.safetensors", "v1_bf16_index.safetensors",
                                     "v2_f32.safetensors", NULL};
    static const char *const REF[] = {"stages_f32.safetensors", "batch2_f16.safetensors", "rank3_bf16.safetensors",
                                      NULL};
    static const char *const FP8[] = {"v2.json", NULL};
    if (!rc) rc = check(st_dir, "safetensors", ST) | check(ref_dir, "reference", REF) | check(fp8_dir, "fp8_scales", FP8);
    swin_fuzz_cleanup();
    return rc ? 1 : 0;
}
