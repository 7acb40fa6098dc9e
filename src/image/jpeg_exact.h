/* jpeg_exact.h - the arithmetic that turns a JPEG's DCT coefficients into the RGB pixels that
 * libjpeg-turbo (and so Pillow) gives with Pillow's settings (JDCT_ISLOW, fancy upsampling,
 * YCbCr -> RGB), written once as inline functions of plain integers so that the CPU
 * (jpeg_coef.c) and a GPU kernel can run the same code and get the same bits.
 *
 * Why: in an exact JPEG decode most of the time is the entropy (Huffman) decoding, which has to
 * run on a CPU thread, but a quarter to a third is the IDCT, the chroma upsampling and the colour
 * conversion, which need no serial state. Splitting there lets the CPU threads stop after the
 * coefficients and hand the rest to whoever is free.
 *
 * What libjpeg does, and so what these functions do (8-bit samples):
 * - IDCT: the "islow" integer IDCT of jidctint.c, 13-bit constants, 2 extra bits between the
 *   column and the row pass, coefficients multiplied by the quantisation table first; the result
 *   + 128 is clamped to 0..255 (libjpeg's range-limit table indexes with (x & 1023), which only
 *   differs from a clamp for |x| >= 512, values no encoder produces: the SIMD IDCTs clamp).
 * - upsampling of a component at half the luma's width and/or height: the triangle filters of
 *   jdsample.c, weights 3/4 and 1/4 with alternating rounding biases; at the image edges the
 *   nearest sample is repeated (the row above the first and below the last row of a component
 *   are that row itself, as libjpeg's context rows are). A component only 1 or 2 samples wide
 *   (and 2x upsampled horizontally) is upsampled by repetition, as libjpeg does.
 * - colour: jdcolor.c's ycc_rgb_convert, 16-bit fixed point tables computed per value here.
 * Exactness holds for valid JPEGs. Damaged entropy-coded data can give coefficients whose IDCT
 * overflows the 16-bit arithmetic of libjpeg-turbo's SIMD IDCTs (valid data stays far inside
 * it); libjpeg's output for those then depends on the CPU's instruction set, and this 64-bit
 * arithmetic may differ from it (14 of 188 decodable damaged copies of a test file did).
 * Test: tests/test_jpeg_exact.c (every committed JPEG against libjpeg's own decode, bit for bit).
 */
#ifndef SWIN_JPEG_EXACT_H
#define SWIN_JPEG_EXACT_H

#include <stdint.h>

#ifdef __CUDACC__
#define SWIN_JX_HD __host__ __device__ __forceinline__
#else
#define SWIN_JX_HD static inline
#endif

/* ---- IDCT (jidctint.c, CONST_BITS 13, PASS1_BITS 2) */
enum { SWIN_JX_CONST_BITS = 13, SWIN_JX_PASS1_BITS = 2 };
#define SWIN_JX_F_0_298631336 2446
#define SWIN_JX_F_0_390180644 3196
#define SWIN_JX_F_0_541196100 4433
#define SWIN_JX_F_0_765366865 6270
#define SWIN_JX_F_0_899976223 7373
#define SWIN_JX_F_1_175875602 9633
#define SWIN_JX_F_1_501321110 12299
#define SWIN_JX_F_1_847759065 15137
#define SWIN_JX_F_1_961570560 16069
#define SWIN_JX_F_2_053119869 16819
#define SWIN_JX_F_2_562915447 20995
#define SWIN_JX_F_3_072711026 25172

/* x / 2^n rounded (libjpeg's DESCALE; >> of a negative value is arithmetic on every compiler
 * this builds with, as libjpeg assumes too) */
SWIN_JX_HD int64_t swin_jx_descale(int64_t x, int n) { return (x + ((int64_t)1 << (n - 1))) >> n; }

SWIN_JX_HD uint8_t swin_jx_clamp(int64_t v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* One 1-D pass of the islow IDCT over in[0], in[s], .. in[7 s] (even and odd parts), writing
 * the eight sums before descaling into o[0..7]. 64-bit like libjpeg's JLONG, so that no input
 * (a corrupt file's coefficients included) overflows. */
SWIN_JX_HD void swin_jx_idct_1d(const int64_t *in, int s, int64_t o[8]) {
    int64_t z2 = in[2 * s], z3 = in[6 * s];
    int64_t z1 = (z2 + z3) * SWIN_JX_F_0_541196100;
    int64_t tmp2 = z1 + z3 * -SWIN_JX_F_1_847759065;
    int64_t tmp3 = z1 + z2 * SWIN_JX_F_0_765366865;
    int64_t tmp0 = (in[0] + in[4 * s]) * ((int64_t)1 << SWIN_JX_CONST_BITS);
    int64_t tmp1 = (in[0] - in[4 * s]) * ((int64_t)1 << SWIN_JX_CONST_BITS);
    int64_t t10 = tmp0 + tmp3, t13 = tmp0 - tmp3, t11 = tmp1 + tmp2, t12 = tmp1 - tmp2;

    tmp0 = in[7 * s], tmp1 = in[5 * s], tmp2 = in[3 * s], tmp3 = in[1 * s];
    z1 = tmp0 + tmp3;
    z2 = tmp1 + tmp2;
    z3 = tmp0 + tmp2;
    int64_t z4 = tmp1 + tmp3;
    int64_t z5 = (z3 + z4) * SWIN_JX_F_1_175875602;
    tmp0 *= SWIN_JX_F_0_298631336;
    tmp1 *= SWIN_JX_F_2_053119869;
    tmp2 *= SWIN_JX_F_3_072711026;
    tmp3 *= SWIN_JX_F_1_501321110;
    z1 *= -SWIN_JX_F_0_899976223;
    z2 *= -SWIN_JX_F_2_562915447;
    z3 = z3 * -SWIN_JX_F_1_961570560 + z5;
    z4 = z4 * -SWIN_JX_F_0_390180644 + z5;
    tmp0 += z1 + z3;
    tmp1 += z2 + z4;
    tmp2 += z2 + z3;
    tmp3 += z1 + z4;
    o[0] = t10 + tmp3, o[7] = t10 - tmp3;
    o[1] = t11 + tmp2, o[6] = t11 - tmp2;
    o[2] = t12 + tmp1, o[5] = t12 - tmp1;
    o[3] = t13 + tmp0, o[4] = t13 - tmp0;
}

/* out[y * stride + x] (8x8) <- IDCT of coef[64] (natural order) times quant[64]. libjpeg's
 * shortcuts for all-zero AC columns and rows give the same values as the full sums, so none is
 * needed here. The column pass's results are stored as int, as libjpeg's workspace is. */
SWIN_JX_HD void swin_jx_idct_block(const int16_t *coef, const uint16_t *quant, uint8_t *out, int stride) {
    int64_t ws[64], col[8], o[8];
    for (int c = 0; c < 8; c++) {
        for (int r = 0; r < 8; r++) col[r] = (int64_t)coef[r * 8 + c] * (int64_t)quant[r * 8 + c];
        swin_jx_idct_1d(col, 1, o);
        for (int r = 0; r < 8; r++)
            ws[r * 8 + c] = (int32_t)swin_jx_descale(o[r], SWIN_JX_CONST_BITS - SWIN_JX_PASS1_BITS);
    }
    for (int r = 0; r < 8; r++) {
        swin_jx_idct_1d(ws + r * 8, 1, o);
        for (int c = 0; c < 8; c++)
            out[r * stride + c] = swin_jx_clamp(swin_jx_descale(o[c], SWIN_JX_CONST_BITS + SWIN_JX_PASS1_BITS + 3) + 128);
    }
}

/* ---- upsampling (jdsample.c): a component plane p (w x h samples, row stride ps) seen at the
 * full resolution; fx, fy: 1 (same size) or 2 (half size in that direction); (x, y) a
 * full-resolution pixel. */
SWIN_JX_HD int swin_jx_sample(const uint8_t *p, int ps, int w, int h, int x, int y) {
    x = x < 0 ? 0 : x >= w ? w - 1 : x;
    y = y < 0 ? 0 : y >= h ? h - 1 : y;
    return p[(long)y * ps + x];
}

SWIN_JX_HD int swin_jx_upsample(const uint8_t *p, int ps, int w, int h, int fx, int fy, int x, int y) {
    if (fx == 1 && fy == 1) return p[(long)y * ps + x];
    const int cx = x / fx, cy = y / fy;
    if (fx == 2 && w <= 2) {   /* too narrow for the fancy filters: repetition (both directions) */
        return p[(long)(fy == 2 ? cy : y) * ps + cx];
    }
    if (fy == 1) {   /* h2v1: (3 this + nearer neighbour + 1 or 2) / 4; the ends copy */
        const int t = p[(long)y * ps + cx];
        if (x & 1) return cx == w - 1 ? t : (t * 3 + p[(long)y * ps + cx + 1] + 2) >> 2;
        return cx == 0 ? t : (t * 3 + p[(long)y * ps + cx - 1] + 1) >> 2;
    }
    /* the vertical neighbour: the row above for the upper of the two output rows, else below */
    const int ny = (y & 1) ? cy + 1 : cy - 1;
    if (fx == 1) {   /* h1v2: (3 this + neighbour + 1 or 2) / 4 */
        const int s = 3 * p[(long)cy * ps + x] + swin_jx_sample(p, ps, w, h, x, ny);
        return (s + ((y & 1) ? 2 : 1)) >> 2;
    }
    /* h2v2: column sums 3 this row + neighbour row, then (3 this + nearer column + 8 or 7) / 16;
     * the ends use 4 this sum */
    const int s0 = 3 * p[(long)cy * ps + cx] + swin_jx_sample(p, ps, w, h, cx, ny);
    if (x & 1) {
        const int s1 = cx == w - 1 ? s0 : 3 * p[(long)cy * ps + cx + 1] + swin_jx_sample(p, ps, w, h, cx + 1, ny);
        return (s0 * 3 + s1 + 7) >> 4;
    }
    const int s1 = cx == 0 ? s0 : 3 * p[(long)cy * ps + cx - 1] + swin_jx_sample(p, ps, w, h, cx - 1, ny);
    return (s0 * 3 + s1 + 8) >> 4;
}

/* ---- colour (jdcolor.c, SCALEBITS 16) */
#define SWIN_JX_FIX16(x) ((int32_t)((x) * 65536.0 + 0.5))

SWIN_JX_HD void swin_jx_ycc_to_rgb(int y, int cb, int cr, uint8_t rgb[3]) {
    const int32_t xcb = cb - 128, xcr = cr - 128;   /* |products| < 2^24: no overflow */
    const int32_t r = (SWIN_JX_FIX16(1.40200) * xcr + 32768) >> 16;
    const int32_t b = (SWIN_JX_FIX16(1.77200) * xcb + 32768) >> 16;
    const int32_t g = (-SWIN_JX_FIX16(0.34414) * xcb + 32768 + -SWIN_JX_FIX16(0.71414) * xcr) >> 16;
    rgb[0] = swin_jx_clamp(y + r);
    rgb[1] = swin_jx_clamp(y + g);
    rgb[2] = swin_jx_clamp(y + b);
}

/* ---- one image of a batch for the GPU (kernels/jpeg_exact.cu): where its coefficients, sample
 * planes and pixels are in the batch's buffers, and its layout (swin_jpeg_coefs, jpeg.h).
 * Offsets, not pointers, so that a host copy describes the device buffers. */
typedef struct {
    long long coef[3];     /* int16 element offset of each component's [bh][bw][64] coefficients */
    long long plane[3];    /* byte offset of each component's sample plane (bw 8 x bh 8) in scratch */
    long long rgb;         /* byte offset of the image's RGB8 pixels [h][w][3] in dst */
    int w, h, nc, ycc;
    int fx[3], fy[3], dw[3], dh[3], bw[3], bh[3];
    uint16_t quant[3][64];
} swin_jx_image;

/* 8x8 blocks of image r, all components */
SWIN_JX_HD long long swin_jx_blocks(const swin_jx_image *r) {
    long long n = 0;
    for (int i = 0; i < r->nc; i++) n += (long long)r->bw[i] * r->bh[i];
    return n;
}

/* Block b (0 .. swin_jx_blocks(r)) of image r: its IDCT into its plane. */
SWIN_JX_HD void swin_jx_block(const swin_jx_image *r, const int16_t *coef, uint8_t *planes, long long b) {
    for (int i = 0; i < r->nc; i++) {
        const long long nb = (long long)r->bw[i] * r->bh[i];
        if (b < nb) {
            const int by = (int)(b / r->bw[i]), bx = (int)(b % r->bw[i]), ps = r->bw[i] * 8;
            swin_jx_idct_block(coef + r->coef[i] + b * 64, r->quant[i],
                               planes + r->plane[i] + (long long)by * 8 * ps + bx * 8, ps);
            return;
        }
        b -= nb;
    }
}

/* Pixel p (0 .. w h) of image r, once every block is done: upsampled, converted, into dst. */
SWIN_JX_HD void swin_jx_pixel(const swin_jx_image *r, const uint8_t *planes, uint8_t *dst, long long p) {
    const int x = (int)(p % r->w), y = (int)(p / r->w);
    int v[3] = {0, 0, 0};
    for (int i = 0; i < r->nc; i++)
        v[i] = swin_jx_upsample(planes + r->plane[i], r->bw[i] * 8, r->dw[i], r->dh[i], r->fx[i], r->fy[i], x, y);
    uint8_t *o = dst + r->rgb + p * 3;
    if (r->nc == 1) {
        o[0] = o[1] = o[2] = (uint8_t)v[0];
    } else if (r->ycc) {
        swin_jx_ycc_to_rgb(v[0], v[1], v[2], o);
    } else {
        o[0] = (uint8_t)v[0], o[1] = (uint8_t)v[1], o[2] = (uint8_t)v[2];
    }
}

#endif
