/* status.c - status strings and the per-thread error message. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "internal.h"

static _Thread_local char g_err[2048];

const char *swin_status_str(swin_status s) {
    switch (s) {
#define SWIN_STATUS_CASE(name, str) case SWIN_##name: return str;
        SWIN_STATUS_MAP(SWIN_STATUS_CASE)
#undef SWIN_STATUS_CASE
    default: return "unknown status";
    }
}

const char *swin_last_error(void) { return g_err; }
void swin_clear_error(void) { g_err[0] = '\0'; }

swin_status swin_fail(swin_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
    return st;
}

swin_status swin_fail_prefix(swin_status st, const char *fmt, ...) {
    char prefix[1024], old[sizeof g_err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, g_err, sizeof old);
    snprintf(g_err, sizeof g_err, "%.1000s: %.1000s", prefix, old);
    return st;
}

int swin_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return 1;
    *out = a * b;
    return 0;
}

int swin_add_size(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return 1;
    *out = a + b;
    return 0;
}

/* The buffer grows as the file is read (from 64 KiB, doubling), so that a small config costs a
 * small allocation whatever max is; at most max + 1 bytes are read. */
swin_status swin_read_text(const char *path, size_t max, char **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return swin_fail(SWIN_ERR_IO, "%s: cannot open", path);
    size_t cap = max < 65535 ? max + 1 : 65536, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) { fclose(f); return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path); }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap || cap > max) break;   /* end of file or error; or max + 1 bytes read */
        size_t grown = cap > max / 2 ? max + 1 : cap * 2;
        char *b = realloc(buf, grown + 1);
        if (!b) free(buf);
        buf = b;
        cap = grown;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); return swin_fail(SWIN_ERR_IO, "%s: read error", path); }
    if (n > max) { free(buf); return swin_fail(SWIN_ERR_FORMAT, "%s: larger than %zu bytes", path, max); }
    buf[n] = '\0';
    *out = buf;
    if (len) *len = n;
    return SWIN_OK;
}

const char *swin_precision_str(swin_precision p) {
    switch (p) {
    case SWIN_FP32: return "fp32";
    case SWIN_TF32: return "tf32";
    case SWIN_FP16: return "fp16";
    case SWIN_BF16: return "bf16";
    case SWIN_FP8: return "fp8";
    }
    return "?";
}

swin_status swin_precision_parse(const char *s, swin_precision *out) {
    static const char *names[] = {"fp32", "tf32", "fp16", "bf16", "fp8"};   /* in enum order */
    for (int i = 0; i < 5; i++)
        if (s && strcmp(s, names[i]) == 0) { *out = (swin_precision)i; return SWIN_OK; }
    return swin_fail(SWIN_ERR_ARGUMENT, "unknown precision '%s' (expected fp32, tf32, fp16, bf16 or fp8)",
                     s ? s : "");
}
