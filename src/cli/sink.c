/* sink.c - result lines and messages of `swin classify`, written through or recorded (sink.h).
 * A record: one byte 'o' (a result line, '\n' included) or 'e' (a message), 4 bytes of length in
 * host order (the ranks of a job run one build), the bytes. Test: tests/cli_mpi.sh (rank 0
 * replays the other ranks' records; the output must equal one process's byte for byte).
 */
#include "sink.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* room for `more` bytes (and a NUL) at the end of *buf; 0 on success */
static int reserve(char **buf, size_t *cap, size_t len, size_t more) {
    if (len + more + 1 <= *cap) return 0;
    size_t cap2 = *cap ? *cap : 256;
    while (cap2 < len + more + 1) cap2 *= 2;
    char *nb = realloc(*buf, cap2);
    if (!nb) return 1;
    *buf = nb;
    *cap = cap2;
    return 0;
}

static void record(cli_sink *s, char tag, const char *bytes, size_t len) {
    if (len > UINT32_MAX || reserve(&s->rec, &s->rec_cap, s->rec_len, 5 + len)) {
        s->oom = 1;
        return;
    }
    uint32_t n = (uint32_t)len;
    s->rec[s->rec_len] = tag;
    memcpy(s->rec + s->rec_len + 1, &n, 4);
    memcpy(s->rec + s->rec_len + 5, bytes, len);
    s->rec_len += 5 + len;
}

void sink_printf(cli_sink *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(&s->line, &s->line_cap, s->line_len, (size_t)n)) {
        s->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(s->line + s->line_len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->line_len += (size_t)n;
}

static void put_line(cli_sink *s, const char *bytes, size_t len) {
    if (s->out) fwrite(bytes, 1, len, s->out);
    else record(s, 'o', bytes, len);
}

static void put_error(cli_sink *s, const char *msg, size_t len) {
    if (!s->out) {
        record(s, 'e', msg, len);
        return;
    }
    if (s->before_stderr) s->before_stderr();
    fprintf(stderr, "swin %s: %.*s\n", s->cmd, (int)len, msg);
}

void sink_end_line(cli_sink *s) {
    if (s->line_len) put_line(s, s->line, s->line_len);
    s->line_len = 0;
}

void sink_error(cli_sink *s, const char *msg) { put_error(s, msg, strlen(msg)); }

int sink_replay(cli_sink *s, const char *rec, size_t len) {
    size_t off = 0;
    while (off < len) {
        uint32_t n;
        if (len - off < 5) return 1;
        memcpy(&n, rec + off + 1, 4);
        if (len - off - 5 < n || (rec[off] != 'o' && rec[off] != 'e')) return 1;
        if (rec[off] == 'o') put_line(s, rec + off + 5, n);
        else put_error(s, rec + off + 5, n);
        off += 5 + (size_t)n;
    }
    return 0;
}

void sink_free(cli_sink *s) {
    free(s->line);
    free(s->rec);
    s->line = s->rec = NULL;
    s->line_len = s->line_cap = s->rec_len = s->rec_cap = 0;
}
