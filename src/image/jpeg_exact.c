/* jpeg_exact.c - the second half of the split JPEG decode on the CPU (jpeg.h): coefficients
 * (swin_jpeg_read_coefs) to the RGB pixels swin_jpeg_decode gives, with jpeg_exact.h's
 * arithmetic, the same functions a GPU kernel is to run. Not a fast path on a CPU (libjpeg's
 * own SIMD decode is); it is the reference that proves the arithmetic exact, for a pipeline
 * mode where the decoder threads stop after the coefficients and the GPU does the rest (not
 * wired yet). Measured on the 48 ImageNet photos of the project's checks (one thread of the
 * development machine): whole decode 2.34 ms per photo, coefficients only 2.06 ms (most of these
 * photos are 4:4:4, whose coefficients are as many as their pixels), so the CPU side saves about
 * 12%; the portable C here takes 6.6 ms more.
 * Test: tests/test_jpeg_exact.c.
 */
#include "jpeg.h"
#include "jpeg_exact.h"

size_t swin_jpeg_scratch_bytes(const swin_jpeg_coefs *c) {
    size_t n = 0;
    for (int i = 0; i < c->nc; i++) n += (size_t)c->comp[i].bw * 8 * c->comp[i].bh * 8;
    return n;
}

void swin_jpeg_reconstruct(const swin_jpeg_coefs *c, uint8_t *rgb, uint8_t *scratch) {
    const uint8_t *plane[3] = {0};
    uint8_t *s = scratch;
    for (int i = 0; i < c->nc; i++) {   /* every block's IDCT into the component's sample plane */
        const swin_jpeg_plane *p = &c->comp[i];
        const int ps = p->bw * 8;
        for (int by = 0; by < p->bh; by++)
            for (int bx = 0; bx < p->bw; bx++)
                swin_jx_idct_block(p->coef + ((size_t)by * p->bw + bx) * 64, p->quant, s + (size_t)by * 8 * ps + bx * 8,
                                   ps);
        plane[i] = s;
        s += (size_t)ps * p->bh * 8;
    }
    for (int y = 0; y < c->h; y++) {
        for (int x = 0; x < c->w; x++, rgb += 3) {
            int v[3] = {0, 0, 0};
            for (int i = 0; i < c->nc; i++) {
                const swin_jpeg_plane *p = &c->comp[i];
                v[i] = swin_jx_upsample(plane[i], p->bw * 8, p->dw, p->dh, p->fx, p->fy, x, y);
            }
            if (c->nc == 1) rgb[0] = rgb[1] = rgb[2] = (uint8_t)v[0];
            else if (c->ycc) swin_jx_ycc_to_rgb(v[0], v[1], v[2], rgb);
            else rgb[0] = (uint8_t)v[0], rgb[1] = (uint8_t)v[1], rgb[2] = (uint8_t)v[2];
        }
    }
}
