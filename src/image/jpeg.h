/* jpeg.h - internal to src/image: JPEG decoding with libjpeg-turbo (jpeg.c), called by decode.c.
 * Test: build/tests/test_jpeg <source dir>. */
#ifndef SWIN_IMAGE_JPEG_H
#define SWIN_IMAGE_JPEG_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

/* Decode a JPEG held in memory to RGB8 as Pillow's Image.open(..).convert('RGB') does (see
 * image.h), into alloc(ctx, bytes) when alloc is given and returns memory (*custom = 1), else
 * into malloc'd memory. On failure *out is left empty and the status and message are set as
 * swin_fail does. */
swin_status swin_jpeg_decode(const uint8_t *data, size_t size, const char *name, swin_image_alloc_fn alloc,
                             void *ctx, swin_image *out, int *custom);

/* decode.c: SWIN_OK, or SWIN_ERR_IMAGE "<name>: <format> of WxH pixels is too large (...)" when
 * w x h is over SWIN_IMAGE_MAX_SIDE or SWIN_IMAGE_MAX_PIXELS. */
swin_status swin_image_check_size(const char *name, const char *format, long w, long h);

#endif
