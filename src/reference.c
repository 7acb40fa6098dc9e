/* reference.c - the reference file of `swin verify` (see reference.h): shapes checked against the
 * model first, then every tensor read as fp32.
 * Test: tests/cli_verify.sh; tests/fuzz (fuzz_reference) and its regression cases in
 * tests/test_fuzz_replay.c.
 */
#include "reference.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "safetensors.h"

/* Find `name`, check its shape against want[rank] (-1: any, taken from the file), read as fp32. */
static swin_status read_tensor(const swin_st *f, const char *name, int rank, int64_t *want, const char *expect,
                               float **out) {
    const char *path = swin_st_path(f);
    const swin_st_tensor *t = swin_st_find(f, name);
    if (!t) return swin_fail(SWIN_ERR_TENSOR, "%s: no tensor '%s' (expected %s)", path, name, expect);
    int ok = t->rank == rank;
    for (int d = 0; ok && d < rank; d++) {
        if (want[d] < 0) want[d] = t->shape[d];
        ok = t->shape[d] == want[d];
    }
    char buf[128];
    if (!ok || t->numel < 1)
        return swin_fail(SWIN_ERR_TENSOR, "%s: tensor '%s' has shape %s, expected %s", path, name,
                         swin_st_shape_str(t, buf, sizeof buf), expect);
    *out = malloc((size_t)t->numel * sizeof(float));
    if (!*out) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory reading '%s'", path, name);
    return swin_st_read_f32(f, t, *out);
}

static swin_status read_input_logits(const swin_st *f, const swin_config *c, swin_reference *r) {
    const char *path = swin_st_path(f);
    char expect[256];
    int64_t in_shape[4] = {-1, c->in_chans, c->img_h, c->img_w};
    snprintf(expect, sizeof expect, "[B, %d, %d, %d] for this model (%s, %dx%d px)", c->in_chans, c->img_h,
             c->img_w, c->arch, c->img_h, c->img_w);
    const swin_st_tensor *t = swin_st_find(f, "input");
    if (t && t->rank == 4 && t->shape[0] > SWIN_REFERENCE_MAX_BATCH)
        return swin_fail(SWIN_ERR_TENSOR, "%s: batch %lld is too large (at most %d)", path, (long long)t->shape[0],
                         SWIN_REFERENCE_MAX_BATCH);
    SWIN_TRY(read_tensor(f, "input", 4, in_shape, expect, &r->input));
    r->batch = (int)in_shape[0];
    r->classes = c->num_classes;
    int64_t lg_shape[2] = {in_shape[0], c->num_classes};
    snprintf(expect, sizeof expect, "[%lld, %d] (batch of 'input', classes of the model)", (long long)in_shape[0],
             c->num_classes);
    return read_tensor(f, "logits", 2, lg_shape, expect, &r->logits);
}

/* The `stageK` tensors the file holds, each checked against the model's stage shape [B,H,W,C]
 * (rank 3 [B,H*W,C] is accepted too: the same memory). Stages it lacks stay NULL. */
static swin_status read_stages(const swin_st *f, const swin_model *m, swin_reference *r) {
    const char *path = swin_st_path(f);
    const swin_config *c = swin_model_config(m);
    for (int i = 0; i < swin_st_count(f); i++) {   /* a stage this model does not have */
        const char *name = swin_st_at(f, i)->name;
        int k = -1, used = 0;
        if (sscanf(name, "stage%d%n", &k, &used) == 1 && name[used] == '\0' && (k < 0 || k >= c->num_stages))
            return swin_fail(SWIN_ERR_TENSOR, "%s: tensor '%s', but the model has %d stages", path, name,
                             c->num_stages);
    }
    for (int k = 0; k < c->num_stages; k++) {
        char name[16], expect[160];
        snprintf(name, sizeof name, "stage%d", k);
        const swin_st_tensor *t = swin_st_find(f, name);
        int64_t *sh = r->stage_shape[k];
        SWIN_TRY(swin_model_stage_shape(m, k, r->batch, sh));
        if (!t) continue;
        snprintf(expect, sizeof expect, "[%lld, %lld, %lld, %lld] (output of stage %d for batch %d)",
                 (long long)sh[0], (long long)sh[1], (long long)sh[2], (long long)sh[3], k, r->batch);
        int64_t want[4] = {sh[0], sh[1], sh[2], sh[3]};
        if (t->rank == 3) {
            want[1] = sh[1] * sh[2];
            want[2] = sh[3];
        }
        SWIN_TRY(read_tensor(f, name, t->rank == 3 ? 3 : 4, want, expect, &r->stage[k]));
    }
    return SWIN_OK;
}

swin_status swin_reference_read(const char *path, const swin_model *m, swin_reference *out) {
    if (!path || !m || !out) return swin_fail(SWIN_ERR_ARGUMENT, "swin_reference_read: NULL argument");
    memset(out, 0, sizeof *out);
    swin_st *f = NULL;
    SWIN_TRY(swin_st_open(path, &f));
    swin_status st = read_input_logits(f, swin_model_config(m), out);
    if (st == SWIN_OK) st = read_stages(f, m, out);
    swin_st_close(f);
    if (st != SWIN_OK) swin_reference_free(out);
    return st;
}

void swin_reference_free(swin_reference *r) {
    if (!r) return;
    free(r->input);
    free(r->logits);
    for (int k = 0; k < SWIN_MAX_STAGES; k++) free(r->stage[k]);
    memset(r, 0, sizeof *r);
}

size_t swin_reference_stage_numel(const swin_reference *r, int k) {
    if (!r || k < 0 || k >= SWIN_MAX_STAGES || !r->stage[k]) return 0;
    const int64_t *sh = r->stage_shape[k];
    return (size_t)(sh[0] * sh[1] * sh[2] * sh[3]);
}
