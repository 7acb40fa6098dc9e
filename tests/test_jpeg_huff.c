/* test_jpeg_huff.c - the entropy decoder of src/image/jpeg_huff.h (which a GPU kernel runs, one
 * thread per image) on the CPU, against libjpeg's own coefficients (swin_jpeg_read_coefs).
 *   build/tests/test_jpeg_huff <source dir> [more JPEG files...]
 * 1. every .jpg in tests/data/jpeg: a file swin_jpeg_read_scan covers (one baseline scan:
 *    grey, 4:4:4, 4:2:2, 4:2:0, RGB, optimised tables, restart markers, odd and 1-2 pixel sizes)
 *    decodes to exactly libjpeg's coefficients, or is refused for a reason that sends it back to
 *    libjpeg (junk before the end-of-image marker); progressive and CMYK files are not covered;
 * 2. the same for the files given after the source dir (e.g. a folder of photos);
 * 3. damaged copies (bit flips in the entropy-coded data, truncations, a marker in the data, a
 *    restart marker out of sequence): whenever the decoder accepts one, libjpeg decodes it
 *    without complaint to the same coefficients and, through jpeg_exact.h, to its own pixels;
 *    whatever it refuses goes back to libjpeg. Counts printed; no crash, no read out of bounds
 *    (ASan+UBSan in CI);
 * 4. in all of the above, the parallel decoder (jpeg_par.h, its GPU thread block emulated on the
 *    CPU) on every file whose data it stages (restart markers in sequence, nothing but the
 *    end-of-image marker after the data): it accepts exactly what the sequential decoder accepts,
 *    with the same coefficients, or leaves the image undecided (SWIN_JP_NO_SYNC: to libjpeg),
 *    which no undamaged file may be with the kernel's pieces;
 * 5. restart intervals made by libjpeg's encoder (grey and YCbCr 4:4:4 / 4:2:2 / 4:2:0, 1 to 4
 *    MCUs an interval, flat to noisy pictures, qualities 5 to 90, up to 320x240): the sequential
 *    decoder gives libjpeg's coefficients, and the parallel one, with the kernel's pieces and with
 *    64-bit ones, the same or leaves the image undecided. Phase 2's check may refuse only an image
 *    whose MCUs can be shorter than a byte (grey, 4:4:4: the ambiguity jpeg_par.h describes), and
 *    must meet that case at least once; 64-bit pieces may also find no fixed point.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "jpeg.h"
#include "jpeg_par.h"
#include "swin.h"
#include "jpeg_encode.h"
#include "testutil.h"

static const char *const WHY[SWIN_JH_N] = {"ok", "bad code", "run past 63", "DC out of range", "no data",
                                           "bad restart", "bad end", "coefficient range"};
static int g_decoded, g_unsupported, g_refused, g_par, g_par_rounds, g_par_rst, g_par_nosync, g_small, g_small_multi;
static int g_split, g_split_max;

/* the parallel decoder against the sequential one's verdict e and coefficients ref (NULL when
 * refused); returns 1 when it ran (the data stages) */
static int check_par(const char *name, const uint8_t *data, const swin_jpeg_scan *sc, int e, const int16_t *ref,
                     int damaged) {
    uint8_t *u = malloc(swin_jp_stage_cap(&sc->img));
    swin_jh_image m = sc->img;
    if (!u || swin_jp_stage(data, &m, u) != 0) {
        free(u);
        return 0;
    }
    if (m.n_rst) g_par_rst++;
    int16_t *coef = calloc(sc->n_coef, sizeof *coef);
    int rounds = 0, pe = coef ? swin_jp_decode_host(&m, u, sc->tables, coef, SWIN_JP_THREADS, SWIN_JP_MIN_BITS, &rounds) : -1;
    if (pe == SWIN_JP_NO_SYNC) {   /* undecided: left to libjpeg; only damaged data may be */
        g_par_nosync++;
        CHECK(damaged, "%s: the parallel decoder did not decide an undamaged file", name);
    } else
        CHECK((pe == SWIN_JH_OK) == (e == SWIN_JH_OK), "%s: parallel decoder %d, sequential %d", name, pe, e);
    if (pe == SWIN_JH_OK && e == SWIN_JH_OK && ref)
        CHECK(memcmp(coef, ref, sc->n_coef * sizeof *coef) == 0, "%s: the parallel decoder's coefficients differ", name);
    g_par++;
    if (rounds > g_par_rounds) g_par_rounds = rounds;
    if (getenv("SWIN_TEST_VERBOSE")) printf("     %-52s parallel decoder: %d rounds\n", name, rounds);
    /* pieces of 256 bits: many pieces even in small files, many rounds; a piece that never
     * synchronises leaves the image undecided (SWIN_JP_NO_SYNC), else the verdict must agree */
    int small_rounds = 0;
    memset(coef, 0, sc->n_coef * sizeof *coef);
    pe = swin_jp_decode_host(&m, u, sc->tables, coef, SWIN_JP_THREADS, 256, &small_rounds);
    if (pe != SWIN_JP_NO_SYNC) {
        CHECK((pe == SWIN_JH_OK) == (e == SWIN_JH_OK), "%s: parallel decoder (256-bit pieces) %d, sequential %d",
              name, pe, e);
        if (pe == SWIN_JH_OK && e == SWIN_JH_OK && ref)
            CHECK(memcmp(coef, ref, sc->n_coef * sizeof *coef) == 0,
                  "%s: the parallel decoder's coefficients differ (256-bit pieces)", name);
        g_small++;
        if (small_rounds > 2) g_small_multi++;
    }
    /* with restart intervals: split into parts of about 1024 bits (many, where the data allows),
     * each decoded on its own as the kernel's thread blocks would */
    if (m.n_rst) {
        int parts = 0;
        memset(coef, 0, sc->n_coef * sizeof *coef);
        pe = swin_jp_decode_split_host(&m, u, swin_jp_staged_len(&m), sc->tables, coef, SWIN_JP_THREADS,
                                       SWIN_JP_MIN_BITS, 1024, &parts);
        if (pe == SWIN_JP_NO_SYNC) {
            CHECK(damaged, "%s: split into %d parts, undecided", name, parts);
        } else {
            CHECK((pe == SWIN_JH_OK) == (e == SWIN_JH_OK), "%s: %d parts: parallel decoder %d, sequential %d", name,
                  parts, pe, e);
            if (pe == SWIN_JH_OK && e == SWIN_JH_OK && ref)
                CHECK(memcmp(coef, ref, sc->n_coef * sizeof *coef) == 0, "%s: %d parts: the coefficients differ", name,
                      parts);
        }
        if (parts > 1) g_split++;
        if (parts > g_split_max) g_split_max = parts;
    }
    free(coef), free(u);
    return 1;
}

/* decode with jpeg_huff.h; returns the SWIN_JH_ code, or -1 when not covered; *coef: malloc'd */
static int huff_decode(const uint8_t *data, size_t size, const char *name, swin_jpeg_scan *sc, int16_t **coef) {
    *coef = NULL;
    if (swin_jpeg_read_scan(data, size, name, sc) != SWIN_OK) return -1;
    *coef = calloc(sc->n_coef, sizeof **coef);
    if (!*coef) return -1;
    return swin_jh_decode(&sc->img, data, sc->tables, *coef);
}

static void check_file(const char *path, const uint8_t *data, size_t size) {
    static swin_jpeg_scan sc;
    int16_t *coef;
    int e = huff_decode(data, size, path, &sc, &coef);
    if (e < 0) {
        printf("ok   %-52s not covered: %s\n", path, swin_last_error());
        g_unsupported++;
        free(coef);
        return;
    }
    swin_jpeg_coefs ref;
    swin_status st = swin_jpeg_read_coefs(data, size, path, &ref);
    if (!CHECK(st == SWIN_OK, "%s: libjpeg's coefficients: %s", path, swin_last_error())) {
        free(coef);
        return;
    }
    CHECK(ref.n_coef == sc.n_coef, "%s: %zu coefficients against libjpeg's %zu", path, sc.n_coef, ref.n_coef);
    if (e != SWIN_JH_OK) {
        printf("ok   %-52s refused (%s): libjpeg decodes it\n", path, WHY[e]);
        g_refused++;
    } else {
        size_t diff = 0;
        for (size_t i = 0; i < sc.n_coef && i < ref.n_coef; i++) diff += coef[i] != ref.buf[i];
        printf("%s %-52s %dx%d, %d components, restart %d: %zu of %zu coefficients differ\n", diff ? "FAIL" : "ok  ",
               path, sc.img.rec.w, sc.img.rec.h, sc.img.rec.nc, sc.img.restart, diff, sc.n_coef);
        CHECK(diff == 0, "%s: %zu coefficients differ from libjpeg's", path, diff);
        g_decoded++;
        if (check_par(path, data, &sc, e, coef, 0)) printf("ok   %-52s the parallel decoder agrees\n", path);
    }
    swin_jpeg_coefs_free(&ref);
    free(coef);
}

static void check_path(const char *path) {
    size_t size = 0;
    uint8_t *data = tu_read_file(path, &size);
    if (!CHECK(data != NULL, "cannot read %s", path)) return;
    check_file(path, data, size);
    free(data);
}

/* a damaged copy: accepted -> libjpeg agrees (coefficients and pixels); returns 1 when accepted */
static int check_damaged(const uint8_t *bad, size_t size, int t, int *refused_by_libjpeg) {
    static swin_jpeg_scan sc;
    int16_t *coef;
    int e = huff_decode(bad, size, "damaged.jpg", &sc, &coef);
    swin_image whole;
    int custom = 0;
    swin_status ws = swin_jpeg_decode(bad, size, "damaged.jpg", NULL, NULL, NULL, &whole, &custom);
    *refused_by_libjpeg += ws != SWIN_OK;
    int accepted = e == SWIN_JH_OK;
    if (e >= 0) check_par("damaged.jpg", bad, &sc, e, coef, 1);
    if (accepted && CHECK(ws == SWIN_OK, "damaged copy %d: accepted here, refused by libjpeg (%s)", t, swin_last_error())) {
        swin_jpeg_coefs ref;
        if (CHECK(swin_jpeg_read_coefs(bad, size, "damaged.jpg", &ref) == SWIN_OK, "damaged copy %d: %s", t,
                  swin_last_error())) {
            CHECK(memcmp(ref.buf, coef, ref.n_coef * sizeof *coef) == 0, "damaged copy %d: coefficients differ", t);
            memcpy(ref.buf, coef, ref.n_coef * sizeof *coef);
            size_t n = (size_t)whole.width * whole.height * 3;
            uint8_t *rgb = malloc(n), *scratch = malloc(ref.scratch_bytes);
            if (CHECK(rgb && scratch, "out of memory")) {
                swin_jpeg_reconstruct(&ref, rgb, scratch);
                CHECK(memcmp(rgb, whole.rgb, n) == 0, "damaged copy %d: pixels differ from libjpeg's", t);
            }
            free(rgb), free(scratch);
            swin_jpeg_coefs_free(&ref);
        }
    }
    if (ws == SWIN_OK) swin_image_free(&whole);
    free(coef);
    return accepted;
}

typedef struct {
    int n, flat;   /* samples a row; the picture's kind */
    unsigned s;    /* the noise's state */
} fill_state;

static void fill_row(void *ctx, int y, unsigned char *row) {
    fill_state *f = ctx;
    (void)y;
    for (int i = 0; i < f->n; i++) {
        f->s = f->s * 1103515245u + 12345u;
        row[i] = (unsigned char)(f->flat == 2 ? 100 : f->flat == 1 ? 128 + (f->s >> 16) % 3 : (f->s >> 16) & 255);
    }
}

/* a w x h picture (nc 1: grey, 3: RGB, luma sampled hs x vs) through libjpeg's encoder with a
 * restart interval of ri MCUs; flat 0: noise, 1: nearly flat, 2: one value. malloc'd, *n bytes */
static unsigned char *encode(int w, int h, int nc, int hs, int vs, int quality, int ri, int flat, unsigned seed,
                             unsigned long *n) {
    jpeg_enc e;
    jpeg_enc_begin(&e, w, h, nc, quality, ri);
    if (nc == 3) e.c.comp_info[0].h_samp_factor = hs, e.c.comp_info[0].v_samp_factor = vs;
    fill_state f = {w * nc, flat, seed};
    unsigned char *out = jpeg_enc_rows(&e, fill_row, &f);
    *n = e.n;
    return out;
}

static void check_encoded_restarts(void) {
    int files = 0, several = 0, undecided_kernel = 0, undecided_small = 0, ambiguous = 0, split = 0;
    for (int k = 0; k < 192; k++) {
        const int layout = k % 4, nc = layout ? 3 : 1, hs = layout >= 2 ? 2 : 1, vs = layout == 3 ? 2 : 1;
        const int quality = (const int[]){5, 20, 50, 90}[k / 4 % 4], ri = 1 + k / 16 % 4, flat = k / 64 % 3;
        const int w = k % 8 == 7 ? 320 : 24 + k % 41, h = k % 8 == 7 ? 240 : 16 + k % 29;
        unsigned long n = 0;
        unsigned char *data = encode(w, h, nc, hs, vs, quality, ri, flat, 7u * k + 1, &n);
        char name[128];
        snprintf(name, sizeof name, "encoded_%d (%dx%d, %s, quality %d, restart every %d MCUs)", k, w, h,
                 (const char *[]){"grey", "4:4:4", "4:2:2", "4:2:0"}[layout], quality, ri);
        swin_jpeg_scan sc;
        swin_jpeg_coefs ref;
        if (!CHECK(data && swin_jpeg_read_scan(data, n, name, &sc) == SWIN_OK && sc.img.restart == ri, "%s: %s", name,
                   swin_last_error()) ||
            !CHECK(swin_jpeg_read_coefs(data, n, name, &ref) == SWIN_OK, "%s: %s", name, swin_last_error())) {
            free(data);
            continue;
        }
        int16_t *a = calloc(sc.n_coef, sizeof *a), *b = calloc(sc.n_coef, sizeof *b);
        uint8_t *u = malloc(swin_jp_stage_cap(&sc.img));
        swin_jh_image m = sc.img;
        if (CHECK(a && b && u, "out of memory") && CHECK(swin_jp_stage(data, &m, u) == 0, "%s: not staged", name)) {
            const int e = swin_jh_decode(&sc.img, data, sc.tables, a);
            CHECK(e == SWIN_JH_OK && !memcmp(a, ref.buf, sc.n_coef * sizeof *a),
                  "%s: the sequential decoder (%d) against libjpeg's coefficients", name, e);
            for (int small = 0; small < 2; small++) {
                int rounds;
                memset(b, 0, sc.n_coef * sizeof *b);
                const int32_t bits = small ? 64 : SWIN_JP_MIN_BITS;
                const int pe = swin_jp_decode_host(&m, u, sc.tables, b, SWIN_JP_THREADS, bits, &rounds);
                if (pe == SWIN_JP_NO_SYNC) {   /* no fixed point (64-bit pieces), or phase 2's check */
                    if (small) undecided_small++;
                    else undecided_kernel++;
                    const int checked = rounds < SWIN_JP_MAX_ROUNDS;
                    ambiguous += checked;
                    CHECK(!checked || layout < 2, "%s: refused by phase 2's check with %d-bit pieces, yet its MCUs "
                          "are 8 bits or more (4 blocks of 2 bits at least)", name, (int)bits);
                    CHECK(small || layout < 2, "%s: undecided with the kernel's pieces", name);
                } else {
                    CHECK(pe == SWIN_JH_OK && !memcmp(b, a, sc.n_coef * sizeof *b),
                          "%s: the parallel decoder (%d-bit pieces) %d, coefficients %s", name, (int)bits, pe,
                          pe ? "-" : "differ");
                }
                if (!small && m.data_len * 8 > SWIN_JP_MIN_BITS) several++;   /* several of the kernel's pieces */
            }
            int parts = 0;   /* in parts of about 512 bits: one or a few intervals each */
            memset(b, 0, sc.n_coef * sizeof *b);
            const int pe = swin_jp_decode_split_host(&m, u, swin_jp_staged_len(&m), sc.tables, b, SWIN_JP_THREADS,
                                                    SWIN_JP_MIN_BITS, 512, &parts);
            if (pe == SWIN_JP_NO_SYNC) CHECK(layout < 2, "%s: %d parts, undecided", name, parts);
            else CHECK(pe == SWIN_JH_OK && !memcmp(b, a, sc.n_coef * sizeof *b), "%s: %d parts: %d, coefficients %s",
                       name, parts, pe, pe ? "-" : "differ");
            split += parts > 1;
            files++;
        }
        swin_jpeg_coefs_free(&ref);
        free(a), free(b), free(u), free(data);
    }
    printf("ok   %d JPEGs with restart intervals from libjpeg's encoder (%d of several pieces): undecided %d with the "
           "kernel's pieces, %d with 64-bit pieces (%d of all by phase 2's check), else the sequential decoder's "
           "coefficients; %d split into parts of about 512 bits, the same\n", files, several, undecided_kernel,
           undecided_small, ambiguous, split);
    CHECK(files == 192 && several >= 10 && split >= 60, "%d encoded files, %d of several pieces, %d split", files,
          several, split);
    CHECK(ambiguous > 0, "phase 2's check never met an interval whose MCUs end within a byte of its end");
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    char dir[1024], path[1400];
    snprintf(dir, sizeof dir, "%s/tests/data/jpeg", src);
    char *names[256];
    int nn = tu_list_files(dir, ".jpg", names, 256);
    if (!CHECK(nn > 0, "no .jpg files in %s", dir)) return tu_finish("test_jpeg_huff");
    for (int i = 0; i < nn; i++) check_path(names[i]);
    /* the fixtures hold at least these: the test must not pass on nothing */
    CHECK(g_decoded >= 12, "only %d fixtures decoded (expected >= 12: every baseline layout)", g_decoded);
    CHECK(g_unsupported >= 5, "%d fixtures not covered (expected >= 5: progressive and CMYK)", g_unsupported);
    CHECK(g_refused >= 1, "%d fixtures refused (expected >= 1: junk before the end-of-image marker)", g_refused);
    for (int i = 2; i < argc; i++) check_path(argv[i]);
    check_encoded_restarts();

    /* damaged copies of two files (one with restart markers) */
    const char *victims[2] = {"baseline_420_160x120.jpg", "restart_blocks_420_120x80.jpg"};
    for (int v = 0; v < 2; v++) {
        snprintf(path, sizeof path, "%s/%s", dir, victims[v]);
        size_t size = 0;
        uint8_t *data = tu_read_file(path, &size);
        if (!CHECK(data && size > 400, "cannot read %s", path)) continue;
        swin_jpeg_scan *sc = malloc(sizeof *sc);
        if (!CHECK(sc && swin_jpeg_read_scan(data, size, path, sc) == SWIN_OK, "%s: not covered", path)) {
            free(sc), free(data);
            continue;
        }
        const size_t d0 = (size_t)sc->img.data, dn = size - d0 - 2;   /* the entropy-coded bytes */
        free(sc);
        uint8_t *bad = malloc(size);
        int accepted = 0, libjpeg_refused = 0, tries = 0;
        for (int t = 0; bad && t < 300; t++, tries++) {
            memcpy(bad, data, size);
            uint64_t r = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1 + 1000 * v);
            size_t len = size;
            r ^= r >> 29, r *= 0xBF58476D1CE4E5B9ull;
            if (t % 5 == 4) {        /* truncated somewhere in the data */
                len = d0 + r % dn;
            } else if (t % 5 == 3) { /* a marker inside the data */
                size_t at = d0 + r % (dn - 1);
                bad[at] = 0xFF, bad[at + 1] = (uint8_t)(0xC0 + (r >> 40) % 0x3F);
            } else {                 /* 1 to 3 bit flips */
                for (int k = 0; k <= t % 3; k++) {
                    r ^= r >> 29, r *= 0xBF58476D1CE4E5B9ull;
                    bad[d0 + r % dn] ^= (uint8_t)(1u << (r >> 61));
                }
            }
            accepted += check_damaged(bad, len, t, &libjpeg_refused);
        }
        printf("ok   %s: %d damaged copies: %d accepted (libjpeg agrees on each), %d left to libjpeg, which "
               "refuses %d\n", victims[v], tries, accepted, tries - accepted, libjpeg_refused);
        CHECK(accepted < tries, "%s: every damaged copy accepted", victims[v]);
        free(bad), free(data);
    }
    printf("ok   the parallel decoder ran on %d files (%d with restart markers; at most %d rounds to synchronise; %d "
           "damaged ones undecided); with 256-bit pieces it decided %d, %d of them after more than 2 rounds\n", g_par,
           g_par_rst, g_par_rounds, g_par_nosync, g_small, g_small_multi);
    CHECK(g_par_rst >= 100, "the parallel decoder ran on only %d files with restart markers", g_par_rst);
    printf("ok   split at restart intervals into parts of about 1024 bits: %d files (up to %d parts)\n", g_split,
           g_split_max);
    CHECK(g_split >= 100 && g_split_max >= 8, "only %d files split (at most %d parts)", g_split, g_split_max);
    CHECK(g_small_multi >= 20, "only %d files needed several rounds with 256-bit pieces", g_small_multi);
    CHECK(g_par >= 150, "the parallel decoder ran on only %d files", g_par);
    for (int i = 0; i < nn; i++) free(names[i]);
    return tu_finish("test_jpeg_huff");
}
