/* formats.h - internal to src/image: what an image file's bytes say before any decoder reads
 * them (formats.c): the format, the size its header claims, and whether its data is all there.
 * decode.c uses them to refuse huge and truncated files before stb_image or libjpeg allocate.
 * Test: build/tests/test_preprocess (bad-image cases), tests/test_fuzz_replay.c. */
#ifndef SWIN_IMAGE_FORMATS_H
#define SWIN_IMAGE_FORMATS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    SWIN_FMT_UNKNOWN, SWIN_FMT_JPEG, SWIN_FMT_PNG, SWIN_FMT_GIF, SWIN_FMT_BMP, SWIN_FMT_PNM, SWIN_FMT_TGA
} swin_format;

extern const char *const swin_format_name[];   /* "image", "JPEG", "PNG", ... by swin_format */

/* By the magic number; TGA has none (SWIN_FMT_UNKNOWN: stb decides). */
swin_format swin_format_sniff(const uint8_t *d, size_t n);
/* The width and height the header claims, read without a decoder: 1 when found. */
int swin_format_size(swin_format fmt, const uint8_t *d, size_t n, long *w, long *h);

/* Completeness: 1 when the file stops before its image data does. */
int swin_bmp_truncated(const uint8_t *d, size_t n);
/* 1 when a palette BMP has a pixel whose index is past the palette stb reads (formats.c) */
int swin_bmp_palette_short(const uint8_t *d, size_t n, int *entries, int *index);
int swin_tga_truncated(const uint8_t *d, size_t n);
/* GIF, on a private copy d: also clears the transparency flag of the first frame (see formats.c). */
int swin_gif_prepare(uint8_t *d, size_t n);
/* PNG: 1 when a chunk is cut short, -1 out of memory, else 0; may hand back *copy (malloc'd) of
 * *n bytes for stb instead of d (see formats.c). */
int swin_png_prepare(const uint8_t *d, size_t *n, uint8_t **copy);

#endif
