/* paths.h - the image paths `swin classify` works through: a --list file, files and directories
 * (walked recursively in sorted order), and their bytes for sending to the ranks of an MPI job. */
#ifndef SWIN_CLI_PATHS_H
#define SWIN_CLI_PATHS_H

#include <stddef.h>

typedef struct {
    char **v;
    int n, cap;
} path_list;

/* 0, or 1 when out of memory */
int paths_add(path_list *l, const char *p);
void paths_free(path_list *l);
/* The paths of the --list file `list` ('-': stdin; one per line, trailing \r and blank lines
 * ignored), or of the inputs: files as given, directories walked. Returns 0 or EXIT_USAGE (the
 * list cannot be read, after a message); *failed = 1 when a directory could not be read or held
 * no image (after a message). A path that does not exist is kept: the decoder reports it in its
 * place. */
int paths_collect(const char *cmd, const char *list, const char *const *inputs, int n_inputs, path_list *out,
                  int *failed);
/* The paths as one buffer, each ended by a NUL (malloc'ed), and back; NULL / 1 when out of memory. */
char *paths_pack(const path_list *l, size_t *len);
int paths_unpack(const char *buf, size_t len, path_list *out);

#endif
