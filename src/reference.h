/* reference.h - read a reference file for `swin verify`: the input a model is run on and the
 * outputs it must reproduce (made by timm / transformers: tools/export_reference.py,
 * tools/make_reference.py). Internal to libswin and the command.
 *
 *   swin_reference r;
 *   if (swin_reference_read("ref.safetensors", model, &r) != SWIN_OK)
 *       fprintf(stderr, "%s\n", swin_last_error());   // names the file, the tensor and the shapes
 *   ... r.input [B,3,H,W], r.logits [B,classes], r.stage[k] [B,H,W,C] or NULL ...
 *   swin_reference_free(&r);
 *
 * The file is a safetensors file (F32, F16 or BF16 tensors) holding
 *   input   [B, 3, H, W]   the model's input size, B from 1 to SWIN_REFERENCE_MAX_BATCH
 *   logits  [B, classes]
 *   stageK  [B, H, W, C] or [B, H*W, C], optional: the output of stage K after its blocks.
 * Every tensor's shape is checked against the model before anything is read; a stageK for a
 * stage the model does not have is refused. Errors: SWIN_ERR_IO / SWIN_ERR_FORMAT from the
 * safetensors reader, SWIN_ERR_TENSOR for a missing or mis-shaped tensor, SWIN_ERR_MEMORY.
 * Test: tests/cli_verify.sh (through `swin verify`), tests/fuzz (the fuzz_reference target).
 */
#ifndef SWIN_REFERENCE_H
#define SWIN_REFERENCE_H

#include <stdint.h>

#include "swin.h"

#define SWIN_REFERENCE_MAX_BATCH 65536

typedef struct {
    int batch, classes;
    float *input;                            /* [batch, 3, H, W]; heap */
    float *logits;                           /* [batch, classes]; heap */
    float *stage[SWIN_MAX_STAGES];           /* [batch, H, W, C], NULL where the file has none; heap */
    int64_t stage_shape[SWIN_MAX_STAGES][4]; /* the model's stage shapes for this batch */
} swin_reference;

/* Read path for model m into *out (zeroed first; on failure nothing is left to free). */
swin_status swin_reference_read(const char *path, const swin_model *m, swin_reference *out);
void swin_reference_free(swin_reference *r);
/* Elements of stage k (0 when the reference has no stage k). */
size_t swin_reference_stage_numel(const swin_reference *r, int k);

#endif
