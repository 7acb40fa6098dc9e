/* jpeg.h - internal to src/image: JPEG decoding with libjpeg-turbo (jpeg.c), called by decode.c.
 * Test: build/tests/test_jpeg <source dir>. */
#ifndef SWIN_IMAGE_JPEG_H
#define SWIN_IMAGE_JPEG_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"
#include "jpeg_exact.h"
#include "jpeg_huff.h"

/* Decode a JPEG held in memory to RGB8 as Pillow's Image.open(..).convert('RGB') does (see
 * image.h), into alloc(ctx, bytes) when alloc is given and returns memory (*custom = 1), else
 * into malloc'd memory; with part_for, only the part that preprocessing with it reads (plus a
 * margin), as swin_image_decode_part describes. On failure *out is left empty and the status and
 * message are set as swin_fail does. */
swin_status swin_jpeg_decode(const uint8_t *data, size_t size, const char *name,
                             const struct swin_preprocess_params *part_for, swin_image_alloc_fn alloc, void *ctx,
                             swin_image *out, int *custom);

/* ---- the split decode: entropy decoding on the CPU (libjpeg), the rest anywhere (jpeg_exact.h)
 * The DCT coefficients of a JPEG, with what is needed to finish the decode exactly as
 * swin_jpeg_decode does: 1 component (grey) or 3 (YCbCr, or RGB as stored), each at the full
 * resolution or at half of it in either direction (4:4:4, 4:2:2, 4:2:0, 4:4:0), 8-bit. The
 * layout is jpeg_exact.h's record of the image alone: coefficient offsets into buf, sample planes
 * into a scratch buffer of scratch_bytes, pixels at 0. */
typedef struct {
    swin_jx_image rec;
    int16_t *buf;          /* n_coef coefficients, the components one after the other (malloc) */
    size_t n_coef;
    size_t scratch_bytes;  /* the components' sample planes */
} swin_jpeg_coefs;

/* Entropy-decode a JPEG (baseline or progressive) into *out. The same refusals as
 * swin_jpeg_decode (corrupt, truncated: SWIN_ERR_IMAGE naming the file); a valid JPEG of a layout
 * above does not cover (CMYK, other sampling factors, 12-bit) is SWIN_ERR_UNSUPPORTED, and the
 * caller decodes it whole with swin_jpeg_decode instead. */
swin_status swin_jpeg_read_coefs(const uint8_t *data, size_t size, const char *name, swin_jpeg_coefs *out);
void swin_jpeg_coefs_free(swin_jpeg_coefs *c);

/* jpeg_exact.c: the rest of the decode on the CPU with jpeg_exact.h's arithmetic: rgb [h][w][3]
 * receives what swin_jpeg_decode would have given, bit for bit. scratch: c->scratch_bytes. */
void swin_jpeg_reconstruct(const swin_jpeg_coefs *c, uint8_t *rgb, uint8_t *scratch);
/* An image's record (rec: the image alone, as swin_jpeg_coefs.rec or swin_jpeg_scan.img.rec give
 * it) within a batch: its coefficients at element offset coef of the batch's coefficient buffer,
 * its sample planes at byte offset plane of the batch's scratch, its pixels at byte offset rgb of
 * the output. */
swin_jx_image swin_jpeg_record_at(const swin_jx_image *rec, long long coef, long long plane, long long rgb);

/* ---- the scan for jpeg_huff.h's entropy decoder (on the GPU, or on the CPU as its reference):
 * libjpeg reads the header; img describes the one baseline scan (img.data: the offset of the
 * entropy-coded data in the file, img.table = 0 into tables[0 .. n_tables)), img.rec the
 * coefficients' layout as swin_jpeg_read_coefs gives it. SWIN_ERR_UNSUPPORTED for a JPEG that
 * decoder does not cover (progressive, several scans, arithmetic coding, the layouts the split
 * decode refuses, tables libjpeg would refuse); the header's errors as swin_jpeg_decode gives
 * them. Either way the caller can decode the file with swin_jpeg_decode instead. */
typedef struct {
    swin_jh_image img;
    swin_jh_table tables[6];   /* a DC and an AC table per component at most */
    int n_tables;
    size_t n_coef;             /* int16 coefficients of img.rec */
    size_t scratch_bytes;      /* its sample planes (swin_jpeg_exact_cuda) */
} swin_jpeg_scan;
swin_status swin_jpeg_read_scan(const uint8_t *data, size_t size, const char *name, swin_jpeg_scan *out);

/* decode.c: SWIN_OK, or SWIN_ERR_IMAGE "<name>: <format> of WxH pixels is too large (...)" when
 * w x h is over SWIN_IMAGE_MAX_SIDE or SWIN_IMAGE_MAX_PIXELS. */
swin_status swin_image_check_size(const char *name, const char *format, long w, long h);

#endif
