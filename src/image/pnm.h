/* pnm.h - internal to src/image: binary PNM (P5 grey, P6 RGB) decoding (pnm.c), called by decode.c.
 * Test: build/tests/test_preprocess (the PNM cases), tests/test_fuzz_replay.c. */
#ifndef SWIN_IMAGE_PNM_H
#define SWIN_IMAGE_PNM_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

/* Width, height and maxval of a PNM header ("P5"/"P6", then three numbers with whitespace and
 * '#' comments between them; a number of 10 or more digits reads as 10^9) and the offset of the
 * pixels: 1 when all three are there; *w and *h are set as soon as they are read. */
int swin_pnm_header(const uint8_t *d, size_t n, long *w, long *h, long *maxval, size_t *offset);

/* Decode P5 / P6 as Pillow does (see pnm.c), into alloc(ctx, bytes) when it returns memory
 * (*custom = 1), else into malloc'd memory; on failure *out is empty. Other PNM kinds (P1-P4, P7)
 * are refused as unsupported. */
swin_status swin_pnm_decode(const uint8_t *d, size_t n, const char *name, swin_image_alloc_fn alloc, void *ctx,
                            swin_image *out, int *custom);

#endif
