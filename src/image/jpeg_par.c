/* jpeg_par.c - the host side of the parallel entropy decoder (jpeg_par.h): unstuffing the data,
 * and the CPU emulation of the GPU's thread block (the same steps in the same order, the threads
 * one after the other), which the tests run against the sequential decoder.
 */
#include "jpeg_par.h"

#include <stdlib.h>
#include <string.h>

int swin_jp_unstuff(const uint8_t *src, size_t n, uint8_t *dst, size_t *out_len) {
    size_t i = 0, o = 0;
    while (i < n) {
        const uint8_t *ff = memchr(src + i, 0xFF, n - i);
        size_t run = ff ? (size_t)(ff - (src + i)) : n - i;
        memcpy(dst + o, src + i, run);
        o += run, i += run;
        if (!ff || i + 1 >= n) return -1;   /* no end-of-image marker */
        if (src[i + 1] == 0x00) {           /* a stuffed 0xFF */
            dst[o++] = 0xFF;
            i += 2;
        } else if (src[i + 1] == 0xD9) {
            *out_len = o;
            return 0;
        } else {
            return -1;                      /* a restart marker, fill bytes, another marker */
        }
    }
    return -1;
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
    long long g = 0;
    uint32_t pred[3] = {0, 0, 0};
    int status = SWIN_JH_OK, any_end = 0;
    for (int t = 0; t < np; t++) {   /* phase 2, with the prefix sums */
        int ended = 0;
        int e = swin_jp_write(&c, start[t], (t + 1) * S, g, pred, coef, &ended);
        if (e && !status) status = e;
        any_end |= ended;
        g += ex[last][t].blocks;
        for (int k = 0; k < 3; k++) pred[k] += ex[last][t].dc[k];
    }
    if (!status && !any_end) status = SWIN_JH_NO_DATA;
    return status;
}
