/* sink.h - where `swin classify` puts each image's outcome, in input order: a result line on the
 * results stream (stdout or --out FILE) and, for an image that failed, "swin classify: <message>"
 * on stderr. Written through at once, or, on an MPI rank > 0, recorded in memory for rank 0,
 * which replays the records into its own sink in their place (sink.c).
 */
#ifndef SWIN_CLI_SINK_H
#define SWIN_CLI_SINK_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    const char *cmd;             /* "classify": the prefix of messages */
    FILE *out;                   /* the results stream; NULL: recording */
    void (*before_stderr)(void); /* called before a message (clears a progress line), may be NULL */
    char *line;                  /* the result line being built */
    size_t line_len, line_cap;
    char *rec;                   /* recording: records 'o' (line) or 'e' (message), length, bytes */
    size_t rec_len, rec_cap;
    int oom;                     /* out of memory: something was not recorded */
} cli_sink;

/* Append to the current result line (printf-style; the caller writes the '\n'). */
void sink_printf(cli_sink *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The current line to the results, then start a new one. */
void sink_end_line(cli_sink *s);
/* A message about one image, in its place. */
void sink_error(cli_sink *s, const char *msg);
/* Another rank's records into this sink; 0, or 1 when they are malformed. */
int sink_replay(cli_sink *s, const char *rec, size_t len);
void sink_free(cli_sink *s);

#endif
