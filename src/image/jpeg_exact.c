/* jpeg_exact.c - the second half of the split JPEG decode on the CPU (jpeg.h): coefficients
 * (swin_jpeg_read_coefs) to the RGB pixels swin_jpeg_decode gives, with jpeg_exact.h's
 * arithmetic, the same functions a GPU kernel is to run. Not a fast path on a CPU (libjpeg's
 * own SIMD decode is); it is the reference that proves the arithmetic exact, for a pipeline
 * mode where the decoder threads stop after the coefficients and the GPU does the rest
 * (kernels/jpeg_exact.cu runs the same swin_jx_block and swin_jx_pixel; not wired yet). Measured on the 48 ImageNet photos of the project's checks (one thread of the
 * development machine): whole decode 2.34 ms per photo, coefficients only 2.06 ms (most of these
 * photos are 4:4:4, whose coefficients are as many as their pixels), so the CPU side saves about
 * 12%; the portable C here takes 6.6 ms more.
 * Test: tests/test_jpeg_exact.c.
 */
#include <string.h>

#include "jpeg.h"
#include "jpeg_exact.h"

size_t swin_jpeg_scratch_bytes(const swin_jpeg_coefs *c) {
    size_t n = 0;
    for (int i = 0; i < c->nc; i++) n += (size_t)c->comp[i].bw * 8 * c->comp[i].bh * 8;
    return n;
}

/* the GPU's two passes (kernels/jpeg_exact.cu) as loops, on the record of the image alone */
void swin_jpeg_reconstruct(const swin_jpeg_coefs *c, uint8_t *rgb, uint8_t *scratch) {
    swin_jx_image r;
    swin_jpeg_describe(c, 0, 0, 0, &r);
    long long blocks = 0;
    for (int i = 0; i < c->nc; i++) blocks += (long long)c->comp[i].bw * c->comp[i].bh;
    for (long long b = 0; b < blocks; b++) swin_jx_block(&r, c->buf, scratch, b);
    for (long long p = 0; p < (long long)c->w * c->h; p++) swin_jx_pixel(&r, scratch, rgb, p);
}

size_t swin_jpeg_describe(const swin_jpeg_coefs *c, long long coef, long long plane, long long rgb,
                          swin_jx_image *r) {
    *r = (swin_jx_image){0};
    r->w = c->w, r->h = c->h, r->nc = c->nc, r->ycc = c->ycc, r->rgb = rgb;
    size_t n = 0;
    for (int i = 0; i < c->nc; i++) {
        const swin_jpeg_plane *p = &c->comp[i];
        r->coef[i] = coef + (long long)n;
        r->plane[i] = plane;
        plane += (long long)p->bw * 8 * p->bh * 8;
        n += (size_t)p->bw * p->bh * 64;
        r->fx[i] = p->fx, r->fy[i] = p->fy, r->dw[i] = p->dw, r->dh[i] = p->dh, r->bw[i] = p->bw, r->bh[i] = p->bh;
        for (int k = 0; k < 64; k++) r->quant[i][k] = p->quant[k];
    }
    return n;
}

void swin_jpeg_pack_coefs(const swin_jpeg_coefs *c, int16_t *dst) {
    size_t n = 0;
    for (int i = 0; i < c->nc; i++) n += (size_t)c->comp[i].bw * c->comp[i].bh * 64;
    memcpy(dst, c->buf, n * sizeof(int16_t));   /* read_coefs stores the components in this order */
}

