/* resize_avx2.c - the resize passes with AVX2 (x86-64), bit-identical to resize.c's reference.
 *
 * Pillow's weights are 22-bit fixed point (SWIN_RESIZE_PRECISION_BITS), too wide for the 16-bit
 * multiply-add (vpmaddwd) that makes integer resampling fast. Each weight is therefore split:
 * k = kh * 2^11 + kl with 0 <= kl < 2^11, both halves fitting int16, and a pass accumulates
 * sum(p * kh) and sum(p * kl) separately, then forms (sum_h << 11) + sum_l: the same integer as
 * the reference's sum(p * k), so the rounding and clamping that follow give the same bytes. The
 * order of the additions does not matter: integer sums are exact, and 32-bit vector lanes wrap,
 * so even an intermediate past 2^31 ends at the reference's value (which fits, see clip8).
 *
 * Compiled for any x86-64: the functions carry target("avx2") and run only after
 * swin_resize_avx2_available() said yes. On other CPUs and compilers the entry points return 0
 * and resize.c runs the reference. Test: build/tests/test_preprocess (kernel comparison).
 */
#include "resize_kernels.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define SPLIT_BITS 11
#define HALF (1 << (SWIN_RESIZE_PRECISION_BITS - 1))

/* the CPU model is read by libgcc's (compiler-rt's) constructor before main: no
 * __builtin_cpu_init here, which decoder threads would otherwise race on */
int swin_resize_avx2_available(void) { return __builtin_cpu_supports("avx2"); }

/* k = kh * 2^11 + kl, 0 <= kl < 2^11; 0 when kh does not fit int16 (a weight over 16: never made
 * by the filters, whose normalised weights stay near or below 1, but checked rather than assumed) */
static int split(int32_t k, int16_t *kh, int16_t *kl) {
    int32_t lo = (int32_t)((uint32_t)k & ((1u << SPLIT_BITS) - 1));
    int32_t hi = (k - lo) / (1 << SPLIT_BITS); /* exact: k - lo is a multiple of 2^11 */
    if (hi < INT16_MIN || hi > INT16_MAX) return 0;
    *kh = (int16_t)hi;
    *kl = (int16_t)lo;
    return 1;
}

/* every weight of the axis splits (checked before a pass writes anything) */
static int axis_splits(const swin_resize_axis *c) {
    int16_t kh, kl;
    for (int i = 0; i < c->n; i++)
        for (int x = 0; x < c->count[i]; x++)
            if (!split(c->k[(size_t)i * c->ksize + x], &kh, &kl)) return 0;
    return 1;
}

// ---- horizontal pass
/* One output pixel takes its taps four at a time: 12 source bytes (4 RGB pixels) are shuffled
 * into 16-bit words, taps 0-1 in the low 128-bit lane and 2-3 in the high one, as
 * [r0 r1 g0 g1 b0 b1 0 0]; vpmaddwd with [k0 k1 k0 k1 k0 k1 0 0] gives the R, G, B sums of two
 * taps in one go. Taps past an output's count have weight 0. The weights of every output are laid
 * out once per call (GROUP_WORDS per group of four taps: the kh vector, then the kl vector). */
#define GROUP_WORDS 32

/* The sum of one output's taps from the 16-byte loads at p, p + 12, ... (groups of four taps):
 * R, G, B, 0 of taps 0-1 in the low lane, of taps 2-3 in the high one, before rounding. Inlined
 * with a constant `groups` into the specialised spans below, so that the loop unrolls. */
static inline __attribute__((target("avx2"), always_inline)) __m256i h_sum(const uint8_t *p, const int16_t *w,
                                                                          int groups) {
    const __m256i shuf = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,
                                          6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
    __m256i acc_h = _mm256_setzero_si256(), acc_l = _mm256_setzero_si256();
    for (int g = 0; g < groups; g++, p += 12, w += GROUP_WORDS) {
        __m256i px = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p)), shuf);
        acc_h = _mm256_add_epi32(acc_h, _mm256_madd_epi16(px, _mm256_loadu_si256((const __m256i *)w)));
        acc_l = _mm256_add_epi32(acc_l, _mm256_madd_epi16(px, _mm256_loadu_si256((const __m256i *)(w + 16))));
    }
    return _mm256_add_epi32(_mm256_slli_epi32(acc_h, SPLIT_BITS), acc_l);
}

/* [a | b] of two outputs' sums: each one's two lanes added, rounded and shifted to 8 bits */
static inline __attribute__((target("avx2"), always_inline)) __m256i h_round2(__m256i a, __m256i b) {
    __m256i s = _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
    return _mm256_srai_epi32(_mm256_add_epi32(s, _mm256_set1_epi32(HALF)), SWIN_RESIZE_PRECISION_BITS);
}

/* the 3 bytes of one output (clip8 by saturation) */
static inline __attribute__((target("avx2"), always_inline)) void h_store1(__m256i s, uint8_t *o) {
    __m128i t = _mm256_castsi256_si128(h_round2(s, _mm256_setzero_si256()));
    uint32_t v = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(t, t), t));
    o[0] = (uint8_t)v;
    o[1] = (uint8_t)(v >> 8);
    o[2] = (uint8_t)(v >> 16);
}

/* Outputs [0, n) of one row, whose loads all stay inside it: at[xx] is the byte offset of output
 * xx's first tap, w the weights (`groups` per output). Four at a time, 12 bytes stored at once. */
static inline __attribute__((target("avx2"), always_inline)) void h_span(const uint8_t *row, const int32_t *at,
                                                                        const int16_t *w, int groups, int n,
                                                                        uint8_t *o) {
    const __m128i pack12 = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    const size_t ws = (size_t)groups * GROUP_WORDS;
    int xx = 0;
    for (; xx + 4 <= n; xx += 4, o += 12) {
        const int16_t *wx = w + xx * ws;
        __m256i ab = h_round2(h_sum(row + at[xx], wx, groups), h_sum(row + at[xx + 1], wx + ws, groups));
        __m256i cd = h_round2(h_sum(row + at[xx + 2], wx + 2 * ws, groups),
                              h_sum(row + at[xx + 3], wx + 3 * ws, groups));
        /* clip8 by saturation: words [a c | b d], bytes [a c . . | b d . .] */
        __m256i b8 = _mm256_packus_epi16(_mm256_packs_epi32(ab, cd), _mm256_setzero_si256());
        __m128i lo = _mm256_castsi256_si128(b8), hi = _mm256_extracti128_si256(b8, 1);
        __m128i abcd = _mm_shuffle_epi8(_mm_unpacklo_epi32(lo, hi), pack12);
        _mm_storel_epi64((__m128i *)o, abcd);
        uint32_t last = (uint32_t)_mm_extract_epi32(abcd, 2);
        memcpy(o + 8, &last, 4);
    }
    for (; xx < n; xx++, o += 3) h_store1(h_sum(row + at[xx], w + xx * ws, groups), o);
}

/* h_span with the usual group counts as constants (1: up to 4 taps, upscaling; 2: up to 8,
 * downscaling up to about 1.75x; 3: up to 12), any other as a variable */
#define H_SPAN(name, G)                                                                               \
    static __attribute__((target("avx2"))) void name(const uint8_t *row, const int32_t *at,           \
                                                     const int16_t *w, int groups, int n, uint8_t *o) { \
        h_span(row, at, w, G, n, o);                                                                  \
    }
H_SPAN(h_span_1, 1)
H_SPAN(h_span_2, 2)
H_SPAN(h_span_3, 3)
H_SPAN(h_span_any, groups)

__attribute__((target("avx2"))) int swin_resize_pass_h_avx2(const uint8_t *in, size_t in_stride, int col0, int rows,
                                                            const swin_resize_axis *c, uint8_t *out,
                                                            size_t out_stride) {
    if (c->n < 1 || !axis_splits(c)) return 0;
    int most = 0;
    for (int xx = 0; xx < c->n; xx++) most = c->count[xx] > most ? c->count[xx] : most;
    const int groups = most > 0 ? (most + 3) / 4 : 1;
    const size_t row_bytes = in_stride * 3, ws = (size_t)groups * GROUP_WORDS;
    /* weights [n][groups][GROUP_WORDS] (zero past each output's count), the outputs' byte offsets,
     * and a zeroed scratch for the outputs at the end of the row whose loads would run past it
     * (their taps are copied there first) */
    size_t scratch = (size_t)groups * 12 + 16;
    int16_t *w = calloc(c->n * ws * sizeof *w + (size_t)c->n * sizeof(int32_t) + scratch, 1);
    if (!w) return 0;
    int32_t *at = (int32_t *)(w + c->n * ws);
    uint8_t *pad = (uint8_t *)(at + c->n);
    for (int xx = 0; xx < c->n; xx++) {
        const int32_t *k = c->k + (size_t)xx * c->ksize;
        for (int x = 0; x < c->count[xx]; x++) {
            int16_t kh = 0, kl = 0;
            split(k[x], &kh, &kl);
            /* tap x: group x / 4, lane (x / 2) % 2, word pair x % 2 of each of R, G, B */
            int16_t *g = w + xx * ws + (size_t)(x / 4) * GROUP_WORDS + ((x / 2) % 2) * 8 + x % 2;
            for (int ch = 0; ch < 3; ch++) {
                g[2 * ch] = kh;
                g[16 + 2 * ch] = kl;
            }
        }
        at[xx] = (c->first[xx] - col0) * 3;
    }
    /* first[] never decreases, so the outputs whose loads stay in the row are a prefix */
    int safe = 0;
    while (safe < c->n && (size_t)at[safe] + (size_t)(groups - 1) * 12 + 16 <= row_bytes) safe++;
    void (*span)(const uint8_t *, const int32_t *, const int16_t *, int, int, uint8_t *) =
        groups == 1 ? h_span_1 : groups == 2 ? h_span_2 : groups == 3 ? h_span_3 : h_span_any;
    for (int y = 0; y < rows; y++) {
        const uint8_t *row = in + (size_t)y * row_bytes;
        uint8_t *o = out + (size_t)y * out_stride * 3;
        span(row, at, w, groups, safe, o);
        for (int xx = safe; xx < c->n; xx++) {
            memcpy(pad, row + at[xx], (size_t)c->count[xx] * 3);
            h_store1(h_sum(pad, w + xx * ws, groups), o + (size_t)xx * 3);
        }
    }
    free(w);
    return 1;
}

// ---- vertical pass
/* Sixteen values of a row at a time, two taps (source rows) at a time: the rows' bytes are
 * widened to 16 bits and interleaved, [a0 b0 a1 b1 ...], so that vpmaddwd with [ka kb ka kb ...]
 * gives a0 * ka + b0 * kb per 32-bit lane. Unpacking low / high halves and packing back with
 * vpackssdw keeps the values in order within each 128-bit lane; one permute joins the lanes. */
static __attribute__((target("avx2"))) __m128i v_chunk(const uint8_t *const *rows, const int32_t *wh,
                                                       const int32_t *wl, int pairs, size_t x) {
    __m256i h_lo = _mm256_setzero_si256(), h_hi = h_lo, l_lo = h_lo, l_hi = h_lo;
    for (int j = 0; j < pairs; j++) {
        __m256i a = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(rows[2 * j] + x)));
        __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(rows[2 * j + 1] + x)));
        __m256i lo = _mm256_unpacklo_epi16(a, b), hi = _mm256_unpackhi_epi16(a, b);
        __m256i kh = _mm256_set1_epi32(wh[j]), kl = _mm256_set1_epi32(wl[j]);
        h_lo = _mm256_add_epi32(h_lo, _mm256_madd_epi16(lo, kh));
        h_hi = _mm256_add_epi32(h_hi, _mm256_madd_epi16(hi, kh));
        l_lo = _mm256_add_epi32(l_lo, _mm256_madd_epi16(lo, kl));
        l_hi = _mm256_add_epi32(l_hi, _mm256_madd_epi16(hi, kl));
    }
    const __m256i half = _mm256_set1_epi32(HALF);
    __m256i s_lo = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h_lo, SPLIT_BITS), l_lo), half);
    __m256i s_hi = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h_hi, SPLIT_BITS), l_hi), half);
    s_lo = _mm256_srai_epi32(s_lo, SWIN_RESIZE_PRECISION_BITS);
    s_hi = _mm256_srai_epi32(s_hi, SWIN_RESIZE_PRECISION_BITS);
    __m256i b8 = _mm256_packus_epi16(_mm256_packs_epi32(s_lo, s_hi), _mm256_setzero_si256());
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(b8, 0x08)); /* qwords 0 and 2 */
}

/* a 16-bit pair of weights as one 32-bit lane: ka in the low word, kb in the high one */
static int32_t pair(int16_t ka, int16_t kb) { return (int32_t)((uint32_t)(uint16_t)ka | (uint32_t)(uint16_t)kb << 16); }

__attribute__((target("avx2"))) int swin_resize_pass_v_avx2(const uint8_t *in, size_t in_stride, int row0, int cols,
                                                            const swin_resize_axis *c, uint8_t *out,
                                                            size_t out_stride) {
    const size_t nv = (size_t)cols * 3;
    /* the last chunk is taken at nv - 16, overlapping the one before */
    if (nv < 16 || !axis_splits(c)) return 0;
    const int pmax = (c->ksize + 1) / 2;
    int32_t *wh = malloc((size_t)pmax * 2 * sizeof *wh);
    const uint8_t **rows = malloc((size_t)pmax * 2 * sizeof *rows);
    if (!wh || !rows) { free(wh); free(rows); return 0; }
    int32_t *wl = wh + pmax;
    for (int yy = 0; yy < c->n; yy++) {
        const int32_t *k = c->k + (size_t)yy * c->ksize;
        const uint8_t *base = in + (size_t)(c->first[yy] - row0) * in_stride * 3;
        int count = c->count[yy], pairs = (count + 1) / 2;
        for (int j = 0; j < pairs; j++) {
            int16_t ha = 0, la = 0, hb = 0, lb = 0;
            int b = 2 * j + 1 < count; /* an odd count: the last tap pairs with weight 0 on itself */
            split(k[2 * j], &ha, &la);
            if (b) split(k[2 * j + 1], &hb, &lb);
            wh[j] = pair(ha, hb);
            wl[j] = pair(la, lb);
            rows[2 * j] = base + (size_t)(2 * j) * in_stride * 3;
            rows[2 * j + 1] = b ? rows[2 * j] + in_stride * 3 : rows[2 * j];
        }
        uint8_t *o = out + (size_t)yy * out_stride * 3;
        for (size_t x = 0;; x += 16) {
            if (x + 16 > nv) x = nv - 16;
            _mm_storeu_si128((__m128i *)(o + x), v_chunk(rows, wh, wl, pairs, x));
            if (x + 16 == nv) break;
        }
    }
    free(wh);
    free(rows);
    return 1;
}

#else /* not x86-64 with GCC or clang: the reference runs */

int swin_resize_avx2_available(void) { return 0; }
int swin_resize_pass_h_avx2(const uint8_t *in, size_t in_stride, int col0, int rows, const swin_resize_axis *c,
                            uint8_t *out, size_t out_stride) {
    return 0;
}
int swin_resize_pass_v_avx2(const uint8_t *in, size_t in_stride, int row0, int cols, const swin_resize_axis *c,
                            uint8_t *out, size_t out_stride) {
    return 0;
}

#endif
