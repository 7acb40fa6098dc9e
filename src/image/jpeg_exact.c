/* jpeg_exact.c - the second half of the split JPEG decode on the CPU (jpeg.h): coefficients
 * (swin_jpeg_read_coefs) to the RGB pixels swin_jpeg_decode gives, with jpeg_exact.h's
 * arithmetic, the same functions kernels/jpeg_exact.cu runs for the exact GPU decoder. Not a fast
 * path on a CPU (libjpeg's own SIMD decode is); it is the reference that proves the arithmetic
 * exact. Measured on the 48 ImageNet photos of the project's checks (one thread of the
 * development machine): whole decode 2.34 ms per photo, coefficients only 2.06 ms, so a split
 * at the coefficients alone would save the CPU threads about 12%; the GPU decoder takes the
 * entropy decoding too (jpeg_par.h).
 * Test: tests/test_jpeg_exact.c.
 */
#include "jpeg.h"
#include "jpeg_exact.h"

/* the GPU's two passes (kernels/jpeg_exact.cu) as loops, on the record of the image alone */
void swin_jpeg_reconstruct(const swin_jpeg_coefs *c, uint8_t *rgb, uint8_t *scratch) {
    const swin_jx_image *r = &c->rec;
    for (long long b = 0; b < swin_jx_blocks(r); b++) swin_jx_block(r, c->buf, scratch, b);
    for (long long p = 0; p < (long long)r->w * r->h; p++) swin_jx_pixel(r, scratch, rgb, p);
}

swin_jx_image swin_jpeg_record_at(const swin_jx_image *rec, long long coef, long long plane, long long rgb) {
    swin_jx_image r = *rec;
    for (int i = 0; i < r.nc; i++) r.coef[i] += coef, r.plane[i] += plane;
    r.rgb = rgb;
    return r;
}
