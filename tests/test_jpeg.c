/* test_jpeg.c - JPEG decoding (src/image/jpeg.c) against Pillow, and its refusal of bad files.
 *   build/tests/test_jpeg <source dir>
 * 1. every .jpg in tests/data/jpeg decodes to exactly Pillow's convert('RGB') pixels
 *    (tests/data/jpeg/reference.safetensors, made by tools/export_jpeg.py); prints the number of
 *    differing values per file, which must be 0;
 * 2. the same files transcoded losslessly to arithmetic coding (with libjpeg, here) decode to the
 *    same pixels; a 12-bit SOF is refused as unsupported;
 * 3. broken variants made here from the good files (truncated at many offsets, a marker in the
 *    entropy-coded data, bad header fields) are refused with SWIN_ERR_IMAGE and a message naming
 *    the file. Damage inside the entropy-coded data (invalid Huffman codes, junk before a restart
 *    marker, random byte flips) is caught only sometimes: JPEG has no checksum and libjpeg-turbo's
 *    fast Huffman path decodes an invalid code as 0 without a warning (Pillow shows the same
 *    pixels); for those the test asks for a clean status and no crash or leak (run it under
 *    ASan+UBSan: tools/test.sh --sanitize) and prints how many were refused;
 * 4. several threads decoding at once get the same pixels. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "image.h"
#include "swin.h"
#include "testutil.h"

// ---- fixtures: the files and Pillow's pixels (a minimal U8-only safetensors reader)
typedef struct {
    char file[128], what[160];
    int w, h;
    const uint8_t *ref; /* [h, w, 3] */
    uint8_t *data;      /* the JPEG file */
    size_t size;
} fixture;

static fixture g_fx[64];
static int g_nfx;
static uint8_t *g_ref_file;

static int load_fixtures(const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/reference.safetensors", dir);
    size_t size;
    g_ref_file = tu_read_file(path, &size);
    if (!g_ref_file || size < 8) return 0;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | g_ref_file[i];
    if (hl > size - 8) return 0;
    cJSON *root = cJSON_ParseWithLength((const char *)g_ref_file + 8, (size_t)hl);
    if (!root) return 0;
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    for (cJSON *e = root->child; e && g_nfx < 64; e = e->next) {
        if (strncmp(e->string, "decoded.", 8)) continue;
        fixture *fx = &g_fx[g_nfx++];
        snprintf(fx->file, sizeof fx->file, "%s", e->string + 8);
        cJSON *sh = cJSON_GetObjectItem(e, "shape"), *off = cJSON_GetObjectItem(e, "data_offsets");
        fx->h = cJSON_GetArrayItem(sh, 0)->valueint;
        fx->w = cJSON_GetArrayItem(sh, 1)->valueint;
        size_t o0 = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
        size_t o1 = (size_t)cJSON_GetArrayItem(off, 1)->valuedouble;
        if (o1 - o0 != (size_t)fx->w * fx->h * 3 || 8 + hl + o1 > size) { cJSON_Delete(root); return 0; }
        fx->ref = g_ref_file + 8 + hl + o0;
        cJSON *m = meta ? cJSON_GetObjectItemCaseSensitive(meta, e->string) : NULL;
        snprintf(fx->what, sizeof fx->what, "%s", cJSON_IsString(m) ? m->valuestring : "");
        snprintf(path, sizeof path, "%s/%s", dir, fx->file);
        fx->data = tu_read_file(path, &fx->size);
        if (!fx->data) { cJSON_Delete(root); return 0; }
    }
    cJSON_Delete(root);
    return g_nfx > 0;
}

static const fixture *find_fixture(const char *file) {
    for (int i = 0; i < g_nfx; i++)
        if (!strcmp(g_fx[i].file, file)) return &g_fx[i];
    return NULL;
}

/* Values of img that differ from fx's reference; -1 when the size differs. */
static long count_diff(const swin_image *img, const fixture *fx) {
    if (img->width != fx->w || img->height != fx->h) return -1;
    long bad = 0;
    for (size_t k = 0; k < (size_t)fx->w * fx->h * 3; k++) bad += img->rgb[k] != fx->ref[k];
    return bad;
}

// ---- JPEG structure: where the segments and the first scan's entropy-coded data are
static int is_rst(uint8_t m) { return m >= 0xD0 && m <= 0xD7; }

/* Offset of the first header segment whose marker satisfies want(m), or 0. Junk bytes between
 * segments are skipped, as libjpeg does. */
static size_t find_segment(const uint8_t *d, size_t n, int (*want)(uint8_t)) {
    for (size_t p = 2; p + 4 <= n;) {
        if (d[p] != 0xFF || d[p + 1] == 0xFF) { p++; continue; }
        if (want(d[p + 1])) return p;
        if (d[p + 1] == 0xDA) return 0;
        p += 2 + ((size_t)d[p + 2] << 8 | d[p + 3]);
    }
    return 0;
}
static int is_sof(uint8_t m) { return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC; }
static int is_sos(uint8_t m) { return m == 0xDA; }

/* [*start, *end): the first scan's entropy-coded data, restart markers included. */
static int entropy_range(const uint8_t *d, size_t n, size_t *start, size_t *end) {
    size_t sos = find_segment(d, n, is_sos);
    if (!sos) return 0;
    size_t p = sos + 2 + ((size_t)d[sos + 2] << 8 | d[sos + 3]);
    *start = p;
    while (p + 1 < n && !(d[p] == 0xFF && d[p + 1] != 0x00 && !is_rst(d[p + 1]))) p++;
    *end = p;
    return *end > *start;
}

// ---- 1. every fixture against Pillow
static void test_fixtures(void) {
    for (int i = 0; i < g_nfx; i++) {
        const fixture *fx = &g_fx[i];
        swin_image img;
        swin_status st = swin_image_decode(fx->data, fx->size, fx->file, &img);
        if (!CHECK(st == SWIN_OK, "%s: %s", fx->file, swin_last_error())) continue;
        long bad = count_diff(&img, fx);
        printf("pillow  %-32s %3dx%-3d %6ld values differ  (%s)\n", fx->file, img.width, img.height, bad, fx->what);
        CHECK(bad == 0, "%s: %ld values differ from Pillow's (-1: size %dx%d, Pillow %dx%d)", fx->file, bad,
              img.width, img.height, fx->w, fx->h);
        swin_image_free(&img);
    }
}

// ---- 2. arithmetic coding (libjpeg transcodes the coefficients: same pixels) and 12-bit
static uint8_t *transcode_arithmetic(const fixture *fx, int progressive, size_t *n) {
    struct jpeg_decompress_struct in;
    struct jpeg_compress_struct out;
    struct jpeg_error_mgr e_in, e_out; /* the default handler exits: fine for trusted test files */
    in.err = jpeg_std_error(&e_in);
    jpeg_create_decompress(&in);
    jpeg_mem_src(&in, fx->data, (unsigned long)fx->size);
    jpeg_read_header(&in, TRUE);
    jvirt_barray_ptr *coef = jpeg_read_coefficients(&in);
    out.err = jpeg_std_error(&e_out);
    jpeg_create_compress(&out);
    unsigned char *buf = NULL;
    unsigned long len = 0;
    jpeg_mem_dest(&out, &buf, &len);
    jpeg_copy_critical_parameters(&in, &out);
    out.arith_code = TRUE;
    if (progressive) jpeg_simple_progression(&out);
    jpeg_write_coefficients(&out, coef);
    jpeg_finish_compress(&out);
    jpeg_destroy_compress(&out);
    jpeg_finish_decompress(&in);
    jpeg_destroy_decompress(&in);
    *n = len;
    return buf;
}

static void test_arithmetic_and_12bit(void) {
    static const struct { const char *file; int progressive; } CASES[] = {
        {"baseline_420_160x120.jpg", 0}, {"progressive_420_150x100.jpg", 1}, {"baseline_422_97x61.jpg", 1},
        {"grey_70x50.jpg", 0}, {"cmyk_60x40.jpg", 0}, {"odd_420_37x23.jpg", 1}};
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const fixture *fx = find_fixture(CASES[c].file);
        if (!CHECK(fx != NULL, "fixture %s missing", CASES[c].file)) continue;
        size_t n;
        uint8_t *arith = transcode_arithmetic(fx, CASES[c].progressive, &n);
        char name[200];
        snprintf(name, sizeof name, "%.128s (arithmetic%s)", fx->file, CASES[c].progressive ? ", progressive" : "");
        swin_image img;
        swin_status st = swin_image_decode(arith, n, name, &img);
        if (CHECK(st == SWIN_OK, "%s: %s", name, swin_last_error())) {
            long bad = count_diff(&img, fx);
            printf("arith   %-50s %6ld values differ\n", name, bad);
            CHECK(bad == 0, "%s: %ld values differ from Pillow's decode of the Huffman-coded file", name, bad);
            swin_image_free(&img);
        }
        free(arith);
    }
    /* 12-bit samples: libjpeg-turbo's 8-bit library (and Pillow) refuse them */
    const fixture *fx = find_fixture("baseline_444_64x48.jpg");
    if (!CHECK(fx != NULL, "fixture missing")) return;
    uint8_t *d = malloc(fx->size);
    memcpy(d, fx->data, fx->size);
    size_t sof = find_segment(d, fx->size, is_sof);
    d[sof + 4] = 12;
    swin_image img;
    swin_status st = swin_image_decode(d, fx->size, "12bit.jpg", &img);
    printf("12-bit  -> %s\n", swin_last_error());
    CHECK(st == SWIN_ERR_IMAGE && strstr(swin_last_error(), "12bit.jpg: unsupported JPEG"), "12-bit: %s",
          swin_last_error());
    free(d);
}

// ---- 3. broken files
static int g_refused, g_cases;

/* Decode a variant that must be refused; expect is a substring of the message (or NULL). */
static void expect_refused(const uint8_t *d, size_t n, const char *name, const char *expect, int verbose) {
    swin_image img;
    swin_status st = swin_image_decode(d, n, name, &img);
    const char *msg = swin_last_error();
    g_cases++;
    if (verbose) printf("bad     %s\n", st == SWIN_OK ? "(decoded!)" : msg);
    if (!CHECK(st == SWIN_ERR_IMAGE && img.rgb == NULL, "%s: status %d (%s), expected SWIN_ERR_IMAGE", name,
               (int)st, st == SWIN_OK ? "decoded" : msg)) {
        swin_image_free(&img);
        return;
    }
    g_refused++;
    CHECK(!strncmp(msg, name, strlen(name)) && (!expect || strstr(msg, expect)),
          "%s: message '%s' should name the file and say '%s'", name, msg, expect ? expect : "");
}

static void test_truncated(const fixture *fx, uint8_t *buf) {
    size_t s = 0, e = 0, n = fx->size;
    if (!CHECK(entropy_range(fx->data, n, &s, &e), "%s: no scan found", fx->file)) return;
    size_t sos = find_segment(fx->data, n, is_sos);
    const size_t cuts[] = {3, 10, sos + 2, s, s + 1, s + (e - s) / 4, s + (e - s) / 2, s + 3 * (e - s) / 4,
                           e, n - 2, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        if (cuts[i] >= n) continue;
        char name[200];
        snprintf(name, sizeof name, "%.128s[:%zu]", fx->file, cuts[i]);
        memcpy(buf, fx->data, cuts[i]);
        expect_refused(buf, cuts[i], name, "truncated JPEG", 0);
    }
    expect_refused(buf, 0, "empty.jpg", "empty file", 0);
}

/* Damage libjpeg may or may not notice: either refused cleanly or decoded; 1 when refused. */
static int maybe_refused(const uint8_t *d, size_t n, const char *name) {
    swin_image img;
    swin_status st = swin_image_decode(d, n, name, &img);
    if (st == SWIN_OK) {
        swin_image_free(&img);
        return 0;
    }
    CHECK(st == SWIN_ERR_IMAGE && !strncmp(swin_last_error(), name, strlen(name)), "%s: status %d, %s", name,
          (int)st, swin_last_error());
    return 1;
}

static int g_soft_refused, g_soft_cases;

static void test_corrupt_scan(const fixture *fx, uint8_t *buf) {
    size_t s = 0, e = 0, n = fx->size;
    if (!entropy_range(fx->data, n, &s, &e)) return;
    char name[200];
    /* a marker where the entropy-coded data starts: "premature end of data segment" */
    memcpy(buf, fx->data, n);
    buf[s] = 0xFF, buf[s + 1] = 0xD9;
    snprintf(name, sizeof name, "%.128s+marker@%zu", fx->file, s);
    expect_refused(buf, n, name, "corrupt JPEG", 0);
    /* 32 one-bits (FF with its stuffed 00): no Huffman table has that code */
    if (e - s >= 8) {
        memcpy(buf, fx->data, n);
        for (size_t k = 0; k < 8; k += 2) buf[s + k] = 0xFF, buf[s + k + 1] = 0x00;
        snprintf(name, sizeof name, "%.128s+ones@%zu", fx->file, s);
        g_soft_refused += maybe_refused(buf, n, name);
        g_soft_cases++;
    }
    /* junk before the first restart marker */
    for (size_t p = s; p + 1 < e; p++) {
        if (fx->data[p] != 0xFF || !is_rst(fx->data[p + 1])) continue;
        memcpy(buf, fx->data, p);
        memset(buf + p, 0x00, 4);
        memcpy(buf + p + 4, fx->data + p, n - p);
        snprintf(name, sizeof name, "%.128s+junk@%zu", fx->file, p);
        int r = maybe_refused(buf, n + 4, name);
        printf("bad     %s: %s\n", name, r ? swin_last_error() : "decoded (libjpeg did not notice)");
        g_soft_refused += r;
        g_soft_cases++;
        break;
    }
}

/* Header fields: each case patches one copy of baseline_420_160x120.jpg. */
static void test_bad_headers(uint8_t *buf) {
    const fixture *fx = find_fixture("baseline_420_160x120.jpg");
    if (!CHECK(fx != NULL, "fixture missing")) return;
    size_t n = fx->size, sof = find_segment(fx->data, n, is_sof), sos = find_segment(fx->data, n, is_sos);
    static const struct { const char *name, *expect; int field, value; } CASES[] = {
        {"width0.jpg", "corrupt JPEG", 7, -1},            /* SOF width 0 */
        {"huge_side.jpg", "60000x120 pixels is too large", 7, 60000},
        {"huge_area.jpg", "16000x16000 pixels is too large", 5, 16000},
        {"components2.jpg", "corrupt JPEG", 9, 2},        /* 2 components, length for 3 */
        {"sos_component.jpg", "corrupt JPEG", -5, 9},     /* SOS names component 9 */
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        memcpy(buf, fx->data, n);
        int f = CASES[c].field, v = CASES[c].value;
        if (f == 7 && v < 0) buf[sof + 7] = buf[sof + 8] = 0;
        else if (f == 7) buf[sof + 7] = (uint8_t)(v >> 8), buf[sof + 8] = (uint8_t)v;
        else if (f == 5) {
            buf[sof + 5] = buf[sof + 7] = (uint8_t)(v >> 8);
            buf[sof + 6] = buf[sof + 8] = (uint8_t)v;
        } else if (f == 9) buf[sof + 9] = (uint8_t)v;
        else buf[sos + 5] = (uint8_t)v;
        expect_refused(buf, n, CASES[c].name, CASES[c].expect, 1);
    }
    static const uint8_t NO_IMAGE[] = {0xFF, 0xD8, 0xFF, 0xD9}, SOI[] = {0xFF, 0xD8, 0xFF};
    expect_refused(NO_IMAGE, sizeof NO_IMAGE, "no_image.jpg", "corrupt JPEG", 1);
    expect_refused(SOI, sizeof SOI, "soi_only.jpg", "truncated JPEG", 1);
    memcpy(buf, fx->data, sos + 2 + ((size_t)fx->data[sos + 2] << 8 | fx->data[sos + 3]));
    expect_refused(buf, sos + 2 + ((size_t)fx->data[sos + 2] << 8 | fx->data[sos + 3]), "header_only.jpg",
                   "truncated JPEG", 1);
}

/* Random byte flips anywhere: JPEG has no checksum, so some still decode (to other pixels);
 * what counts is no crash, no leak and a clean status. */
static void test_random_flips(uint8_t *buf) {
    int decoded = 0, refused = 0;
    tu_seed(7);
    for (int i = 0; i < g_nfx; i++) {
        const fixture *fx = &g_fx[i];
        for (int t = 0; t < 40; t++) {
            memcpy(buf, fx->data, fx->size);
            int flips = 1 + t % 3;
            for (int k = 0; k < flips; k++) {
                size_t p = 2 + (size_t)tu_uniform(0, (float)(fx->size - 2));
                buf[p < fx->size ? p : fx->size - 1] ^= (uint8_t)(1 + tu_uniform(0, 255));
            }
            char name[200];
            snprintf(name, sizeof name, "%.128s~%d", fx->file, t);
            if (maybe_refused(buf, fx->size, name)) refused++;
            else decoded++;
        }
    }
    printf("flips   %d variants with 1-3 random bytes changed: %d refused, %d decoded to other pixels\n",
           decoded + refused, refused, decoded);
}

static void test_bad(void) {
    size_t max = 0;
    for (int i = 0; i < g_nfx; i++) max = g_fx[i].size > max ? g_fx[i].size : max;
    uint8_t *buf = malloc(max + 16);
    for (int i = 0; i < g_nfx; i++) {
        test_truncated(&g_fx[i], buf);
        test_corrupt_scan(&g_fx[i], buf);
    }
    test_bad_headers(buf);
    printf("bad     %d of %d truncated / corrupt variants refused (all must be)\n", g_refused, g_cases);
    printf("bad     %d of %d with bad Huffman codes or junk before a restart marker refused (best effort)\n",
           g_soft_refused, g_soft_cases);
    test_random_flips(buf);
    free(buf);
}

// ---- 4. threads
static void *decode_all(void *arg) {
    long *bad = arg;
    for (int r = 0; r < 5; r++)
        for (int i = 0; i < g_nfx; i++) {
            swin_image img;
            if (swin_image_decode(g_fx[i].data, g_fx[i].size, g_fx[i].file, &img) != SWIN_OK) { (*bad)++; continue; }
            *bad += count_diff(&img, &g_fx[i]) != 0;
            swin_image_free(&img);
        }
    return NULL;
}

static void test_threads(void) {
    enum { T = 4 };
    pthread_t th[T];
    long bad[T] = {0};
    for (int t = 0; t < T; t++) pthread_create(&th[t], NULL, decode_all, &bad[t]);
    long all = 0;
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL), all += bad[t];
    printf("threads %d threads x 5 rounds x %d files: %ld wrong\n", T, g_nfx, all);
    CHECK(all == 0, "%ld decodes went wrong with %d threads", all, T);
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : ".";
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/data/jpeg", root);
    if (CHECK(load_fixtures(dir), "cannot read the fixtures in %s (tools/export_jpeg.py makes them)", dir)) {
        test_fixtures();
        test_arithmetic_and_12bit();
        test_bad();
        test_threads();
    }
    for (int i = 0; i < g_nfx; i++) free(g_fx[i].data);
    free(g_ref_file);
    return tu_finish("test_jpeg");
}
