/* internal.h - helpers shared inside libswin: error messages, small utilities. Not installed. */
#ifndef SWIN_INTERNAL_H
#define SWIN_INTERNAL_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "swin.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SWIN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SWIN_PRINTF(a, b)
#endif

/* Record a printf-style message for swin_last_error() and return st. Usage:
 *   return swin_fail(SWIN_ERR_TENSOR, "%s: tensor '%s' has shape [%d], expected [%d]", ...); */
swin_status swin_fail(swin_status st, const char *fmt, ...) SWIN_PRINTF(2, 3);
/* Prefix the current message: "ctx: <old message>" (adds the file name on the way up). */
swin_status swin_fail_prefix(swin_status st, const char *fmt, ...) SWIN_PRINTF(2, 3);
void swin_clear_error(void);

#define SWIN_TRY(expr)                          \
    do {                                        \
        swin_status swin_try_st_ = (expr);      \
        if (swin_try_st_ != SWIN_OK) return swin_try_st_; \
    } while (0)

/* Size arithmetic that reports overflow instead of wrapping (returns 0 on success). */
int swin_mul_size(size_t a, size_t b, size_t *out);
int swin_add_size(size_t a, size_t b, size_t *out);

/* Arena carving: align 256 bytes; off advances. Use twice: once with base == NULL to size, once
 * to place. */
static inline void *swin_carve(char *base, size_t *off, size_t bytes) {
    size_t o = (*off + 255u) & ~(size_t)255u;
    *off = o + bytes;
    return base ? (void *)(base + o) : NULL;
}

/* A switch in the environment (the kernels' SWIN_* comparison switches): unset or empty gives
 * dflt, "0" off, anything else on. Callers read it once and keep the answer. */
static inline int swin_env_on(const char *name, int dflt) {
    const char *v = getenv(name);
    return !v || !v[0] ? dflt : strcmp(v, "0") != 0;
}

/* 1 when the environment variable is set to exactly value (a switch with named values, e.g.
 * SWIN_FP32_GEMM=sgemm); callers read it once and keep the answer. */
static inline int swin_env_is(const char *name, const char *value) {
    const char *v = getenv(name);
    return v && !strcmp(v, value);
}

/* An integer setting from the environment: *out = def when name is unset or empty, else its
 * value, which must be a whole number in [lo, hi] (what: the unit the message names). */
static inline swin_status swin_env_int(const char *name, int lo, int hi, int def, const char *what, int *out) {
    const char *e = getenv(name);
    if (!e || !*e) {
        *out = def;
        return SWIN_OK;
    }
    char *end;
    long v = strtol(e, &end, 10);
    if (*end || v < lo || v > hi) return swin_fail(SWIN_ERR_ARGUMENT, "%s='%s': expected %d to %d %s", name, e, lo, hi, what);
    *out = (int)v;
    return SWIN_OK;
}

/* Read a whole small file (configs, label lists) up to max bytes; NUL-terminated. */
swin_status swin_read_text(const char *path, size_t max, char **out, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
