/* jpeg_par.h - entropy decoding of one baseline JPEG by many threads at once: the sequential
 * decoder of jpeg_huff.h split over the bitstream, for a GPU thread block per image
 * (kernels/jpeg_huff.cu) and for the CPU reference that emulates that block (jpeg_par.c).
 *
 * Why: one thread per image (jpeg_huff.h) is serial, and a GPU thread is about 15 times slower
 * than a CPU core at it: a batch then waits for its largest image (a quarter of a second for a
 * 1600x1200 photo). Here the image's entropy-coded data (unstuffed first: swin_jp_unstuff) is
 * cut into T pieces of S bits, one per thread, and the decode state where each piece begins is
 * found by self-synchronisation (Weissenberger and Schmidt, "Massively Parallel Huffman Decoding
 * on GPUs", ICPP 2018, applied to JPEG):
 *   state    the bit position, the block within the MCU (b) and the coefficient within the
 *            block (z: 0 = the DC comes next), which pick the Huffman table
 *   round 0  thread 0 starts at bit 0 in the true state, every other thread at the start of its
 *            piece guessing b = 0, z = 0, and decodes to the first symbol boundary at or past
 *            its piece's end: its exit state
 *   round r  every thread whose start differs from the exit its predecessor had in round r-1
 *            starts there and decodes its piece again; when no start changed, every start is
 *            the true one (by induction from thread 0). Huffman codes resynchronise within a
 *            few symbols, so a wrong guess rarely survives a piece: two or three rounds. After
 *            SWIN_JP_MAX_ROUNDS the image is refused (left to libjpeg).
 *   prefix   each thread's blocks completed and DC differences summed per component, summed
 *            over the threads before it: its first block's index and its DC predictors
 *   phase 2  every thread decodes its piece once more from its true start, writing the
 *            coefficients, with the checks of the sequential decoder; the thread that completes
 *            the image's last block checks that only padding bits are left.
 * An image is accepted exactly when the sequential decoder accepts it (same symbols, same checks,
 * in the same places), with the same coefficients; restart markers are not covered (the caller
 * leaves those images to libjpeg), nor is anything after the data but the end-of-image marker.
 * Test: tests/test_jpeg_huff.c (the CPU emulation against the sequential decoder), and
 * tests/test_gpu_jpeg_huff.c (the kernel against both).
 */
#ifndef SWIN_JPEG_PAR_H
#define SWIN_JPEG_PAR_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jpeg_huff.h"

/* Threads a block and the fewest bits a piece: 512 and 3072 since 2026-11-27, 256 and 8192 before
 * (SWIN_JP_V1_*, still selectable: swin_jp_config). On the 49 photos of the end-to-end benchmark
 * (tools/bench_pipeline.sh; 113 KiB on average) the CPU emulation counts, per image, the bits a
 * thread decodes over round 0, the rounds that change a start and phase 2 (the block's critical
 * path): 256/8192 at most 32,768 (4 x 8192: a piece is at least 8192 bits, so a 113 KiB image
 * keeps 110 of its 256 threads busy), mean 24,746; 512/3072 at most 19,302, mean 11,219, with at
 * most 5 rounds; 256/4096 at most 25,732; 512/4096 20,480; 512/6144 24,576; 768 and 1024 threads
 * fit one block an SM (registers), two waves for a batch of 256. */
enum {
    SWIN_JP_THREADS = 512, SWIN_JP_MIN_BITS = 3072, SWIN_JP_V1_THREADS = 256, SWIN_JP_V1_MIN_BITS = 8192,
    SWIN_JP_MAX_ROUNDS = 32, SWIN_JP_MAX_BPM = 10
};
enum { SWIN_JP_NO_SYNC = SWIN_JH_N };   /* status: no fixed point within SWIN_JP_MAX_ROUNDS */

/* a decode state; as an exit also what the piece decoded: blocks completed, DC sums per component */
typedef struct {
    int32_t pos;             /* bit position in the unstuffed data */
    int16_t b, z;            /* block within the MCU, coefficient within the block */
    int32_t err;             /* 0, or the SWIN_JH_ code that stopped the decode */
    int32_t blocks;
    uint32_t dc[3];          /* wrapping sums of DC differences, by scan component */
} swin_jp_state;

/* what every thread of an image reads */
typedef struct {
    const uint8_t *data;     /* the unstuffed entropy-coded data */
    int32_t total_bits;
    const swin_jh_table *tables;
    const swin_jh_image *m;
    int bpm;                 /* blocks per MCU */
    int8_t bs[SWIN_JP_MAX_BPM], bx[SWIN_JP_MAX_BPM], by[SWIN_JP_MAX_BPM];   /* per block of the MCU: its scan
                                                                          component, column, row */
    long long total_blocks;  /* MCUs x bpm */
} swin_jp_ctx;

/* 0, or -1 when the record's layout has more than SWIN_JP_MAX_BPM blocks per MCU */
SWIN_JX_HD int swin_jp_ctx_init(swin_jp_ctx *c, const swin_jh_image *m, const uint8_t *data,
                                const swin_jh_table *tables) {
    c->data = data + m->data;
    c->total_bits = (int32_t)(m->data_len * 8);
    c->tables = tables + m->table;
    c->m = m;
    int b = 0;
    for (int s = 0; s < m->ns; s++)
        for (int v = 0; v < m->vs[s]; v++)
            for (int h = 0; h < m->hs[s]; h++) {
                if (b == SWIN_JP_MAX_BPM) return -1;
                c->bs[b] = (int8_t)s, c->bx[b] = (int8_t)h, c->by[b] = (int8_t)v;
                b++;
            }
    c->bpm = b;
    c->total_blocks = (long long)m->mcux * m->mcuy * b;
    return 0;
}

/* bits per piece for T threads: the data split evenly, at least min_bits (SWIN_JP_MIN_BITS: well
 * above the distance a wrong start needs to synchronise, about 100 to 1,600 bits on photos, so
 * that one round after the first settles nearly every piece) */
SWIN_JX_HD int32_t swin_jp_piece(const swin_jp_ctx *c, int T, int32_t min_bits) {
    int32_t s = (c->total_bits + T - 1) / T;
    return s < min_bits ? min_bits : s;
}

/* the bit reader at bit pos: no stuffing, no markers; past the data it reads zeros */
SWIN_JX_HD void swin_jp_seek(const swin_jp_ctx *c, int32_t pos, const uint8_t **p, uint64_t *buf, int *bits) {
    const uint8_t *q = c->data + (pos >> 3), *pend = c->data + (c->total_bits >> 3);
    uint64_t v = 0;
    int n = 0;
    while (n <= 56 && q < pend) v |= (uint64_t)*q++ << (56 - n), n += 8;
    *p = q;
    *buf = v << (pos & 7);
    *bits = n - (pos & 7);
}

/* the coefficients of the image's block g (in decoding order; b = g % bpm, its place in the MCU),
 * NULL for a block past the component's edge (coded, not kept) */
SWIN_JX_HD int16_t *swin_jp_block(const swin_jp_ctx *c, long long g, int b, int16_t *coef) {
    const swin_jh_image *m = c->m;
    const long long u = g / c->bpm;
    const int s = c->bs[b], ci = m->comp[s];
    const int bx = (int)(u % m->mcux) * m->hs[s] + c->bx[b], by = (int)(u / m->mcux) * m->vs[s] + c->by[b];
    return bx < m->rec.bw[ci] && by < m->rec.bh[ci] ? coef + m->rec.coef[ci] + ((long long)by * m->rec.bw[ci] + bx) * 64
                                                    : 0;
}

/* Decode from state st to the first symbol boundary at or past bit `end` (clamped to the data).
 * write = 0: the sync rounds (nothing written; after a symbol that cannot be, from a wrong start
 * or in damaged data, decoding goes on from the next bit in the guessed state b = 0, z = 0, so
 * that a wrong start still synchronises; damaged data is caught by phase 2).
 * write = 1: phase 2: st is the true start, g its first block's index, pred its DC predictors;
 * coefficients go into coef (zero on entry), the decode stops after the image's last block
 * (*ended = 1, *end_pos) and a problem is returned as a SWIN_JH_ code. */
SWIN_JX_HD swin_jp_state swin_jp_run(const swin_jp_ctx *c, swin_jp_state st, int32_t end, int write, long long g,
                                     const uint32_t *pred, int16_t *coef, int *ended, int32_t *end_pos) {
    const swin_jh_image *m = c->m;
    swin_jp_state o = st;
    o.blocks = 0;
    if (st.err) {
        o.dc[0] = o.dc[1] = o.dc[2] = 0;
        return o;
    }
    if (end > c->total_bits) end = c->total_bits;
    const uint8_t *p, *pend = c->data + (c->total_bits >> 3);
    uint64_t buf;
    int bits;
    swin_jp_seek(c, o.pos, &p, &buf, &bits);
    int b = o.b, z = o.z;
    /* What a symbol needs is held in registers and changes only with the block (b): the scan
     * component s, its two tables, its quantisation table; the DC sums are three scalars, not an
     * array indexed by s. (Indexed per symbol, c->bs[b] and o.dc[s] sat in the GPU thread's local
     * memory, a load on every symbol's dependency chain.) */
    int s = c->bs[b];
    const swin_jh_table *tdc = c->tables + m->dc[s], *tac = c->tables + m->ac[s];
    const uint16_t *quant = m->rec.quant[m->comp[s]];
    uint32_t dc0 = 0, dc1 = 0, dc2 = 0;
    int16_t *blk = write ? swin_jp_block(c, g, b, coef) : 0;   /* write: the current block's coefficients */
    while (o.pos < end) {
        if (bits < 32) {
            if (pend - p >= 4) {   /* four bytes, loaded independently of each other */
                const uint32_t w = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
                buf |= (uint64_t)w << (32 - bits);
                p += 4, bits += 32;
            } else {
                while (bits <= 56 && p < pend) buf |= (uint64_t)*p++ << (56 - bits), bits += 8;
            }
        }
        const swin_jh_table *t = z == 0 ? tdc : tac;
        int len;
        const int sym = swin_jh_peek(buf, t, &len);
        int e = 0, tot = 0;
        if (sym < 0) {
            e = SWIN_JH_BAD_CODE;
        } else if (z == 0) {
            tot = len + sym;
            if (sym > 15) e = SWIN_JH_BAD_CODE;
            else if (o.pos + tot > c->total_bits) e = SWIN_JH_NO_DATA;
            else {
                const int32_t diff = sym ? swin_jh_extend((int32_t)((buf << len) >> (64 - sym)), sym) : 0;
                const uint32_t sum = (s == 0 ? dc0 : s == 1 ? dc1 : dc2) + (uint32_t)diff;
                if (s == 0) dc0 = sum;
                else if (s == 1) dc1 = sum;
                else dc2 = sum;
                if (write) {
                    const int32_t d = (int32_t)(pred[s] + sum);
                    const int32_t q = quant[0];
                    if (d < -32768 || d > 32767) e = SWIN_JH_BAD_DC;
                    else if (d * q > 2047 || d * q < -2047) e = SWIN_JH_RANGE;
                    else if (blk) blk[0] = (int16_t)d;
                }
                z = 1;
            }
        } else {
            const int run = sym >> 4, sz = sym & 15;
            tot = len + sz;
            if (o.pos + tot > c->total_bits) e = SWIN_JH_NO_DATA;
            else if (sz) {
                const int k = z + run;
                if (k > 63) e = SWIN_JH_BAD_RUN;
                else {
                    if (write) {
                        const int32_t a = swin_jh_extend((int32_t)((buf << len) >> (64 - sz)), sz), zz = swin_jh_natural(k);
                        const int32_t q = quant[zz];
                        if (a * q > 2047 || a * q < -2047) e = SWIN_JH_RANGE;
                        else if (blk) blk[zz] = (int16_t)a;
                    }
                    z = k + 1;
                }
            } else {
                z = run == 15 ? z + 16 : 64;
            }
        }
        if (e && write) {
            o.err = e;
            break;
        }
        if (e) {   /* a sync round: a wrong start, or damaged data (phase 2 will tell); on from the next bit */
            o.pos++;
            swin_jp_seek(c, o.pos, &p, &buf, &bits);
            b = 0, z = 0;
            s = c->bs[0], tdc = c->tables + m->dc[s], tac = c->tables + m->ac[s];
            quant = m->rec.quant[m->comp[s]];
            continue;
        }
        buf <<= tot;
        bits -= tot;
        o.pos += tot;
        if (z >= 64) {   /* the block is complete */
            o.blocks++;
            b = b + 1 == c->bpm ? 0 : b + 1;
            z = 0;
            s = c->bs[b], tdc = c->tables + m->dc[s], tac = c->tables + m->ac[s];
            quant = m->rec.quant[m->comp[s]];
            if (write) {
                if (++g == c->total_blocks) {
                    *ended = 1;
                    *end_pos = o.pos;
                    break;
                }
                blk = swin_jp_block(c, g, b, coef);
            }
        }
    }
    o.b = (int16_t)b, o.z = (int16_t)z;
    o.dc[0] = dc0, o.dc[1] = dc1, o.dc[2] = dc2;
    return o;
}

/* the state a thread starts round 0 in: the true start for thread 0, a guess for the others */
SWIN_JX_HD swin_jp_state swin_jp_guess(int32_t pos) {
    swin_jp_state s;
    s.pos = pos, s.b = 0, s.z = 0, s.err = 0, s.blocks = 0;
    s.dc[0] = s.dc[1] = s.dc[2] = 0;
    return s;
}

/* a start taken from the predecessor's exit: its position and state, nothing decoded yet */
SWIN_JX_HD swin_jp_state swin_jp_start_from(swin_jp_state exit) {
    swin_jp_state s = swin_jp_guess(exit.pos);
    s.b = exit.b, s.z = exit.z, s.err = exit.err;
    return s;
}

SWIN_JX_HD int swin_jp_same_start(swin_jp_state a, swin_jp_state b) {
    return a.pos == b.pos && a.b == b.b && a.z == b.z && a.err == b.err;
}

/* Phase 2 of thread t: from its true start, with g its first block's index and pred its DC
 * predictors. Returns a SWIN_JH_ code; *ended when it completed the image's last block, then
 * with the check that only padding bits follow. */
SWIN_JX_HD int swin_jp_write(const swin_jp_ctx *c, swin_jp_state start, int32_t end, long long g, const uint32_t *pred,
                             int16_t *coef, int *ended) {
    *ended = 0;
    if (g >= c->total_blocks) return SWIN_JH_OK;   /* its piece is past the image's last block */
    if (start.err) return start.err;               /* the data before it could not be decoded */
    int32_t end_pos = 0;
    swin_jp_state o = swin_jp_run(c, start, end, 1, g, pred, coef, ended, &end_pos);
    if (o.err) return o.err;
    if (*ended && c->total_bits - end_pos >= 8) return SWIN_JH_BAD_END;
    return SWIN_JH_OK;
}

/* ---- host side (jpeg_par.c) */
#ifndef __CUDACC__
/* The entropy-coded data of a JPEG (from its scan's start) without the stuffed zero bytes, as
 * the parallel decoder reads it: 0 when the data ends at the end-of-image marker with no other
 * marker before it (no restart markers, no fill bytes), *out_len its length; -1 otherwise (the
 * caller leaves the image to libjpeg). dst: room for n bytes. */
int swin_jp_unstuff(const uint8_t *src, size_t n, uint8_t *dst, size_t *out_len);
/* The parallel decoder on the CPU, `threads` threads (1 .. SWIN_JP_THREADS) emulated one after
 * the other in the kernel's order: m describes unstuffed data (m->data, m->data_len into bytes).
 * Returns a SWIN_JH_ code or SWIN_JP_NO_SYNC; coef zero on entry. *rounds: the rounds it took.
 * threads, min_bits: the kernel's (swin_jp_config), or fewer bits to exercise the rounds on small
 * images. */
int swin_jp_decode_host(const swin_jh_image *m, const uint8_t *bytes, const swin_jh_table *tables, int16_t *coef,
                        int threads, int32_t min_bits, int *rounds);
#endif

/* The kernel's threads a block and fewest bits a piece: SWIN_JP_THREADS and SWIN_JP_MIN_BITS, or
 * with SWIN_JPEG_GPU_PIECES=v1 in the environment the first kernel's SWIN_JP_V1_* (kept to
 * measure the two in one run). Read at each call: the tests switch it. */
static inline void swin_jp_config(int *threads, int32_t *min_bits) {
    const char *v = getenv("SWIN_JPEG_GPU_PIECES");
    const int v1 = v && !strcmp(v, "v1");
    *threads = v1 ? SWIN_JP_V1_THREADS : SWIN_JP_THREADS;
    *min_bits = v1 ? SWIN_JP_V1_MIN_BITS : SWIN_JP_MIN_BITS;
}

#endif
