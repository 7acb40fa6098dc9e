/* jpeg_par.h - entropy decoding of one baseline JPEG by many threads at once: the sequential
 * decoder of jpeg_huff.h split over the bitstream, for a GPU thread block per image
 * (kernels/jpeg_huff.cu) and for the CPU reference that emulates that block (jpeg_par.c).
 *
 * Why: one thread per image (jpeg_huff.h) is serial, and a GPU thread is about 15 times slower
 * than a CPU core at it: a batch then waits for its largest image (a quarter of a second for a
 * 1600x1200 photo). Here the image's entropy-coded data (staged first: swin_jp_stage) is
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
 * Restart markers (swin_jp_stage takes them out and records where each interval begins): an
 * interval's start is a known true state (b = 0, z = 0, the DC predictors 0). In phase 2, which
 * knows each block's index, an interval ends after its last MCU, with less than a byte of padding
 * left before the next interval's start (else the sequential decoder's "bad restart"), and
 * decoding goes on from that start. The rounds do not know block indices: there an MCU that ends
 * within a byte of an interval's start ends the interval, and a symbol across it (a wrong state)
 * goes straight to that start. The two rules differ only where an interval has an MCU of fewer
 * than 8 bits ending within a byte of its end before its last one; so phase 2 checks, for images
 * with restart markers, that each piece ends exactly where and as its last round did, and
 * refuses the image otherwise (SWIN_JP_NO_SYNC: libjpeg decodes it). The prefix sums of the DC
 * differences restart at a piece that crossed an interval's start (its exit: the sums since).
 * An image is accepted exactly when the sequential decoder accepts it (same symbols, same checks,
 * in the same places), with the same coefficients (or refused as SWIN_JP_NO_SYNC); nothing after
 * the data but the end-of-image marker is covered.
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
    int32_t pos;             /* bit position in the staged data */
    int16_t b, z;            /* block within the MCU, coefficient within the block */
    int16_t err;             /* 0, or the SWIN_JH_ code that stopped the decode */
    int16_t reset;           /* the piece passed an interval's start (restart markers) */
    int32_t blocks;
    uint32_t dc[3];          /* wrapping sums of DC differences, by scan component (since the last
                                interval start passed, when reset) */
} swin_jp_state;

/* what every thread of an image reads */
typedef struct {
    const uint8_t *data;     /* the staged entropy-coded data (unstuffed, restart markers out) */
    int32_t total_bits;
    const swin_jh_table *tables;
    const swin_jh_image *m;
    int bpm;                 /* blocks per MCU */
    int8_t bs[SWIN_JP_MAX_BPM], bx[SWIN_JP_MAX_BPM], by[SWIN_JP_MAX_BPM];   /* per block of the MCU: its scan
                                                                          component, column, row */
    long long total_blocks;  /* MCUs x bpm, or the part's blocks (m->n_blocks) */
    long long g0;            /* the part's first block in the image */
    const int32_t *rst;      /* restart markers: where each interval after the first begins (bits) */
    int n_rst;
    long long rb;            /* blocks an interval (restart interval x bpm); 0 without restarts */
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
    c->total_blocks = m->n_blocks > 0 ? m->n_blocks : (long long)m->mcux * m->mcuy * b;
    c->g0 = m->n_blocks > 0 ? m->g0 : 0;
    c->n_rst = m->n_rst;
    c->rst = m->n_rst ? (const int32_t *)(const void *)(data + m->rst) : 0;
    c->rb = m->n_rst ? (long long)m->restart * b : 0;
    return 0;
}

/* the index of the first interval start past bit pos (n_rst when none) */
SWIN_JX_HD int swin_jp_next_rst(const swin_jp_ctx *c, int32_t pos) {
    int lo = 0, hi = c->n_rst;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (c->rst[mid] > pos) hi = mid;
        else lo = mid + 1;
    }
    return lo;
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
    const long long u = (c->g0 + g) / c->bpm;
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
 * (*ended = 1, *end_pos) and a problem is returned as a SWIN_JH_ code.
 * Restart markers: the interval rules of the header comment (the rounds' and phase 2's). */
SWIN_JX_HD swin_jp_state swin_jp_run(const swin_jp_ctx *c, swin_jp_state st, int32_t end, int write, long long g,
                                     const uint32_t *pred, int16_t *coef, int *ended, int32_t *end_pos) {
    const swin_jh_image *m = c->m;
    swin_jp_state o = st;
    o.blocks = 0;
    o.reset = 0;
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
    /* the DC sums: of the piece's differences (the rounds), or the predictors themselves (phase 2,
     * which starts them at pred and whose exit's sums are not used) */
    uint32_t dc0 = write ? pred[0] : 0, dc1 = write ? pred[1] : 0, dc2 = write ? pred[2] : 0;
    /* restart markers: ri the next interval start past the position (n_rst: none), nb its bit
     * position, else the end of the data: a symbol may use the data up to nb */
    int ri = c->n_rst ? swin_jp_next_rst(c, o.pos) : 0;
    int32_t nb = ri < c->n_rst ? c->rst[ri] : c->total_bits;
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
            else if (o.pos + tot > nb) e = SWIN_JH_NO_DATA;
            else {
                const int32_t diff = sym ? swin_jh_extend((int32_t)((buf << len) >> (64 - sym)), sym) : 0;
                const uint32_t sum = (s == 0 ? dc0 : s == 1 ? dc1 : dc2) + (uint32_t)diff;
                if (s == 0) dc0 = sum;
                else if (s == 1) dc1 = sum;
                else dc2 = sum;
                if (write) {
                    const int32_t d = (int32_t)sum;
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
            if (o.pos + tot > nb) e = SWIN_JH_NO_DATA;
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
            o.err = (int16_t)e;
            break;
        }
        int jump = 0;   /* on to the next interval's start */
        if (e) {   /* a sync round: a wrong start, or damaged data (phase 2 will tell); on from the next bit,
                      or from the next interval's start for a symbol across it */
            const int at_rst = ri < c->n_rst;
            if (e == SWIN_JH_NO_DATA && at_rst) jump = 1;
            else if (++o.pos >= nb && at_rst) jump = 1;
            b = 0, z = 0;
        } else {
            buf <<= tot;
            bits -= tot;
            o.pos += tot;
        }
        if (z >= 64) {   /* the block is complete */
            o.blocks++;
            b = b + 1 == c->bpm ? 0 : b + 1;
            z = 0;
            if (write) {
                if (++g == c->total_blocks) {
                    *ended = 1;
                    *end_pos = o.pos;
                    break;
                }
                if (c->rb && g % c->rb == 0) {   /* the interval's last MCU: less than a byte may be left */
                    if (nb - o.pos >= 8) {
                        o.err = SWIN_JH_BAD_RESTART;
                        break;
                    }
                    jump = 1;
                }
            } else if (b == 0 && ri < c->n_rst && nb - o.pos < 8) {
                jump = 1;
            }
        }
        if (jump) {
            o.pos = nb, o.reset = 1;
            dc0 = dc1 = dc2 = 0;
            ri++;
            nb = ri < c->n_rst ? c->rst[ri] : c->total_bits;
        }
        if (e || jump) swin_jp_seek(c, o.pos, &p, &buf, &bits);
        if (z == 0) {   /* a new block (or the guessed state after an error): its component and tables */
            s = c->bs[b], tdc = c->tables + m->dc[s], tac = c->tables + m->ac[s];
            quant = m->rec.quant[m->comp[s]];
            if (write) blk = swin_jp_block(c, g, b, coef);
        }
    }
    o.b = (int16_t)b, o.z = (int16_t)z;
    o.dc[0] = dc0, o.dc[1] = dc1, o.dc[2] = dc2;
    return o;
}

/* the state a thread starts round 0 in: the true start for thread 0, a guess for the others */
SWIN_JX_HD swin_jp_state swin_jp_guess(int32_t pos) {
    swin_jp_state s;
    s.pos = pos, s.b = 0, s.z = 0, s.err = 0, s.reset = 0, s.blocks = 0;
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
 * with the check that only padding bits follow. With restart markers its end must be the exit
 * its last round had (`round`), else SWIN_JP_NO_SYNC (the header comment says why). */
SWIN_JX_HD int swin_jp_write(const swin_jp_ctx *c, swin_jp_state start, int32_t end, long long g, const uint32_t *pred,
                             const swin_jp_state *round, int16_t *coef, int *ended) {
    *ended = 0;
    if (g >= c->total_blocks) return SWIN_JH_OK;   /* its piece is past the image's last block */
    if (start.err) return start.err;               /* the data before it could not be decoded */
    int32_t end_pos = 0;
    swin_jp_state o = swin_jp_run(c, start, end, 1, g, pred, coef, ended, &end_pos);
    if (o.err) return o.err;
    if (*ended && c->total_bits - end_pos >= 8) return SWIN_JH_BAD_END;
    if (c->n_rst && !*ended &&
        (o.pos != round->pos || o.b != round->b || o.z != round->z || o.blocks != round->blocks || o.reset != round->reset))
        return SWIN_JP_NO_SYNC;
    return SWIN_JH_OK;
}

/* The prefix step over the pieces in order: the piece with exit e starts at block *g with DC
 * predictors p (written into g0, p0), and moves them past itself (the sums restart where it
 * passed an interval's start). */
SWIN_JX_HD void swin_jp_prefix_step(const swin_jp_state *e, long long *g, uint32_t *p, long long *g0, uint32_t *p0) {
    *g0 = *g;
    for (int k = 0; k < 3; k++) p0[k] = p[k], p[k] = e->reset ? e->dc[k] : p[k] + e->dc[k];
    *g += e->blocks;
}

/* ---- host side (jpeg_par.c) */
#ifndef __CUDACC__
/* Bytes that swin_jp_stage may write for scan m (as swin_jpeg_read_scan gives it). */
size_t swin_jp_stage_cap(const swin_jh_image *m);
/* The entropy-coded data of scan m (m->data, m->data_len into file) as the parallel decoder reads
 * it, into dst (room for swin_jp_stage_cap(m) bytes): the stuffed zero bytes and the restart
 * markers taken out, and with restart intervals each one's first bit position after the data
 * (int32, 4-byte aligned). m is rewritten to describe dst (data 0, data_len, rst, n_rst).
 * Returns 0; -1 (m untouched; the caller leaves the image to libjpeg) unless the data ends at the
 * end-of-image marker with exactly the restart markers the intervals need before it, in sequence,
 * and no other marker or fill byte. */
int swin_jp_stage(const uint8_t *file, swin_jh_image *m, uint8_t *dst);
/* The bytes of dst that a staged m uses (data, padding, interval starts). */
static inline size_t swin_jp_staged_len(const swin_jh_image *m) {
    return m->n_rst ? (size_t)m->rst + 4 * (size_t)m->n_rst : (size_t)m->data_len;
}
/* Parts for the thread blocks: a staged image with restart intervals and more than split_bits of
 * data is decoded as several parts of whole intervals, about split_bits each (a thread block a
 * part; a block's time grows with its image's data, so one large image would hold up a batch of
 * small ones). swin_jp_parts: at most how many (1 .. SWIN_JP_MAX_PARTS); swin_jp_split writes
 * them into out[0 .. n) and returns n,
 * for m whose bytes lie in buf (m->data, m->rst into buf, which must be 4-byte aligned there):
 * each part's data and blocks, and its interval starts, rewritten in place in m's array to count
 * from the part's data (so m's array serves the parts only, afterwards). Each part is decoded as
 * an image; the image is decoded when every part is. */
enum { SWIN_JP_MAX_PARTS = 64 };
int swin_jp_parts(const swin_jh_image *m, int32_t split_bits);
int swin_jp_split(const swin_jh_image *m, uint8_t *buf, int32_t split_bits, swin_jh_image *out);
/* The CPU emulation of a split decode: m (staged, its n_bytes bytes in bytes, left untouched: the
 * split works on a copy) in parts of about split_bits, each decoded by swin_jp_decode_host into
 * coef (zero on entry); the first failing part's status, as the GPU decoder takes it (jpeg_gpu.c),
 * else SWIN_JH_OK; *parts: how many. SWIN_JH_NO_DATA when the copy cannot be made. */
int swin_jp_decode_split_host(const swin_jh_image *m, const uint8_t *bytes, size_t n_bytes, const swin_jh_table *tables,
                              int16_t *coef, int threads, int32_t min_bits, int32_t split_bits, int *parts);
/* split_bits for the kernel's configuration: half of what its threads take before their pieces grow
 * past min_bits */
static inline int32_t swin_jp_split_bits(int threads, int32_t min_bits) { return threads / 2 * min_bits; }
/* The parallel decoder on the CPU, `threads` threads (1 .. SWIN_JP_THREADS) emulated one after
 * the other in the kernel's order: m describes staged data (swin_jp_stage: m->data, m->data_len,
 * m->rst into bytes).
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
