/* safetensors_write.c - the safetensors writer: whole (swin_st_write) or streamed
 * (swin_st_write_begin / _data / _end), so `swin preprocess` never holds N images' tensors.
 *
 * A regular file is written as PATH.tmp-PID-K beside it and renamed over PATH when complete:
 * a run that fails half way (a bad image, a full disk) leaves the old file, or none. */
#define _POSIX_C_SOURCE 200809L
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

struct swin_st_writer {
    FILE *fp;
    char *path;    /* the destination */
    char *tmp;     /* the temporary name, NULL when writing path directly */
    size_t want;   /* data bytes the header declares */
    size_t got;
};

/* the JSON header of n tensors (data needed when need_data), its data size in *bytes_out */
static swin_status header_json(const char *path, const swin_st_tensor *ts, int n, int need_data, char **json_out,
                               size_t *bytes_out) {
    if (!path || (n > 0 && !ts) || n < 0) return swin_fail(SWIN_ERR_ARGUMENT, "swin_st_write: bad arguments");
    cJSON *root = cJSON_CreateObject();
    if (!root) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        const swin_st_tensor *t = &ts[i];
        size_t numel = 1, bytes;
        if (!t->name || t->rank < 0 || t->rank > SWIN_ST_MAX_RANK || swin_st_dtype_size(t->dtype) == 0) {
            cJSON_Delete(root);
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: tensor %d has no name, a bad rank or a bad dtype", path, i);
        }
        int bad = 0;
        for (int d = 0; d < t->rank; d++) bad |= t->shape[d] < 0 || swin_mul_size(numel, (size_t)t->shape[d], &numel);
        if (bad || swin_mul_size(numel, swin_st_dtype_size(t->dtype), &bytes) || (need_data && bytes && !t->data) ||
            off + bytes < off) {
            cJSON_Delete(root);
            return swin_fail(SWIN_ERR_ARGUMENT, "%s: tensor '%s' has a bad shape or no data", path, t->name);
        }
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(root, t->name, e);
        cJSON_AddStringToObject(e, "dtype", swin_st_dtype_str(t->dtype));
        cJSON *sh = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; d < t->rank; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->shape[d]));
        cJSON *of = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)(off + bytes)));
        off += bytes;
    }
    *json_out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!*json_out) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path);
    *bytes_out = off;
    return SWIN_OK;
}

/* open path, or a temporary name beside it when path is a regular file or does not exist */
static swin_status open_dest(swin_st_writer *w, const char *path) {
    struct stat sb;
    int direct = stat(path, &sb) == 0 && !S_ISREG(sb.st_mode);
    if (!(w->path = strdup(path))) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path);
    if (direct) {
        if (!(w->fp = fopen(path, "wb"))) return swin_fail(SWIN_ERR_IO, "%s: cannot create (%s)", path, strerror(errno));
        return SWIN_OK;
    }
    size_t len = strlen(path) + 48;
    if (!(w->tmp = malloc(len))) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path);
    for (int k = 0; k < 100; k++) {
        snprintf(w->tmp, len, "%s.tmp-%ld-%d", path, (long)getpid(), k);
        int fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) break;
        if (!(w->fp = fdopen(fd, "wb"))) {
            close(fd);
            unlink(w->tmp);
            break;
        }
        return SWIN_OK;
    }
    int e = errno;
    free(w->tmp);
    w->tmp = NULL;
    return swin_fail(SWIN_ERR_IO, "%s: cannot create (%s)", path, strerror(e));
}

void swin_st_write_abort(swin_st_writer *w) {
    if (!w) return;
    if (w->fp) fclose(w->fp);
    if (w->tmp) unlink(w->tmp);
    free(w->tmp);
    free(w->path);
    free(w);
}

swin_status swin_st_write_begin(const char *path, const swin_st_tensor *ts, int n, swin_st_writer **out) {
    if (!out) return swin_fail(SWIN_ERR_ARGUMENT, "swin_st_write_begin: NULL writer");
    *out = NULL;
    char *json = NULL;
    size_t bytes = 0;
    SWIN_TRY(header_json(path, ts, n, 0, &json, &bytes));
    swin_st_writer *w = calloc(1, sizeof *w);
    if (!w) {
        free(json);
        return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory", path);
    }
    w->want = bytes;
    swin_status st = open_dest(w, path);
    if (st != SWIN_OK) {
        free(json);
        swin_st_write_abort(w);
        return st;
    }
    size_t hl = strlen(json), padded = (hl + 7) & ~(size_t)7; /* data block 8-byte aligned */
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    int ok = fwrite(len8, 1, 8, w->fp) == 8 && fwrite(json, 1, hl, w->fp) == hl;
    for (size_t i = hl; ok && i < padded; i++) ok = fputc(' ', w->fp) != EOF;
    free(json);
    if (!ok) {
        int e = errno;
        swin_st_write_abort(w);
        return swin_fail(SWIN_ERR_IO, "%s: write failed (%s)", path, strerror(e));
    }
    *out = w;
    return SWIN_OK;
}

swin_status swin_st_write_data(swin_st_writer *w, const void *data, size_t bytes) {
    if (!w || (bytes && !data)) return swin_fail(SWIN_ERR_ARGUMENT, "swin_st_write_data: NULL argument");
    if (bytes > w->want - w->got)
        return swin_fail(SWIN_ERR_ARGUMENT, "%s: %zu more data bytes than the header declares", w->path,
                         bytes - (w->want - w->got));
    if (bytes && fwrite(data, 1, bytes, w->fp) != bytes)
        return swin_fail(SWIN_ERR_IO, "%s: write failed (%s)", w->path, strerror(errno));
    w->got += bytes;
    return SWIN_OK;
}

swin_status swin_st_write_end(swin_st_writer *w) {
    if (!w) return swin_fail(SWIN_ERR_ARGUMENT, "swin_st_write_end: NULL writer");
    swin_status st = SWIN_OK;
    if (w->got != w->want) {
        st = swin_fail(SWIN_ERR_ARGUMENT, "%s: %zu data bytes written, the header declares %zu", w->path, w->got,
                       w->want);
    } else {
        int ok = fclose(w->fp) == 0;
        w->fp = NULL;
        if (!ok) st = swin_fail(SWIN_ERR_IO, "%s: write failed (%s)", w->path, strerror(errno));
        else if (w->tmp && rename(w->tmp, w->path) != 0)
            st = swin_fail(SWIN_ERR_IO, "%s: cannot replace (%s)", w->path, strerror(errno));
        else {
            free(w->tmp);
            w->tmp = NULL; /* renamed: nothing for abort to remove */
        }
    }
    swin_st_write_abort(w);
    return st;
}

swin_status swin_st_write(const char *path, const swin_st_tensor *ts, int n) {
    char *json = NULL;
    size_t bytes = 0;
    SWIN_TRY(header_json(path, ts, n, 1, &json, &bytes)); /* every tensor has its data */
    free(json);
    swin_st_writer *w;
    SWIN_TRY(swin_st_write_begin(path, ts, n, &w));
    for (int i = 0; i < n; i++) {
        size_t numel = 1;
        for (int d = 0; d < ts[i].rank; d++) numel *= (size_t)ts[i].shape[d];
        swin_status st = swin_st_write_data(w, ts[i].data, numel * swin_st_dtype_size(ts[i].dtype));
        if (st != SWIN_OK) {
            swin_st_write_abort(w);
            return st;
        }
    }
    return swin_st_write_end(w);
}
