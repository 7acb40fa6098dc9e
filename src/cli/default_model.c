/* default_model.c - where `swin` finds its embedded default model (weights/digits).
 *
 * Installed, the model lies at <bindir>/SWIN_REL_DATADIR/digits (../share/swin/digits): the
 * executable's directory comes from /proc/self/exe, so an installed tree works wherever it is
 * copied. Run from the build directory CMake built it in (SWIN_BUILD_DIR), the source checkout's
 * weights/digits (SWIN_SOURCE_DIR). Anywhere else the installed location is returned even when it
 * is missing, so that the error names where the model should be; the build tree is never used
 * by a copied or installed binary. `swin classify --help` prints the result.
 * Checked by tests/cli_install.sh. */
#define _DEFAULT_SOURCE   /* readlink, realpath */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* path, or its canonical form when it exists, into out[PATH_MAX] */
static const char *set_path(char *out, const char *path) {
    if (!realpath(path, out) && snprintf(out, PATH_MAX, "%s", path) >= PATH_MAX) out[PATH_MAX - 1] = '\0';
    return out;
}

const char *cli_default_model(void) {
    static char path[PATH_MAX];   /* the CLI is single-threaded where it asks */
    if (path[0]) return path;

    char exe_dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe_dir, sizeof exe_dir - 1);
    if (n <= 0) return set_path(path, SWIN_SOURCE_DIR "/weights/digits");   /* no procfs */
    exe_dir[n] = '\0';
    char *slash = strrchr(exe_dir, '/');
    if (slash) *slash = '\0';

    char installed[PATH_MAX];
    if (snprintf(installed, sizeof installed, "%s/%s/digits", exe_dir, SWIN_REL_DATADIR) >= (int)sizeof installed)
        return set_path(path, SWIN_SOURCE_DIR "/weights/digits");
    if (is_dir(installed)) return set_path(path, installed);

    char build_dir[PATH_MAX];   /* /proc/self/exe is canonical already */
    if (realpath(SWIN_BUILD_DIR, build_dir) && !strcmp(build_dir, exe_dir))
        return set_path(path, SWIN_SOURCE_DIR "/weights/digits");
    return set_path(path, installed);
}
