/* image.h - decode image files to 8-bit RGB, the way PIL's Image.open(..).convert('RGB') does.
 *
 *   swin_image img = {0};
 *   if (swin_image_load("cat.jpg", &img) != SWIN_OK)
 *       fprintf(stderr, "%s\n", swin_last_error());   // "cat.jpg: truncated JPEG (...)"
 *   ... img.rgb[(y * img.width + x) * 3 + c] ...
 *   swin_image_free(&img);
 *
 * Formats: JPEG through libjpeg-turbo (baseline, progressive, arithmetic-coded; greyscale, YCbCr,
 * RGB, CMYK/YCCK; 8-bit only, 12-bit is refused as Pillow refuses it); through stb_image PNG (grey,
 * palette, alpha, 1..16 bit, interlaced), BMP (uncompressed), GIF (first frame), TGA (RLE too);
 * binary PNM (P5/P6) read by swin itself, as Pillow reads it (samples scaled by maxval).
 * Conversion rules (checked against Pillow in tests/test_preprocess.c and tests/test_jpeg.c):
 *   JPEG pixels are Pillow's exactly: libjpeg-turbo (which Pillow's wheels bundle too) with
 *   Pillow's settings (ISLOW IDCT, fancy upsampling, no scaling); 4-component files are read as
 *   Adobe (inverted) CMYK and converted with Pillow's cmyk2rgb formula, as Pillow does;
 *   grey is replicated to R=G=B; alpha is dropped, not blended (PIL convert('RGB'));
 *   palette images take the palette colour, also for the transparent index (GIF and PNG);
 *   16-bit samples keep their high byte (v >> 8). PIL does the same for 16-bit RGB, RGBA and
 *   grey+alpha PNGs, but clips 16-bit *grey* PNGs and PGMs to min(v, 255) (mode I;16 / I),
 *   which turns most such images white; we keep the high byte there on purpose.
 *   EXIF orientation is ignored (PIL ignores it too unless ImageOps.exif_transpose is called).
 * Apart from 16-bit grey PNGs and PGMs, every format decodes identically to PIL (the tests print
 * both).
 * Malformed files: truncated files are refused (PIL: "image file is truncated"; stb and libjpeg
 * would fill the rest in), and so is a palette BMP with a pixel past its palette (stb would take
 * that colour from uninitialised memory). A JPEG is refused on any libjpeg error or warning about its data;
 * warnings that leave every pixel intact (junk bytes between header segments or before the
 * end marker, unknown JFIF/Adobe version codes) are ignored, as Pillow ignores them. Damage
 * inside JPEG entropy-coded data is not always detectable (no checksum): such files may decode
 * to wrong pixels, as they do in Pillow.
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
    /* A part of a larger image, from a decoder told what preprocessing reads (swin_image_decode_part):
     * the pixels held are columns [x0, x0 + width) and rows [y0, y0 + height) of a full_width x
     * full_height image. full_width = full_height = 0 (the default): the image is whole. */
    int x0, y0, full_width, full_height;
} swin_image;

/* The full size of img, whether it is whole or a part. */
static inline int swin_image_full_width(const swin_image *img) {
    return img->full_width > 0 ? img->full_width : img->width;
}
static inline int swin_image_full_height(const swin_image *img) {
    return img->full_height > 0 ? img->full_height : img->height;
}

/* A rectangle of pixels: columns [x0, x1), rows [y0, y1). */
typedef struct {
    int x0, y0, x1, y1;
} swin_rect;

/* Read and decode a file. On failure *out is left empty ({0}). */
swin_status swin_image_load(const char *path, swin_image *out);
/* Read a whole file (at most SWIN_IMAGE_MAX_FILE_BYTES + 1 bytes: the decoder reports a larger
 * one) into *data, malloc'd: the caller frees it. Missing files and directories are refused. */
swin_status swin_image_read_file(const char *path, uint8_t **data, size_t *size);
/* Decode bytes already in memory; name is used in messages. */
swin_status swin_image_decode(const void *data, size_t size, const char *name, swin_image *out);
/* The same, with the pixels in memory of the caller's: alloc(ctx, bytes) returns it, or NULL
 * (then malloc'd memory is used as above). *custom says which: 1 when out->rgb came from alloc
 * (never pass it to swin_image_free), 0 when it is malloc'd. JPEGs are decoded straight into it;
 * other formats are copied there. On failure *out is empty and *custom 0. */
typedef void *(*swin_image_alloc_fn)(void *ctx, size_t bytes);
swin_status swin_image_decode_into(const void *data, size_t size, const char *name, swin_image_alloc_fn alloc,
                                   void *ctx, swin_image *out, int *custom);
/* The same, decoding only what preprocessing with *part_for reads (NULL: everything), and
 * nothing is lost in the checks: a JPEG is still read to its end, so a truncated or corrupt one is
 * refused as by a whole decode. The result may be a part (x0, y0, full_width, full_height above)
 * whose every pixel is the whole decode's; preprocessing it (swin_preprocess_image,
 * swin_forward_images) gives the whole image's output bit for bit. Only baseline and progressive
 * JPEGs are decoded in part (libjpeg-turbo's cropping and skipping); other formats, and images
 * whose needed part is most of them, come back whole. */
struct swin_preprocess_params;
swin_status swin_image_decode_part(const void *data, size_t size, const char *name,
                                   const struct swin_preprocess_params *part_for, swin_image_alloc_fn alloc,
                                   void *ctx, swin_image *out, int *custom);
void swin_image_free(swin_image *img);

/* Case-insensitive check of the file name extension against the formats above
 * (.jpg .jpeg .png .bmp .gif .tga .pnm .ppm .pgm). Used to walk directories. */
int swin_image_has_extension(const char *path);

#ifdef __cplusplus
}
#endif
#endif
