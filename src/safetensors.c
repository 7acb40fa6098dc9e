/* safetensors.c - strict safetensors reader (mmap) and writer. See safetensors.h.
 *
 * Every check named in the header is made at open time, so that a swin_st handle, once returned,
 * only holds tensors whose bytes lie inside the mapping. Messages name the file and the tensor.
 * Test: tests/test_safetensors.c (round trips, rejections) and tests/test_malformed.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define ST_MAX_HEADER (100u << 20)   /* 100 MB of JSON is far beyond any real checkpoint */

struct swin_st {
    char path[1024];
    const char *base;        /* whole-file mapping */
    size_t size;
    const char *data;        /* data block = base + 8 + header length */
    size_t data_size;
    int n;
    swin_st_tensor *t;       /* sorted by name (swin_st_find uses bsearch) */
    char *names;             /* all names, NUL-separated */
};

/* ---- dtypes */
static const struct { const char *name; int size; int supported; swin_st_dtype dt; } DTYPES[] = {
    {"F32", 4, 1, SWIN_ST_F32}, {"F16", 2, 1, SWIN_ST_F16}, {"BF16", 2, 1, SWIN_ST_BF16},
    {"I64", 8, 1, SWIN_ST_I64},
    /* valid safetensors dtypes that swin does not read */
    {"F64", 8, 0, 0}, {"I32", 4, 0, 0}, {"I16", 2, 0, 0}, {"I8", 1, 0, 0}, {"U8", 1, 0, 0},
    {"U16", 2, 0, 0}, {"U32", 4, 0, 0}, {"U64", 8, 0, 0}, {"BOOL", 1, 0, 0},
    {"F8_E4M3", 1, 0, 0}, {"F8_E5M2", 1, 0, 0}, {"F8_E8M0", 1, 0, 0}, {"F4", 1, 0, 0},
    {"F6_E2M3", 1, 0, 0}, {"F6_E3M2", 1, 0, 0}, {"C64", 8, 0, 0},
};

size_t swin_st_dtype_size(swin_st_dtype dt) {
    switch (dt) {
    case SWIN_ST_F32: return 4;
    case SWIN_ST_F16: return 2;
    case SWIN_ST_BF16: return 2;
    case SWIN_ST_I64: return 8;
    }
    return 0;
}

const char *swin_st_dtype_str(swin_st_dtype dt) {
    switch (dt) {
    case SWIN_ST_F32: return "F32";
    case SWIN_ST_F16: return "F16";
    case SWIN_ST_BF16: return "BF16";
    case SWIN_ST_I64: return "I64";
    }
    return "?";
}

const char *swin_st_shape_str(const swin_st_tensor *t, char *buf, size_t size) {
    size_t o = 0;
    if (size == 0) return buf;
    buf[0] = '\0';
    o += (size_t)snprintf(buf + o, size - o, "[");
    for (int i = 0; i < t->rank && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (o < size) snprintf(buf + o, size - o, "]");
    return buf;
}

/* ---- accessors */
const char *swin_st_path(const swin_st *f) { return f ? f->path : ""; }
int swin_st_count(const swin_st *f) { return f ? f->n : 0; }
const swin_st_tensor *swin_st_at(const swin_st *f, int i) {
    return (f && i >= 0 && i < f->n) ? &f->t[i] : NULL;
}

static int cmp_tensor_name(const void *a, const void *b) {
    return strcmp(((const swin_st_tensor *)a)->name, ((const swin_st_tensor *)b)->name);
}

const swin_st_tensor *swin_st_find(const swin_st *f, const char *name) {
    if (!f || !name || f->n == 0) return NULL;
    swin_st_tensor key;
    memset(&key, 0, sizeof key);
    key.name = name;
    return bsearch(&key, f->t, (size_t)f->n, sizeof *f->t, cmp_tensor_name);
}

void swin_st_close(swin_st *f) {
    if (!f) return;
    if (f->base) munmap((void *)f->base, f->size);
    free(f->t);
    free(f->names);
    free(f);
}

/* ---- header parsing */
/* a JSON number that is an integer in [lo, hi] */
static int json_int64(const cJSON *j, int64_t lo, int64_t hi, int64_t *out) {
    if (!cJSON_IsNumber(j)) return 0;
    double v = j->valuedouble;
    if (!(v >= (double)lo && v <= (double)hi) || v != floor(v)) return 0;
    *out = (int64_t)v;
    return 1;
}

/* Fill t from one header entry; data offsets are checked against the data block. */
static swin_status parse_entry(const swin_st *f, const cJSON *e, swin_st_tensor *t, size_t *begin) {
    const char *p = f->path, *k = e->string;
    if (!cJSON_IsObject(e))
        return swin_fail(SWIN_ERR_FORMAT, "%s: header entry '%s' is not an object", p, k);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt))
        return swin_fail(SWIN_ERR_FORMAT, "%s: tensor '%s' has no \"dtype\" string", p, k);
    if (!cJSON_IsArray(sh))
        return swin_fail(SWIN_ERR_FORMAT, "%s: tensor '%s' has no \"shape\" array", p, k);
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
        return swin_fail(SWIN_ERR_FORMAT, "%s: tensor '%s' needs \"data_offsets\" [begin, end]", p, k);

    int found = -1;
    for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
        if (!strcmp(dt->valuestring, DTYPES[i].name)) { found = (int)i; break; }
    if (found < 0)
        return swin_fail(SWIN_ERR_FORMAT, "%s: tensor '%s' has unknown dtype '%.32s'", p, k, dt->valuestring);
    if (!DTYPES[found].supported)
        return swin_fail(SWIN_ERR_UNSUPPORTED,
                         "%s: tensor '%s' has dtype %s; swin reads F32, F16, BF16 and I64 only", p, k,
                         DTYPES[found].name);
    t->dtype = DTYPES[found].dt;

    int rank = cJSON_GetArraySize(sh);
    if (rank > SWIN_ST_MAX_RANK)
        return swin_fail(SWIN_ERR_FORMAT, "%s: tensor '%s' has rank %d, more than %d", p, k, rank,
                         SWIN_ST_MAX_RANK);
    t->rank = rank;
    size_t numel = 1;
    for (int i = 0; i < rank; i++) {
        int64_t d;
        const cJSON *dj = cJSON_GetArrayItem(sh, i);
        if (!cJSON_IsNumber(dj) || dj->valuedouble < 0)
            return swin_fail(SWIN_ERR_FORMAT, "%s: tensor '%s' has a negative or non-numeric dimension %d",
                             p, k, i);
        if (!json_int64(dj, 0, INT64_C(1) << 53, &d))
            return swin_fail(SWIN_ERR_FORMAT, "%s: tensor '%s' dimension %d is not a valid size", p, k, i);
        t->shape[i] = d;
        if (swin_mul_size(numel, (size_t)d, &numel))
            return swin_fail(SWIN_ERR_FORMAT, "%s: tensor '%s' element count overflows", p, k);
    }
    t->numel = (int64_t)numel;

    int64_t b, en;
    if (!json_int64(cJSON_GetArrayItem(off, 0), 0, INT64_C(1) << 62, &b) ||
        !json_int64(cJSON_GetArrayItem(off, 1), 0, INT64_C(1) << 62, &en))
        return swin_fail(SWIN_ERR_FORMAT, "%s: tensor '%s' data_offsets are not non-negative integers", p, k);
    if (en < b)
        return swin_fail(SWIN_ERR_FORMAT, "%s: tensor '%s' data_offsets [%lld, %lld] are reversed", p, k,
                         (long long)b, (long long)en);
    if ((uint64_t)en > f->data_size)
        return swin_fail(SWIN_ERR_FORMAT,
                         "%s: tensor '%s' data_offsets [%lld, %lld] run past the data block of %zu bytes "
                         "(file truncated?)", p, k, (long long)b, (long long)en, f->data_size);
    size_t want;
    if (swin_mul_size(numel, swin_st_dtype_size(t->dtype), &want) || want != (size_t)(en - b))
        return swin_fail(SWIN_ERR_FORMAT,
                         "%s: tensor '%s' holds %lld bytes but shape x %s needs %zu", p, k,
                         (long long)(en - b), DTYPES[found].name, want);
    t->nbytes = want;
    t->data = f->data + b;
    *begin = (size_t)b;
    return SWIN_OK;
}

typedef struct { size_t begin, end; int idx; } span;
static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end < y->end ? -1 : x->end > y->end);
}

/* Parse the JSON header into f->t; checks overlap and duplicates. */
static swin_status parse_header(swin_st *f, const char *json, size_t len) {
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) {
        const char *err = cJSON_GetErrorPtr();
        long at = (err && err >= json && err <= json + len) ? (long)(err - json) : -1;
        return swin_fail(SWIN_ERR_FORMAT, "%s: header is not valid JSON (error near byte %ld of %zu)",
                         f->path, at, len);
    }
    swin_status st = SWIN_OK;
    span *spans = NULL;
    if (!cJSON_IsObject(root)) {
        st = swin_fail(SWIN_ERR_FORMAT, "%s: header is not a JSON object", f->path);
        goto done;
    }
    int n = 0;
    size_t names_len = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (!e->string) { st = swin_fail(SWIN_ERR_FORMAT, "%s: header entry without a name", f->path); goto done; }
        if (!strcmp(e->string, "__metadata__")) continue;
        n++;
        names_len += strlen(e->string) + 1;
    }
    f->t = calloc(n ? (size_t)n : 1, sizeof *f->t);
    f->names = malloc(names_len ? names_len : 1);
    spans = calloc(n ? (size_t)n : 1, sizeof *spans);
    if (!f->t || !f->names || !spans) { st = swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", f->path); goto done; }
    char *np = f->names;
    int i = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) continue;
        size_t l = strlen(e->string) + 1;
        memcpy(np, e->string, l);
        f->t[i].name = np;
        np += l;
        st = parse_entry(f, e, &f->t[i], &spans[i].begin);
        if (st != SWIN_OK) goto done;
        spans[i].end = spans[i].begin + f->t[i].nbytes;
        spans[i].idx = i;
        i++;
    }
    f->n = n;
    /* overlapping byte ranges (empty tensors occupy nothing) */
    qsort(spans, (size_t)n, sizeof *spans, cmp_span);
    size_t prev_end = 0;
    int prev = -1;
    for (int j = 0; j < n; j++) {
        if (spans[j].begin == spans[j].end) continue;
        if (prev >= 0 && spans[j].begin < prev_end) {
            st = swin_fail(SWIN_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap in the data block", f->path,
                           f->t[prev].name, f->t[spans[j].idx].name);
            goto done;
        }
        prev_end = spans[j].end;
        prev = spans[j].idx;
    }
    qsort(f->t, (size_t)n, sizeof *f->t, cmp_tensor_name);
    for (int j = 1; j < n; j++)
        if (!strcmp(f->t[j - 1].name, f->t[j].name)) {
            st = swin_fail(SWIN_ERR_FORMAT, "%s: tensor '%s' appears twice in the header", f->path, f->t[j].name);
            goto done;
        }
done:
    free(spans);
    cJSON_Delete(root);
    return st;
}

swin_status swin_st_open(const char *path, swin_st **out) {
    if (!path || !out) return swin_fail(SWIN_ERR_ARGUMENT, "swin_st_open: NULL argument");
    *out = NULL;
    swin_st *f = calloc(1, sizeof *f);
    if (!f) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path);
    snprintf(f->path, sizeof f->path, "%s", path);

    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        swin_st_close(f);
        return swin_fail(SWIN_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        swin_st_close(f);
        return swin_fail(SWIN_ERR_IO, "%s: not a regular file", path);
    }
    size_t size = (size_t)sb.st_size;
    if (size < 8) {
        close(fd);
        swin_st_close(f);
        return swin_fail(SWIN_ERR_FORMAT, "%s: file is %zu bytes, shorter than the 8-byte header length",
                         path, size);
    }
    void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        swin_st_close(f);
        return swin_fail(SWIN_ERR_IO, "%s: cannot map %zu bytes (%s)", path, size, strerror(errno));
    }
    f->base = m;
    f->size = size;

    const unsigned char *b = (const unsigned char *)m;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | b[i];
    if (hlen > size - 8) {
        swin_status st = swin_fail(SWIN_ERR_FORMAT,
                                   "%s: header length %llu exceeds the %zu bytes that follow it (truncated or not safetensors)",
                                   path, (unsigned long long)hlen, size - 8);
        swin_st_close(f);
        return st;
    }
    if (hlen > ST_MAX_HEADER || hlen < 2) {
        swin_status st = swin_fail(SWIN_ERR_FORMAT, "%s: header length %llu is implausible", path,
                                   (unsigned long long)hlen);
        swin_st_close(f);
        return st;
    }
    f->data = f->base + 8 + hlen;
    f->data_size = size - 8 - (size_t)hlen;
    swin_status st = parse_header(f, f->base + 8, (size_t)hlen);
    if (st != SWIN_OK) { swin_st_close(f); return st; }
    *out = f;
    return SWIN_OK;
}

/* ---- conversion */
static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu, bits;
    if (exp == 0) {
        if (man == 0) bits = sign;
        else {                                   /* subnormal: renormalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400u));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);  /* inf / nan */
    } else {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    }
    float v;
    memcpy(&v, &bits, 4);
    return v;
}

swin_status swin_st_read_f32(const swin_st *f, const swin_st_tensor *t, float *dst) {
    if (!t || !dst) return swin_fail(SWIN_ERR_ARGUMENT, "swin_st_read_f32: NULL argument");
    const unsigned char *src = t->data;
    size_t n = (size_t)t->numel;
    switch (t->dtype) {
    case SWIN_ST_F32:
        memcpy(dst, src, n * 4);
        return SWIN_OK;
    case SWIN_ST_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            dst[i] = half_to_float(h);
        }
        return SWIN_OK;
    case SWIN_ST_BF16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            uint32_t bits = (uint32_t)h << 16;
            memcpy(&dst[i], &bits, 4);
        }
        return SWIN_OK;
    case SWIN_ST_I64:
        break;
    }
    return swin_fail(SWIN_ERR_TENSOR, "%s: tensor '%s' has dtype %s, expected a floating-point tensor",
                     swin_st_path(f), t->name, swin_st_dtype_str(t->dtype));
}
