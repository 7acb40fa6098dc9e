/* perturb_tensor.c - a helper for the CLI tests, not a test itself: copies a .safetensors file
 * with one tensor shifted, through the project's own reader and writer (src/safetensors.h), so
 * that tests/cli_verify_stages.sh can make a model that is wrong from one stage on without
 * python or numpy.
 *
 *   perturb_tensor IN.safetensors OUT.safetensors NAME DELTA
 *
 * Adds DELTA to every element of tensor NAME (F32, F16 or BF16; written back as F32, which every
 * loader of the project accepts); every other tensor is copied byte for byte (metadata is not).
 * Exit 0 on success, 2 with a one-line message naming the file and the problem.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: perturb_tensor IN.safetensors OUT.safetensors NAME DELTA\n");
        return 2;
    }
    const char *in = argv[1], *out = argv[2], *name = argv[3];
    char *end = NULL;
    float delta = strtof(argv[4], &end);
    if (!*argv[4] || *end) {
        fprintf(stderr, "perturb_tensor: bad DELTA '%s' (expected a number)\n", argv[4]);
        return 2;
    }
    swin_st *f = NULL;
    if (swin_st_open(in, &f) != SWIN_OK) {
        fprintf(stderr, "perturb_tensor: %s\n", swin_last_error());
        return 2;
    }
    int n = swin_st_count(f), rc = 2;
    swin_st_tensor *ts = calloc((size_t)n + 1, sizeof *ts);
    const swin_st_tensor *target = swin_st_find(f, name);
    float *values = target ? malloc(sizeof(float) * (size_t)(target->numel > 0 ? target->numel : 1)) : NULL;
    if (!target) fprintf(stderr, "perturb_tensor: %s: no tensor '%s'\n", in, name);
    else if (!ts || !values) fprintf(stderr, "perturb_tensor: out of memory\n");
    else if (target->dtype == SWIN_ST_I64) fprintf(stderr, "perturb_tensor: %s: '%s' is I64, not a weight\n", in, name);
    else if (swin_st_read_f32(f, target, values) != SWIN_OK) fprintf(stderr, "perturb_tensor: %s\n", swin_last_error());
    else {
        for (int64_t i = 0; i < target->numel; i++) values[i] += delta;
        for (int i = 0; i < n; i++) {
            ts[i] = *swin_st_at(f, i);
            if (swin_st_at(f, i) == target) {
                ts[i].dtype = SWIN_ST_F32;
                ts[i].data = values;
                ts[i].nbytes = sizeof(float) * (size_t)target->numel;
            }
        }
        if (swin_st_write(out, ts, n) == SWIN_OK) rc = 0;
        else fprintf(stderr, "perturb_tensor: %s\n", swin_last_error());
    }
    if (rc == 0) printf("perturb_tensor: %s -> %s: '%s' + %g\n", in, out, name, (double)delta);
    free(values);
    free(ts);
    swin_st_close(f);
    return rc;
}
