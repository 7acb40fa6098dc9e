/* paths.c - the image paths of `swin classify` (paths.h). Tested through tests/cli_classify.sh
 * (directories, --list, bad files) and tests/cli_mpi.sh (the paths sent to every rank). */
#define _POSIX_C_SOURCE 200809L /* strdup, opendir */
#include "paths.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "image.h"

#define MAX_DEPTH 64

int paths_add(path_list *l, const char *p) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        char **nv = realloc(l->v, (size_t)cap * sizeof *nv);
        if (!nv) return 1;
        l->v = nv;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(p))) return 1;
    l->n++;
    return 0;
}

void paths_free(path_list *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Add the images under dir, sorted by name, subdirectories in place; hidden entries skipped.
 * Returns 0, or 1 after printing a message (an unreadable directory). */
static int walk(const char *cmd, path_list *out, const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "swin %s: %s: cannot read directory (%s)\n", cmd, dir, strerror(errno)); return 1; }
    path_list names = {0};
    struct dirent *e;
    int bad = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && paths_add(&names, e->d_name)) bad = 1;
    closedir(d);
    if (names.n) qsort(names.v, (size_t)names.n, sizeof *names.v, cmp_str);
    size_t dl = strlen(dir);
    int slash = dl > 0 && dir[dl - 1] == '/';
    for (int i = 0; i < names.n && !bad; i++) {
        size_t len = dl + 1 + strlen(names.v[i]) + 1;
        char *p = malloc(len);
        if (!p) { bad = 1; break; }
        snprintf(p, len, "%s%s%s", dir, slash ? "" : "/", names.v[i]);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (depth < MAX_DEPTH) bad |= walk(cmd, out, p, depth + 1);
        } else if (swin_image_has_extension(p)) {
            bad |= paths_add(out, p);
        }
        free(p);
    }
    paths_free(&names);
    return bad;
}

/* Read paths from FILE ('-' for stdin), one per line; trailing \r and blank lines ignored. */
static int read_list(const char *cmd, path_list *out, const char *file) {
    FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
    if (!f) { fprintf(stderr, "swin %s: %s: cannot open list (%s)\n", cmd, file, strerror(errno)); return 1; }
    char line[8192];
    int bad = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n) bad = paths_add(out, line);
    }
    if (f != stdin) fclose(f);
    return bad;
}

int paths_collect(const char *cmd, const char *list, const char *const *inputs, int n_inputs, path_list *out,
                  int *failed) {
    *failed = 0;
    if (list && read_list(cmd, out, list)) return EXIT_USAGE;
    for (int i = 0; i < n_inputs; i++) {
        struct stat st;
        if (stat(inputs[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            int before = out->n;
            *failed |= walk(cmd, out, inputs[i], 0);
            if (out->n == before) {
                fprintf(stderr, "swin %s: %s: no images in this directory\n", cmd, inputs[i]);
                *failed = 1;
            }
        } else if (paths_add(out, inputs[i])) {
            *failed = 1;
        }
    }
    return 0;
}

char *paths_pack(const path_list *l, size_t *len) {
    size_t n = 0;
    for (int i = 0; i < l->n; i++) n += strlen(l->v[i]) + 1;
    char *buf = malloc(n ? n : 1), *p = buf;
    if (!buf) return NULL;
    for (int i = 0; i < l->n; i++) {
        size_t m = strlen(l->v[i]) + 1;
        memcpy(p, l->v[i], m);
        p += m;
    }
    *len = n;
    return buf;
}

int paths_unpack(const char *buf, size_t len, path_list *out) {
    for (size_t off = 0; off < len;) {
        const char *end = memchr(buf + off, '\0', len - off);
        if (!end || paths_add(out, buf + off)) return 1;
        off = (size_t)(end - buf) + 1;
    }
    return 0;
}
