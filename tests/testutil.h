/* testutil.h - tiny helpers shared by the C tests. */
#ifndef SWIN_TESTUTIL_H
#define SWIN_TESTUTIL_H
#include <stddef.h>
#include <stdint.h>

/* Count a check; print "not ok" with the location when cond is false. */
#define CHECK(cond, ...) tu_check((cond), __FILE__, __LINE__, #cond, __VA_ARGS__)
int tu_check(int ok, const char *file, int line, const char *expr, const char *fmt, ...);
/* Print "N passed, M failed" and return the process exit code (0 only if none failed and at
 * least one check ran). */
int tu_finish(const char *suite);

/* Deterministic random numbers (xorshift64*), uniform in [lo, hi). */
void tu_seed(uint64_t s);
float tu_uniform(float lo, float hi);
void tu_fill(float *x, size_t n, float lo, float hi);

/* max |a-b| and max |b| over n */
double tu_max_abs_diff(const float *a, const float *b, size_t n);
double tu_max_abs(const float *a, size_t n);
/* the median of t[n] (n >= 1; t is sorted in place) */
float tu_median(float *t, int n);


/* IEEE half and bfloat16 bit conversions on the host (round to nearest even). */
uint16_t tu_f32_to_f16(float f);
float tu_f16_to_f32(uint16_t h);
uint16_t tu_f32_to_bf16(float f);
float tu_bf16_to_f32(uint16_t h);
/* x[n] floats as dtype 0 f32 / 1 f16 / 2 bf16 values (4 or 2 bytes each) into dst, and back */
void tu_to_dtype(void *dst, const float *x, size_t n, int dtype);
void tu_from_dtype(float *dst, const void *x, size_t n, int dtype);
/* Round x[n] in place to what dtype 0 f32 / 1 f16 / 2 bf16 can hold (matches swin_dtype). */
void tu_round_to(float *x, size_t n, int dtype);
/* A whole file, malloc'd with one NUL byte after its *n bytes; NULL when it cannot be read. */
unsigned char *tu_read_file(const char *path, size_t *n);
/* The paths dir/NAME of the files in dir whose names end in suffix, sorted by name, malloc'd
 * into paths[0 .. max); returns how many (-1 when dir cannot be opened). */
int tu_list_files(const char *dir, const char *suffix, char **paths, int max);
/* Make a fresh directory $TMPDIR/<prefix>_XXXXXX into buf; 0 on success. */
int tu_tmpdir(char *buf, size_t size, const char *prefix);
/* Remove a directory tree (kept when SWIN_KEEP_TMP is set, for debugging). */
void tu_rmtree(const char *dir);
/* Exit code for "no usable GPU": tests print why and return this. */
#define TU_SKIP 77
#endif
