/* jpeg_huff.h - entropy (Huffman) decoding of baseline JPEGs, sequential: the reference for the
 * parallel decoder the GPU runs (jpeg_par.h, which reuses its tables and symbol decoding), written
 * as inline functions of plain integers that compile for CPU and GPU alike.
 *
 * Why: Pillow-exact decoding is bound by Huffman decoding (about 85% of libjpeg-turbo's time on
 * ImageNet photos: the IDCT, upsampling and colour are the rest, jpeg_exact.h). Huffman decoding
 * is lossless, so a correct decoder gives libjpeg's coefficients exactly: the result is Pillow's
 * pixels whichever side decoded an image. One GPU thread running this decoder over a whole image
 * is about 15 times slower than a CPU core (measured: a batch waited a quarter of a second for a
 * 1600x1200 photo), hence jpeg_par.h's split of the data over a thread block.
 *
 * What is covered: one baseline (sequential, Huffman) scan holding every component, 8-bit,
 * restart markers included, the layouts of jpeg.h's split decode (grey, YCbCr or RGB, each
 * component at full or half resolution). swin_jpeg_read_scan (jpeg.c) reads the header with
 * libjpeg and fills the description below, or says SWIN_ERR_UNSUPPORTED (progressive, several
 * scans, arithmetic coding, other layouts): those images are decoded by libjpeg on the CPU.
 *
 * What is refused: anything libjpeg would warn about or treat differently from clean data: a
 * code not in its table, a run past the 64th coefficient, a DC value outside int16, data running
 * out or a marker inside the data, a restart marker missing or out of sequence, anything but
 * the end-of-image marker right after the scan (junk, fill bytes, other markers), and
 * coefficients outside the range 8-bit samples give (swin_jh_block). swin_jh_decode
 * then returns non-zero and the caller decodes the image with libjpeg, which gives its own
 * verdict (an error for a damaged file, Pillow's pixels for junk it tolerates). So an image this
 * decoder accepts is one libjpeg decodes without a warning, to the same coefficients.
 * Test: tests/test_jpeg_huff.c (against libjpeg's coefficients, on every fixture and on damaged
 * copies).
 */
#ifndef SWIN_JPEG_HUFF_H
#define SWIN_JPEG_HUFF_H

#include <stdint.h>

#include "jpeg_exact.h"

/* A Huffman table as decoded here (libjpeg's d_derived_tbl): a 9-bit lookahead for the short
 * codes, and maxcode / valoffset per code length for the others. */
enum { SWIN_JH_LOOK = 9 };
typedef struct {
    uint16_t look[1 << SWIN_JH_LOOK];   /* (length << 8) | symbol for a code of <= 9 bits, else 0 */
    int32_t maxcode[18];                /* largest code of each length, -1 none; [17] a sentinel */
    int32_t valoffset[18];              /* symbol index = code + valoffset[length] */
    uint8_t huffval[256];               /* symbols in code order */
} swin_jh_table;

/* One image's scan: where its entropy-coded data is, how its MCUs are laid out, which tables. */
typedef struct {
    swin_jx_image rec;       /* its coefficients' layout (rec.coef: int16 element offsets) */
    long long data;          /* byte offset of the entropy-coded data (right after the SOS segment) */
    long long data_len;      /* bytes from there to the end of the file */
    int table;               /* index of its first table in the batch's table array */
    int ns;                  /* components in the scan (== rec.nc) */
    int comp[3];             /* the scan's components in scan order (indices into rec) */
    int hs[3], vs[3];        /* blocks per MCU of each scan component (1 x 1 when ns == 1) */
    int dc[3], ac[3];        /* each scan component's tables, relative to `table` */
    int mcux, mcuy;          /* MCUs per row, MCU rows */
    int restart;             /* restart interval in MCUs, 0 when none */
    /* the parallel decoder's data (jpeg_par.h, swin_jp_stage) only: the restart markers taken out,
     * the bit position where each interval after the first begins, as int32 at byte offset rst of
     * the same buffer as data; n_rst of them (intervals - 1; 0 without restart markers) */
    long long rst;
    int n_rst;
    /* a part of the image (swin_jp_split): its blocks g0 .. g0 + n_blocks - 1 (in decoding order),
     * whole restart intervals; n_blocks 0: the whole image (g0 0) */
    long long g0, n_blocks;
} swin_jh_image;

/* why swin_jh_decode refused an image (0: decoded) */
enum {
    SWIN_JH_OK = 0,
    SWIN_JH_BAD_CODE,        /* a bit pattern that is no code of its table */
    SWIN_JH_BAD_RUN,         /* a run past coefficient 63 */
    SWIN_JH_BAD_DC,          /* a DC value outside int16 */
    SWIN_JH_NO_DATA,         /* the data ran out, or a marker came inside it */
    SWIN_JH_BAD_RESTART,     /* a restart marker missing or out of sequence */
    SWIN_JH_BAD_END,         /* something else than end-of-image right after the scan */
    SWIN_JH_RANGE,           /* a dequantised coefficient outside +-2047 (see swin_jh_block) */
    SWIN_JH_N
};

/* jpeg_natural_order: the natural (row-major) index of the k-th coefficient in zigzag order */
#define SWIN_JH_NATURAL                                                                            \
    {0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48,       \
     41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,       \
     30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63}
#ifdef __CUDACC__
static __constant__ const uint8_t swin_jh_natural_dev[64] = SWIN_JH_NATURAL;
#endif
static const uint8_t swin_jh_natural_host[64] = SWIN_JH_NATURAL;

SWIN_JX_HD int swin_jh_natural(int k) {
#ifdef __CUDA_ARCH__
    return swin_jh_natural_dev[k];
#else
    return swin_jh_natural_host[k];
#endif
}

/* ---- the bit reader: bytes with 0xFF 0x00 unstuffed, stopping at a marker (0xFF, then not 0) */
typedef struct {
    const uint8_t *p, *end;  /* next byte, end of the data */
    uint64_t buf;            /* the next bits, left-aligned; zeros below the `bits` valid ones */
    int bits;
    int marker;              /* the marker byte the reader stopped at (p points at its 0xFF), 0 none,
                                -1 the data ended, -2 0xFF 0xFF (fill bytes: not decoded here) */
} swin_jh_bits;

/* Read on until at least 57 bits are buffered, or a marker or the end of the data stops the
 * reader: four bytes at once while none is 0xFF, else one by one with the unstuffing. */
SWIN_JX_HD void swin_jh_fill(swin_jh_bits *r) {
    while (r->bits <= 56 && !r->marker) {
        if (r->bits <= 32 && r->end - r->p >= 4) {
            const uint32_t w = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
            const uint32_t x = ~w;   /* a byte of w is 0xFF where a byte of x is 0 */
            if (!((x - 0x01010101u) & ~x & 0x80808080u)) {
                r->buf |= (uint64_t)w << (32 - r->bits);
                r->bits += 32;
                r->p += 4;
                continue;
            }
        }
        if (r->p >= r->end) { r->marker = -1; break; }
        uint32_t c = r->p[0];
        if (c == 0xFF) {
            const uint32_t d = r->p + 1 < r->end ? r->p[1] : 0x100u;
            if (d != 0) { r->marker = d == 0x100u ? -1 : d == 0xFF ? -2 : (int)d; break; }
            r->p += 2;
        } else {
            r->p++;
        }
        r->buf |= (uint64_t)c << (56 - r->bits);
        r->bits += 8;
    }
}

/* The symbol of table t that the bits buf (left-aligned) start with, *len its code length (not
 * consumed); -1 when they start with no code. Bits past the buffered ones read as zeros: the
 * caller checks *len against the bits it has. */
SWIN_JX_HD int swin_jh_peek(uint64_t buf, const swin_jh_table *t, int *len) {
    const uint32_t e = t->look[buf >> (64 - SWIN_JH_LOOK)];
    if (e) {
        *len = (int)(e >> 8);
        return (int)(e & 0xFF);
    }
    int l = SWIN_JH_LOOK + 1;
    int32_t code = (int32_t)(buf >> (64 - l));
    while (l <= 16 && code > t->maxcode[l]) code = (int32_t)(buf >> (64 - ++l));
    if (l > 16) return -1;
    *len = l;
    return t->huffval[(code + t->valoffset[l]) & 0xFF];
}

/* libjpeg's HUFF_EXTEND: v, an s-bit number, as the signed value it codes */
SWIN_JX_HD int32_t swin_jh_extend(int32_t v, int s) { return v < (1 << (s - 1)) ? v - (1 << s) + 1 : v; }

/* A code of len bits followed by sz value bits (len + sz <= 31 <= r->bits): the value, consumed */
SWIN_JX_HD int32_t swin_jh_take(swin_jh_bits *r, int len, int sz) {
    const int32_t v = sz ? swin_jh_extend((int32_t)((r->buf << len) >> (64 - sz)), sz) : 0;
    r->buf <<= len + sz;
    r->bits -= len + sz;
    return v;
}

/* One 8x8 block into out[64] (natural order; out all zero on entry, only non-zeros written;
 * NULL: decoded and dropped); *dc: the component's DC predictor; quant: its quantisation table
 * (natural order). Returns a SWIN_JH_ code.
 * Range: a JPEG of 8-bit samples has dequantised coefficients within +-2047 (the DCT of samples
 * in -128..127 stays within +-1024, quantisation adds at most half a step). Beyond that only
 * damaged data goes, and there libjpeg-turbo's 16-bit SIMD IDCT can overflow, so its pixels
 * depend on the CPU (jpeg_exact.h): such an image is left to libjpeg. */
SWIN_JX_HD int swin_jh_block(swin_jh_bits *r, const swin_jh_table *dct, const swin_jh_table *act,
                             const uint16_t *quant, int32_t *dc, int16_t *out) {
    int len;
    if (r->bits < 32) swin_jh_fill(r);
    const int s = swin_jh_peek(r->buf, dct, &len);
    if (s < 0 || s > 15) return SWIN_JH_BAD_CODE;
    if (len + s > r->bits) return SWIN_JH_NO_DATA;
    const int32_t d = *dc + swin_jh_take(r, len, s);
    if (d < -32768 || d > 32767) return SWIN_JH_BAD_DC;
    *dc = d;
    if (d * (int32_t)quant[0] > 2047 || d * (int32_t)quant[0] < -2047) return SWIN_JH_RANGE;
    if (out) out[0] = (int16_t)d;
    for (int k = 1; k < 64; k++) {
        if (r->bits < 32) swin_jh_fill(r);
        const int rs = swin_jh_peek(r->buf, act, &len);
        if (rs < 0) return SWIN_JH_BAD_CODE;
        const int run = rs >> 4, sz = rs & 15;
        if (len + sz > r->bits) return SWIN_JH_NO_DATA;
        if (sz) {
            k += run;
            if (k > 63) return SWIN_JH_BAD_RUN;
            const int32_t a = swin_jh_take(r, len, sz), z = swin_jh_natural(k);
            if (a * (int32_t)quant[z] > 2047 || a * (int32_t)quant[z] < -2047) return SWIN_JH_RANGE;
            if (out) out[z] = (int16_t)a;
        } else {
            swin_jh_take(r, len, 0);
            if (run != 15) break;   /* end of block */
            k += 15;                /* sixteen zeros; k > 63 ends the loop as libjpeg does */
        }
    }
    return SWIN_JH_OK;
}

/* At a restart or at the end of the scan: only the current byte's padding may be left before
 * the marker, and the marker must be `want`. On success the reader is past it (restart). */
SWIN_JX_HD int swin_jh_marker(swin_jh_bits *r, int want) {
    while (!r->marker && r->bits < 8) swin_jh_fill(r);
    if (r->bits >= 8 || r->marker != want) return want == 0xD9 ? SWIN_JH_BAD_END : SWIN_JH_BAD_RESTART;
    r->p += 2;
    r->buf = 0, r->bits = 0, r->marker = 0;
    return SWIN_JH_OK;
}

/* Decode image m (its data at bytes + m->data, its tables at tables + m->table) into coef (all
 * zero on entry) at m->rec's offsets. Returns SWIN_JH_OK or why the image is left to libjpeg. */
SWIN_JX_HD int swin_jh_decode(const swin_jh_image *m, const uint8_t *bytes, const swin_jh_table *tables,
                              int16_t *coef) {
    swin_jh_bits r;
    r.p = bytes + m->data, r.end = r.p + m->data_len, r.buf = 0, r.bits = 0, r.marker = 0;
    int32_t dc[3] = {0, 0, 0};
    const long long n_mcu = (long long)m->mcux * m->mcuy;
    int next_rst = 0;
    for (long long u = 0; u < n_mcu; u++) {
        if (m->restart && u && u % m->restart == 0) {
            const int e = swin_jh_marker(&r, 0xD0 + next_rst);
            if (e) return e;
            next_rst = (next_rst + 1) & 7;
            dc[0] = dc[1] = dc[2] = 0;
        }
        const int mx = (int)(u % m->mcux), my = (int)(u / m->mcux);
        for (int s = 0; s < m->ns; s++) {
            const int c = m->comp[s];
            const swin_jh_table *dt = tables + m->table + m->dc[s], *at = tables + m->table + m->ac[s];
            for (int v = 0; v < m->vs[s]; v++)
                for (int h = 0; h < m->hs[s]; h++) {
                    const int bx = mx * m->hs[s] + h, by = my * m->vs[s] + v;
                    /* blocks past the component's edge (a partial MCU) are coded but not kept */
                    int16_t *out = bx < m->rec.bw[c] && by < m->rec.bh[c]
                                       ? coef + m->rec.coef[c] + ((long long)by * m->rec.bw[c] + bx) * 64
                                       : 0;
                    const int e = swin_jh_block(&r, dt, at, m->rec.quant[c], &dc[s], out);
                    if (e) return e;
                }
        }
    }
    return swin_jh_marker(&r, 0xD9);
}

#endif
