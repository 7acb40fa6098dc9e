/* image.h - decode image files to 8-bit RGB, the way PIL's Image.open(..).convert('RGB') does.
 *
 *   swin_image img = {0};
 *   if (swin_image_load("cat.jpg", &img) != SWIN_OK)
 *       fprintf(stderr, "%s\n", swin_last_error());   // "cat.jpg: truncated JPEG (...)"
 *   ... img.rgb[(y * img.width + x) * 3 + c] ...
 *   swin_image_free(&img);
 *
 * Formats (stb_image): JPEG (baseline, progressive), PNG (grey, palette, alpha, 1..16 bit,
 * interlaced), BMP (uncompressed), GIF (first frame), TGA, PNM (P5/P6).
 * Conversion rules (checked against Pillow in tests/test_preprocess.c):
 *   grey is replicated to R=G=B; alpha is dropped, not blended (PIL convert('RGB'));
 *   palette images take the palette colour, also for the transparent index (GIF and PNG);
 *   16-bit samples keep their high byte (v >> 8). PIL does the same for 16-bit RGB, RGBA and
 *   grey+alpha PNGs, but clips 16-bit *grey* PNGs to min(v, 255) (mode I;16), which turns
 *   most such images white; we keep the high byte there on purpose.
 *   EXIF orientation is ignored (PIL ignores it too unless ImageOps.exif_transpose is called).
 * JPEG decoding is stb's own IDCT/upsampling, not libjpeg-turbo's: values differ from PIL's by
 * 1-3 levels on some pixels (on 48 ImageNet photos 98% identical on average, 92% at worst), and
 * stb's 4:2:2 upsampler weighs the last-but-one column the wrong way round (up to ~20 levels
 * there). Lossless formats decode identically to PIL (tests/test_preprocess.c prints both).
 * Malformed files: truncated JPEG/GIF/BMP/TGA data is refused (stb would fill it in) and JPEG
 * Huffman tables with more than 256 codes are refused (stb 2.27 overflows on them).
 * Limits: files up to SWIN_IMAGE_MAX_FILE_BYTES; the header is checked before decoding and
 * images over SWIN_IMAGE_MAX_SIDE per side or SWIN_IMAGE_MAX_PIXELS in all are refused
 * without allocating pixel memory.
 * Errors: SWIN_ERR_IMAGE, message "<path>: <reason>" (missing, empty, truncated, not an image,
 * too large); SWIN_ERR_MEMORY when allocation fails. Thread-safe (no global state is set).
 */
#ifndef SWIN_IMAGE_H
#define SWIN_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include "swin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SWIN_IMAGE_MAX_SIDE 16384
#define SWIN_IMAGE_MAX_PIXELS 100000000ll
#define SWIN_IMAGE_MAX_FILE_BYTES ((size_t)512 << 20)

typedef struct {
    int width, height;
    uint8_t *rgb;   /* [height, width, 3] row-major, owned: release with swin_image_free */
} swin_image;

/* Read and decode a file. On failure *out is left empty ({0}). */
swin_status swin_image_load(const char *path, swin_image *out);
/* Decode bytes already in memory; name is used in messages. */
swin_status swin_image_decode(const void *data, size_t size, const char *name, swin_image *out);
void swin_image_free(swin_image *img);

/* Case-insensitive check of the file name extension against the formats above
 * (.jpg .jpeg .png .bmp .gif .tga .pnm .ppm .pgm). Used to walk directories. */
int swin_image_has_extension(const char *path);

#ifdef __cplusplus
}
#endif
#endif
