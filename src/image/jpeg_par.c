/* jpeg_par.c - the host side of the parallel entropy decoder (jpeg_par.h): staging the data,
 * and the CPU emulation of the GPU's thread block (the same steps in the same order, the threads
 * one after the other), which the tests run against the sequential decoder.
 */
#include "jpeg_par.h"

#include <stdlib.h>
#include <string.h>

/* the restart intervals' count: ceil(MCUs / interval), 1 without restarts */
static long long intervals(const swin_jh_image *m) {
    const long long n_mcu = (long long)m->mcux * m->mcuy;
    return m->restart > 0 ? (n_mcu + m->restart - 1) / m->restart : 1;
}

size_t swin_jp_stage_cap(const swin_jh_image *m) {
    return (size_t)(m->data_len > 0 ? m->data_len : 0) + 4 + 4 * (size_t)(intervals(m) - 1);
}

int swin_jp_stage(const uint8_t *file, swin_jh_image *m, uint8_t *dst) {
    const uint8_t *src = file + m->data;
    const size_t n = (size_t)m->data_len;
    const long long want = intervals(m) - 1;   /* restart markers */
    int32_t *starts = NULL;
    if (want > 0) {
        if (want > 0x7FFFFFFF) return -1;
        starts = malloc((size_t)want * sizeof *starts);
        if (!starts) return -1;
    }
    size_t i = 0, o = 0;
    long long k = 0;   /* restart markers seen */
    int ok = 0;
    while (i < n) {
        const uint8_t *ff = memchr(src + i, 0xFF, n - i);
        size_t run = ff ? (size_t)(ff - (src + i)) : n - i;
        memcpy(dst + o, src + i, run);
        o += run, i += run;
        if (!ff || i + 1 >= n) break;          /* no end-of-image marker */
        const uint8_t d = src[i + 1];
        if (d == 0x00) {                       /* a stuffed 0xFF */
            dst[o++] = 0xFF;
            i += 2;
        } else if (d == 0xD0 + (k & 7) && k < want && o * 8 < 0x7FFFFFFF) {   /* the next restart marker */
            starts[k++] = (int32_t)(o * 8);
            i += 2;
        } else {
            ok = d == 0xD9 && k == want;       /* the end, after every interval; else a marker out of
                                                  place, fill bytes, another marker */
            break;
        }
    }
    if (ok && o >= 0x10000000) ok = 0;        /* the decoder's bit positions are int32 */
    if (ok) {
        m->data = 0;
        m->data_len = (long long)o;
        m->n_rst = (int)want;
        m->rst = want ? (long long)((o + 3) & ~(size_t)3) : 0;
        if (want) {
            memset(dst + o, 0, (size_t)m->rst - o);
            memcpy(dst + m->rst, starts, (size_t)want * sizeof *starts);
        }
    }
    free(starts);
    return ok ? 0 : -1;
}

/* blocks an MCU of m */
static int mcu_blocks(const swin_jh_image *m) {
    int b = 0;
    for (int s = 0; s < m->ns; s++) b += m->hs[s] * m->vs[s];
    return b;
}

int swin_jp_parts(const swin_jh_image *m, int32_t split_bits) {
    const long long bits = m->data_len * 8;
    if (!m->n_rst || m->restart <= 0 || split_bits <= 0 || bits <= split_bits) return 1;
    long long k = (bits + split_bits - 1) / split_bits;
    if (k > (long long)m->n_rst + 1) k = (long long)m->n_rst + 1;
    return k > SWIN_JP_MAX_PARTS ? SWIN_JP_MAX_PARTS : (int)k;
}

int swin_jp_split(const swin_jh_image *m, uint8_t *buf, int32_t split_bits, swin_jh_image *out) {
    const int k = swin_jp_parts(m, split_bits);
    out[0] = *m;
    out[0].g0 = 0, out[0].n_blocks = 0;
    if (k == 1) return 1;
    int32_t *rst = (int32_t *)(void *)(buf + m->rst);
    const long long bits = m->data_len * 8, n_mcu = (long long)m->mcux * m->mcuy, n_int = (long long)m->n_rst + 1;
    /* first[p]: the first interval of part p (interval j > 0 starts at bit rst[j - 1]): the first
     * interval that starts at or past p / k of the data, so that the parts' sizes are about even */
    long long first[SWIN_JP_MAX_PARTS + 1];
    int n = 1;
    first[0] = 0;
    for (long long p = 1, j = 1; p < k; p++) {
        const long long target = bits * p / k;
        while (j < n_int && rst[j - 1] < target) j++;
        if (j >= n_int) break;
        if (j > first[n - 1]) first[n++] = j++;
    }
    first[n] = n_int;
    const long long rb = (long long)m->restart * mcu_blocks(m);
    for (int p = 0; p < n; p++) {
        const long long a = first[p], b = first[p + 1];
        const int32_t base = a ? rst[a - 1] : 0, end = b < n_int ? rst[b - 1] : (int32_t)bits;
        swin_jh_image *o = &out[p];
        *o = *m;
        o->data = m->data + base / 8;
        o->data_len = (end - base) / 8;
        o->n_rst = (int)(b - a - 1);
        o->rst = o->n_rst ? m->rst + 4 * a : 0;
        for (long long i = a; i < b - 1; i++) rst[i] -= base;   /* its own interval starts, from its data */
        o->g0 = a * rb;
        o->n_blocks = ((b * m->restart < n_mcu ? b * m->restart : n_mcu) - a * m->restart) * (rb / m->restart);
    }
    return n;
}

int swin_jp_decode_host(const swin_jh_image *m, const uint8_t *bytes, const swin_jh_table *tables, int16_t *coef,
                        int threads, int32_t min_bits, int *rounds) {
    enum { T = SWIN_JP_THREADS };
    swin_jp_ctx c;
    *rounds = 0;
    if (threads < 1 || threads > T || swin_jp_ctx_init(&c, m, bytes, tables) != 0) return SWIN_JH_BAD_CODE;
    const int32_t S = swin_jp_piece(&c, threads, min_bits);
    const int np = c.total_bits ? (int)((c.total_bits + S - 1) / S) : 1;   /* threads with data */
    static swin_jp_state start[T], ex[2][T];
    for (int t = 0; t < np; t++) {   /* round 0 */
        start[t] = swin_jp_guess(t * S);
        ex[0][t] = swin_jp_run(&c, start[t], (t + 1) * S, 0, 0, NULL, NULL, NULL, NULL);
    }
    int r = 1, changed = 1;
    for (; changed && r <= SWIN_JP_MAX_ROUNDS; r++) {
        changed = 0;
        for (int t = 0; t < np; t++) {
            swin_jp_state s = t ? swin_jp_start_from(ex[(r - 1) & 1][t - 1]) : start[0];
            if (!swin_jp_same_start(s, start[t])) {
                changed = 1;
                start[t] = s;
                ex[r & 1][t] = swin_jp_run(&c, s, (t + 1) * S, 0, 0, NULL, NULL, NULL, NULL);
            } else {
                ex[r & 1][t] = ex[(r - 1) & 1][t];
            }
        }
    }
    *rounds = r - 1;
    if (changed) return SWIN_JP_NO_SYNC;
    const int last = (r - 1) & 1;   /* the exits of the last round */
    long long g = 0, g0;
    uint32_t pred[3] = {0, 0, 0}, p0[3];
    int status = SWIN_JH_OK, any_end = 0;
    for (int t = 0; t < np; t++) {   /* phase 2, with the prefix sums */
        int ended = 0;
        swin_jp_prefix_step(&ex[last][t], &g, pred, &g0, p0);
        int e = swin_jp_write(&c, start[t], (t + 1) * S, g0, p0, &ex[last][t], coef, &ended);
        if (e && !status) status = e;
        any_end |= ended;
    }
    if (!status && !any_end) status = SWIN_JH_NO_DATA;
    return status;
}

int swin_jp_decode_split_host(const swin_jh_image *m, const uint8_t *bytes, size_t n_bytes, const swin_jh_table *tables,
                              int16_t *coef, int threads, int32_t min_bits, int32_t split_bits, int *parts) {
    swin_jh_image part[SWIN_JP_MAX_PARTS];
    uint8_t *v = malloc(n_bytes ? n_bytes : 1);
    *parts = 0;
    if (!v) return SWIN_JH_NO_DATA;
    memcpy(v, bytes, n_bytes);
    const int n = swin_jp_split(m, v, split_bits, part);
    int status = SWIN_JH_OK, rounds;
    for (int p = 0; p < n; p++) {
        const int e = swin_jp_decode_host(&part[p], v, tables, coef, threads, min_bits, &rounds);
        if (!status) status = e;
    }
    free(v);
    *parts = n;
    return status;
}
