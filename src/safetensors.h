/* safetensors.h - our own safetensors reader/writer (mmap, strict validation).
 *
 * Format: u64 little-endian header length N, N bytes of JSON
 *   {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
 * then the data block; offsets are relative to the data block.
 * The reader trusts nothing: header length against file size, bounded JSON parse, dtype
 * whitelist (F32 F16 BF16 I64 + others recognised only to be rejected clearly), rank <= 8,
 * offsets in range and non-overlapping, byte size == elements x dtype size.
 */
#ifndef SWIN_SAFETENSORS_H
#define SWIN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "swin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SWIN_ST_MAX_RANK 8

typedef enum { SWIN_ST_F32 = 0, SWIN_ST_F16, SWIN_ST_BF16, SWIN_ST_I64 } swin_st_dtype;

typedef struct {
    const char *name;            /* owned by the file handle */
    swin_st_dtype dtype;
    int rank;
    int64_t shape[SWIN_ST_MAX_RANK];
    int64_t numel;
    const void *data;            /* points into the mapping (reader) or caller memory (writer) */
    size_t nbytes;
} swin_st_tensor;

typedef struct swin_st swin_st;

swin_status swin_st_open(const char *path, swin_st **out);
void swin_st_close(swin_st *f);
const char *swin_st_path(const swin_st *f);
int swin_st_count(const swin_st *f);
const swin_st_tensor *swin_st_at(const swin_st *f, int i);
const swin_st_tensor *swin_st_find(const swin_st *f, const char *name);   /* NULL if absent */
/* dst[numel] <- tensor converted to fp32 (F32/F16/BF16; I64 rejected). */
swin_status swin_st_read_f32(const swin_st *f, const swin_st_tensor *t, float *dst);
/* "[3, 96, 4, 4]" into buf */
const char *swin_st_shape_str(const swin_st_tensor *t, char *buf, size_t size);
const char *swin_st_dtype_str(swin_st_dtype dt);

/* bytes per element: 4, 2, 2, 8; 0 for a value outside the enum */
size_t swin_st_dtype_size(swin_st_dtype dt);

/* ---- writer (safetensors_write.c). A regular file (or a new one) is written under a temporary
 * name beside it and renamed over path only when complete, so a failed or abandoned write leaves
 * whatever was there; anything else (/dev/null, a pipe) is written directly. */

/* Write n tensors (name, dtype, rank, shape, data set by the caller) to path. */
swin_status swin_st_write(const char *path, const swin_st_tensor *tensors, int n);

/* The same, streamed: begin writes the header of n tensors (name, dtype, rank, shape; data
 * unused), then the data of all tensors in order, in pieces of any size, then end checks that
 * exactly the declared bytes came, closes and renames. abort (any time, NULL allowed) leaves
 * path as it was. end and abort free the writer. */
typedef struct swin_st_writer swin_st_writer;
swin_status swin_st_write_begin(const char *path, const swin_st_tensor *tensors, int n, swin_st_writer **out);
swin_status swin_st_write_data(swin_st_writer *w, const void *data, size_t bytes);
swin_status swin_st_write_end(swin_st_writer *w);
void swin_st_write_abort(swin_st_writer *w);

#ifdef __cplusplus
}
#endif
#endif
