/* jpeg_encode.h - JPEGs made in memory with libjpeg's encoder, for the tests that need many
 * layouts (test_jpeg_huff, test_jpeg_part):
 *
 *   jpeg_enc e;
 *   jpeg_enc_begin(&e, w, h, 3, 90, 0);              // RGB in, quality 90, no restarts
 *   e.c.comp_info[0].h_samp_factor = 2;              // anything else on e.c before the rows
 *   unsigned char *jpg = jpeg_enc_rows(&e, fill, ctx);   // malloc'd, e.n bytes
 */
#ifndef SWIN_TEST_JPEG_ENCODE_H
#define SWIN_TEST_JPEG_ENCODE_H

#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>

typedef struct {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    unsigned char *out;
    unsigned long n;
} jpeg_enc;

/* a w x h picture of nc components (1 grey, 3 RGB, 4 CMYK) into memory: libjpeg's defaults,
 * quality, a restart interval of `restart` MCUs */
static inline void jpeg_enc_begin(jpeg_enc *e, int w, int h, int nc, int quality, int restart) {
    e->c.err = jpeg_std_error(&e->err);
    jpeg_create_compress(&e->c);
    e->out = NULL;
    e->n = 0;
    jpeg_mem_dest(&e->c, &e->out, &e->n);
    e->c.image_width = (JDIMENSION)w, e->c.image_height = (JDIMENSION)h, e->c.input_components = nc;
    e->c.in_color_space = nc == 1 ? JCS_GRAYSCALE : nc == 3 ? JCS_RGB : JCS_CMYK;
    jpeg_set_defaults(&e->c);
    jpeg_set_quality(&e->c, quality, TRUE);
    e->c.restart_interval = (unsigned)restart;
}

/* the rows, fill(ctx, y, row) writing row y's w * nc samples; the file (malloc'd, e->n bytes) */
static inline unsigned char *jpeg_enc_rows(jpeg_enc *e, void (*fill)(void *ctx, int y, unsigned char *row),
                                           void *ctx) {
    jpeg_start_compress(&e->c, TRUE);
    unsigned char *row = malloc((size_t)e->c.image_width * (size_t)e->c.input_components);
    while (row && e->c.next_scanline < e->c.image_height) {
        fill(ctx, (int)e->c.next_scanline, row);
        JSAMPROW r = row;
        jpeg_write_scanlines(&e->c, &r, 1);
    }
    jpeg_finish_compress(&e->c);
    jpeg_destroy_compress(&e->c);
    free(row);
    return e->out;
}

#endif
