/* pipeline_collect.h - what the pipeline tests (test_pipeline.c, test_gpu_pipeline.c,
 * test_gpu_multi.c) gather from swin_pipeline_run: per input its logits or its message, and
 * whether the calls came once each, in input order; the digits model; the sorted image files of
 * a folder; two bad files to put among them.
 * Header-only (static inline functions).
 */
#ifndef SWIN_PIPELINE_COLLECT_H
#define SWIN_PIPELINE_COLLECT_H

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"

#define PC_MAX_FILES 128
#define PC_MAX_CLASSES 16

typedef struct {
    int calls, in_order, nc;
    int got[PC_MAX_FILES];             /* 1 logits, 2 error */
    char err[PC_MAX_FILES][512];
    float logits[PC_MAX_FILES * PC_MAX_CLASSES];
} pc_collect;

/* empty, expecting nc classes; the logits poisoned with NaN */
static inline void pc_reset(pc_collect *c, int nc) {
    memset(c, 0, sizeof *c);
    c->in_order = 1;
    c->nc = nc;
    for (size_t j = 0; j < sizeof c->logits / sizeof c->logits[0]; j++) c->logits[j] = NAN;
}

/* swin_pipeline_result_fn; ctx: a pc_collect */
static inline void pc_on_result(void *ctx, const swin_pipeline_result *r) {
    pc_collect *c = ctx;
    if (r->index != c->calls) c->in_order = 0;
    c->calls++;
    if (r->index < 0 || r->index >= PC_MAX_FILES) return;
    c->got[r->index] = r->logits ? 1 : 2;
    if (r->logits) memcpy(c->logits + (size_t)r->index * c->nc, r->logits, (size_t)c->nc * sizeof(float));
    else snprintf(c->err[r->index], sizeof c->err[r->index], "%s", r->error ? r->error : "(null)");
}

static inline int pc_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Up to `most` image files of dir, sorted, appended to paths[n..] (malloc'ed, 1024 bytes each,
 * keeping 8 places free); returns the new count. */
static inline int pc_list_dir(const char *dir, char **paths, int n, int most) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char *names[1024];
    int k = 0;
    while (d && (e = readdir(d)) && k < 1024)
        if (e->d_name[0] != '.' && swin_image_has_extension(e->d_name)) names[k++] = strdup(e->d_name);
    if (d) closedir(d);
    qsort(names, (size_t)k, sizeof *names, pc_cmp_str);
    for (int i = 0; i < k; i++) {
        if (i < most && n < PC_MAX_FILES - 8 && (paths[n] = malloc(1024))) snprintf(paths[n++], 1024, "%s/%s", dir, names[i]);
        free(names[i]);
    }
    return n;
}

/* The bundled digits model of the source tree src; NULL after a message. */
static inline swin_model *pc_load_digits(const char *src) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/weights/digits", src);
    swin_model *m = NULL;
    swin_load_options lo = swin_load_options_default();
    if (swin_model_load(dir, &lo, &m) != SWIN_OK) {
        printf("cannot load %s: %s\n", dir, swin_last_error());
        return NULL;
    }
    if (swin_model_config(m)->num_classes > PC_MAX_CLASSES) {
        printf("%s: %d classes, the digits model (10) expected\n", dir, swin_model_config(m)->num_classes);
        swin_model_free(m);
        return NULL;
    }
    return m;
}

/* Two bad files at paths[n], paths[n + 1]: <tmp>/cut.jpg, the first half (of at most 4 KiB) of
 * `whole`, and <tmp>/missing.jpg, which does not exist; returns n + 2. */
static inline int pc_add_bad(char **paths, int n, const char *tmp, const char *whole) {
    FILE *f = fopen(whole, "rb"), *g;
    char buf[4096];
    size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    paths[n] = malloc(1024);
    snprintf(paths[n], 1024, "%s/cut.jpg", tmp);
    if ((g = fopen(paths[n], "wb"))) { fwrite(buf, 1, len / 2, g); fclose(g); }
    paths[n + 1] = malloc(1024);   /* cut short, then an end-of-image marker: libjpeg refuses it
                                      ("premature end of data segment"), the exact GPU decoder too;
                                      nvJPEG decodes it (not exact, and not a validator: the
                                      README says so), so the nvJPEG checks skip it */
    snprintf(paths[n + 1], 1024, "%s/cut_eoi.jpg", tmp);
    if ((g = fopen(paths[n + 1], "wb"))) { fwrite(buf, 1, len / 2, g); fwrite("\xFF\xD9", 1, 2, g); fclose(g); }
    paths[n + 2] = malloc(1024);
    snprintf(paths[n + 2], 1024, "%s/missing.jpg", tmp);
    return n + 3;
}

#endif
