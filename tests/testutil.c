/* testutil.c - see testutil.h */
#define _XOPEN_SOURCE 700
#include "testutil.h"
#include <dirent.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static int g_pass, g_fail;
static uint64_t g_state = 0x9E3779B97F4A7C15ull;

int tu_check(int ok, const char *file, int line, const char *expr, const char *fmt, ...) {
    if (ok) { g_pass++; return 1; }
    g_fail++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "not ok %s:%d (%s): ", file, line, expr);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 0;
}

int tu_finish(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, g_pass, g_fail);
    if (g_pass + g_fail == 0) { fprintf(stderr, "%s: no checks ran\n", suite); return 1; }
    return g_fail ? 1 : 0;
}

void tu_seed(uint64_t s) { g_state = s ? s : 1; }
static uint64_t next(void) {
    g_state ^= g_state >> 12; g_state ^= g_state << 25; g_state ^= g_state >> 27;
    return g_state * 2685821657736338717ull;
}
float tu_uniform(float lo, float hi) { return lo + (hi - lo) * (float)((next() >> 40) / 16777216.0); }
void tu_fill(float *x, size_t n, float lo, float hi) { for (size_t i = 0; i < n; i++) x[i] = tu_uniform(lo, hi); }

double tu_max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d != d) return INFINITY;  /* NaN never passes */
        if (d > m) m = d;
    }
    return m;
}
double tu_max_abs(const float *a, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) if (fabs(a[i]) > m) m = fabs(a[i]);
    return m;
}

static int tu_cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

float tu_median(float *t, int n) {
    qsort(t, (size_t)n, sizeof t[0], tu_cmp_float);
    return n % 2 ? t[n / 2] : 0.5f * (t[n / 2 - 1] + t[n / 2]);
}

#include <string.h>

uint16_t tu_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);   /* NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
float tu_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t tu_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u, absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);                  /* NaN */
    if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                 /* overflow -> inf */
    if (absu < 0x38800000u) {                                                    /* subnormal half */
        float a;
        memcpy(&a, &absu, 4);
        return (uint16_t)(sign | (uint32_t)lrintf(a * 16777216.0f));             /* a / 2^-24 */
    }
    uint32_t mant = absu & 0x7fffffu, exp = (absu >> 23) - 112;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}
float tu_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    float f;
    if (exp == 0) {
        f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    uint32_t u = exp == 31 ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
    memcpy(&f, &u, 4);
    return f;
}
void tu_round_to(float *x, size_t n, int dtype) {
    for (size_t i = 0; i < n; i++) {
        if (dtype == 1) x[i] = tu_f16_to_f32(tu_f32_to_f16(x[i]));
        else if (dtype == 2) x[i] = tu_bf16_to_f32(tu_f32_to_bf16(x[i]));
    }
}

void tu_to_dtype(void *dst, const float *x, size_t n, int dtype) {
    for (size_t i = 0; i < n; i++) {
        if (dtype == 0) ((float *)dst)[i] = x[i];
        else ((uint16_t *)dst)[i] = dtype == 1 ? tu_f32_to_f16(x[i]) : tu_f32_to_bf16(x[i]);
    }
}

void tu_from_dtype(float *dst, const void *x, size_t n, int dtype) {
    for (size_t i = 0; i < n; i++) {
        if (dtype == 0) dst[i] = ((const float *)x)[i];
        else dst[i] = dtype == 1 ? tu_f16_to_f32(((const uint16_t *)x)[i]) : tu_bf16_to_f32(((const uint16_t *)x)[i]);
    }
}

int tu_tmpdir(char *buf, size_t size, const char *prefix) {
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, size, "%s/%s_XXXXXX", tmp && *tmp ? tmp : P_tmpdir, prefix);
    if (!mkdtemp(buf)) { perror("mkdtemp"); return 1; }
    return 0;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

void tu_rmtree(const char *dir) {
    if (!getenv("SWIN_KEEP_TMP")) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

unsigned char *tu_read_file(const char *path, size_t *n) {
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    unsigned char *buf = size >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)size + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)size, f) != (size_t)size) { free(buf); buf = NULL; }
    fclose(f);
    if (buf) { buf[size] = 0; *n = (size_t)size; }
    return buf;
}

static int tu_by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int tu_list_files(const char *dir, const char *suffix, char **paths, int max) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    const size_t ls = strlen(suffix);
    for (struct dirent *e; (e = readdir(d)) && n < max;) {
        size_t l = strlen(e->d_name);
        if (l <= ls || strcmp(e->d_name + l - ls, suffix)) continue;
        size_t need = strlen(dir) + l + 2;
        if (!(paths[n] = malloc(need))) break;
        snprintf(paths[n++], need, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    qsort(paths, (size_t)n, sizeof paths[0], tu_by_name);
    return n;
}

