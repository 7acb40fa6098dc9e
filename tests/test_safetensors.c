/* test_safetensors.c - the safetensors reader/writer: round trips of F32 / F16 / BF16 / I64 with
 * random data, and every rejection at the library level (each case checks the status and a
 * message fragment). Run: ctest -R test_safetensors, or build-dir/tests/test_safetensors SRC_DIR.
 */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "safetensors.h"
#include "testutil.h"

static char g_dir[256];

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", g_dir, name); }

/* ---- round trips */
static uint16_t f32_to_bf16(float f) { uint32_t b; memcpy(&b, &f, 4); return (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16); }

static void test_round_trip(void) {
    float f32[24], back[24];
    uint16_t f16[6] = {0x3c00, 0xc000, 0x0001, 0x7bff, 0x0000, 0x8400};   /* 1, -2, min subnormal, 65504, 0, -2^-14 */
    const float f16_want[6] = {1.0f, -2.0f, 5.9604645e-08f, 65504.0f, 0.0f, -6.1035156e-05f};
    uint16_t bf16[5];
    int64_t i64[3] = {-5, 0, INT64_C(1) << 40};
    tu_fill(f32, 24, -3, 3);
    for (int i = 0; i < 5; i++) bf16[i] = f32_to_bf16(f32[i]);
    swin_st_tensor ts[5] = {
        {.name = "a.f32", .dtype = SWIN_ST_F32, .rank = 3, .shape = {2, 3, 4}, .data = f32},
        {.name = "b.f16", .dtype = SWIN_ST_F16, .rank = 1, .shape = {6}, .data = f16},
        {.name = "c.bf16", .dtype = SWIN_ST_BF16, .rank = 2, .shape = {5, 1}, .data = bf16},
        {.name = "d.i64", .dtype = SWIN_ST_I64, .rank = 1, .shape = {3}, .data = i64},
        {.name = "e.empty", .dtype = SWIN_ST_F32, .rank = 2, .shape = {0, 7}, .data = NULL},
    };
    char p[512];
    path_of(p, sizeof p, "rt.safetensors");
    CHECK(swin_st_write(p, ts, 5) == SWIN_OK, "write: %s", swin_last_error());
    swin_st *f = NULL;
    CHECK(swin_st_open(p, &f) == SWIN_OK, "open: %s", swin_last_error());
    if (!f) return;
    CHECK(swin_st_count(f) == 5, "count %d", swin_st_count(f));
    const swin_st_tensor *a = swin_st_find(f, "a.f32");
    CHECK(a && a->rank == 3 && a->shape[2] == 4 && a->numel == 24 && a->nbytes == 96, "a.f32 header");
    if (a) {
        memset(back, 0xff, sizeof back);   /* poison */
        CHECK(swin_st_read_f32(f, a, back) == SWIN_OK, "read a");
        CHECK(tu_max_abs_diff(back, f32, 24) == 0, "f32 round trip differs");
    }
    const swin_st_tensor *h = swin_st_find(f, "b.f16");
    if (CHECK(h != NULL, "b.f16 missing")) {
        CHECK(swin_st_read_f32(f, h, back) == SWIN_OK, "read f16");
        for (int i = 0; i < 6; i++) CHECK(back[i] == f16_want[i], "f16[%d] = %g, expected %g", i, back[i], f16_want[i]);
    }
    const swin_st_tensor *b = swin_st_find(f, "c.bf16");
    if (CHECK(b != NULL, "c.bf16 missing")) {
        CHECK(swin_st_read_f32(f, b, back) == SWIN_OK, "read bf16");
        for (int i = 0; i < 5; i++)
            CHECK(fabsf(back[i] - f32[i]) <= fabsf(f32[i]) * 0x1p-8f, "bf16[%d] = %g vs %g", i, back[i], f32[i]);
    }
    const swin_st_tensor *l = swin_st_find(f, "d.i64");
    if (CHECK(l && l->dtype == SWIN_ST_I64 && l->nbytes == 24, "d.i64 header")) {
        int64_t got[3];
        memcpy(got, l->data, sizeof got);
        CHECK(got[0] == -5 && got[2] == (INT64_C(1) << 40), "i64 values %lld %lld", (long long)got[0], (long long)got[2]);
        CHECK(swin_st_read_f32(f, l, back) == SWIN_ERR_TENSOR && strstr(swin_last_error(), "d.i64"),
              "reading I64 as float must fail naming the tensor: %s", swin_last_error());
    }
    const swin_st_tensor *e = swin_st_find(f, "e.empty");
    CHECK(e && e->numel == 0 && e->nbytes == 0, "empty tensor");
    CHECK(swin_st_find(f, "nope") == NULL, "find of an absent name");
    char buf[64];
    CHECK(a && !strcmp(swin_st_shape_str(a, buf, sizeof buf), "[2, 3, 4]"), "shape str '%s'", buf);
    swin_st_close(f);
}

/* ---- rejections: raw files with a given header and data size */
static void write_raw(const char *path, const char *header, uint64_t claimed_len, size_t data_bytes, size_t total_cut) {
    FILE *fp = fopen(path, "wb");
    size_t hl = strlen(header);
    unsigned char len8[8];
    uint64_t L = claimed_len ? claimed_len : hl;
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(L >> (8 * i));
    size_t total = 8 + hl + data_bytes;
    unsigned char *all = calloc(total, 1);
    memcpy(all, len8, 8);
    memcpy(all + 8, header, hl);
    for (size_t i = 0; i < data_bytes; i++) all[8 + hl + i] = (unsigned char)(i * 7);
    fwrite(all, 1, total_cut ? total_cut : total, fp);
    fclose(fp);
    free(all);
}

typedef struct {
    const char *what;
    const char *header;
    uint64_t claimed_len;     /* 0: the real length */
    size_t data_bytes;
    size_t cut;               /* 0: whole file; else keep only this many bytes */
    swin_status want;
    const char *msg;          /* substring of the error */
} reject_case;

static const reject_case REJECTS[] = {
    {"file shorter than 8 bytes", "{}", 0, 0, 5, SWIN_ERR_FORMAT, "shorter than the 8-byte"},
    {"header length beyond file", "{}", 1000, 0, 0, SWIN_ERR_FORMAT, "header length 1000 exceeds"},
    {"invalid JSON", "{\"a\": {\"dtype\": \"F32\",", 0, 0, 0, SWIN_ERR_FORMAT, "not valid JSON"},
    {"header not an object", "[1, 2, 3]", 0, 0, 0, SWIN_ERR_FORMAT, "not a JSON object"},
    {"offsets out of range", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 0, 8, 0,
     SWIN_ERR_FORMAT, "'w' data_offsets [0, 16] run past the data block of 8 bytes"},
    {"truncated file", "{\"w\":{\"dtype\":\"F32\",\"shape\":[64],\"data_offsets\":[0,256]}}", 0, 256, 100,
     SWIN_ERR_FORMAT, "truncated"},
    {"offsets reversed", "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 0, 8, 0,
     SWIN_ERR_FORMAT, "'w' data_offsets [8, 0] are reversed"},
    {"overlapping tensors",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
     0, 12, 0, SWIN_ERR_FORMAT, "'a' and 'b' overlap"},
    {"byte size != elements x dtype", "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 0, 8, 0,
     SWIN_ERR_FORMAT, "'w' holds 8 bytes but shape x F32 needs 12"},
    {"unknown dtype", "{\"w\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", 0, 8, 0, SWIN_ERR_FORMAT,
     "unknown dtype 'F33'"},
    {"unsupported dtype", "{\"w\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 0, 8, 0,
     SWIN_ERR_UNSUPPORTED, "'w' has dtype F64"},
    {"absurd rank", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 0, 4, 0,
     SWIN_ERR_FORMAT, "rank 9"},
    {"negative dim", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-2,2],\"data_offsets\":[0,0]}}", 0, 0, 0, SWIN_ERR_FORMAT,
     "negative"},
    {"element count overflow",
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}", 0, 4, 0,
     SWIN_ERR_FORMAT, "overflow"},
    {"duplicate name",
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
     0, 8, 0, SWIN_ERR_FORMAT, "'w' appears twice"},
    {"entry without dtype", "{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 0, 4, 0, SWIN_ERR_FORMAT, "no \"dtype\""},
    {"fractional offset", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0.5,4]}}", 0, 4, 0,
     SWIN_ERR_FORMAT, "not non-negative integers"},
};

static void test_rejections(void) {
    char p[512];
    for (size_t i = 0; i < sizeof REJECTS / sizeof REJECTS[0]; i++) {
        const reject_case *c = &REJECTS[i];
        path_of(p, sizeof p, "bad.safetensors");
        write_raw(p, c->header, c->claimed_len, c->data_bytes, c->cut);
        swin_st *f = (swin_st *)0x1;   /* poison: must be reset to NULL */
        swin_status st = swin_st_open(p, &f);
        CHECK(st == c->want, "%s: status %s, expected %s (%s)", c->what, swin_status_str(st), swin_status_str(c->want),
              swin_last_error());
        CHECK(f == NULL, "%s: handle not NULL on failure", c->what);
        CHECK(strstr(swin_last_error(), c->msg) != NULL, "%s: message '%s' lacks '%s'", c->what, swin_last_error(),
              c->msg);
        CHECK(strstr(swin_last_error(), "bad.safetensors") != NULL, "%s: message does not name the file", c->what);
        if (st == SWIN_OK) swin_st_close(f);
    }
    /* a missing file is an I/O error naming it */
    swin_st *f = NULL;
    path_of(p, sizeof p, "does-not-exist.safetensors");
    CHECK(swin_st_open(p, &f) == SWIN_ERR_IO && strstr(swin_last_error(), "does-not-exist"), "missing file: %s",
          swin_last_error());
    /* __metadata__ is skipped, an empty header object is a valid empty file */
    path_of(p, sizeof p, "meta.safetensors");
    write_raw(p, "{\"__metadata__\":{\"format\":\"pt\"}}", 0, 0, 0);
    CHECK(swin_st_open(p, &f) == SWIN_OK && swin_st_count(f) == 0, "metadata-only file: %s", swin_last_error());
    swin_st_close(f);
}

int main(int argc, char **argv) {
    (void)argc; (void)argv;
    if (tu_tmpdir(g_dir, sizeof g_dir, "swin_st")) return 1;
    tu_seed(42);
    test_round_trip();
    test_rejections();
    tu_rmtree(g_dir);
    return tu_finish("test_safetensors");
}
