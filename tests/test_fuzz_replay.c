/* test_fuzz_replay.c - the fuzz regression cases: every file under tests/data/fuzz/<target>/ is an
 * input the fuzzer once found crashing, leaking or slow (tools/fuzz.sh), replayed through the same
 * target code (tests/fuzz/targets.c) in the normal suite and under the sanitizers (CI runs both).
 * A file is named DESCRIPTION--STATUS: the target must return that status (SWIN_<STATUS>, e.g.
 * ERR_IMAGE or OK), leave a message when it fails, and finish within the time limit (1 s; 10 s
 * under AddressSanitizer). Every target must have at least one case.
 * Run: ctest -R test_fuzz_replay, or build-dir/tests/test_fuzz_replay SRC_DIR.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz/targets.h"
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define LIMIT_S 10.0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LIMIT_S 10.0
#endif
#endif
#ifndef LIMIT_S
#define LIMIT_S 1.0
#endif

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* the status named after "--" in the file name; -1 when there is none or it is unknown */
static int expected_status(const char *file) {
    const char *dash = strstr(file, "--");
    if (!dash) return -1;
    for (int s = 0; s < SWIN_STATUS_COUNT; s++) {
        const char *names[] = {
#define SWIN_STATUS_NAME(name, str) #name,
            SWIN_STATUS_MAP(SWIN_STATUS_NAME)
#undef SWIN_STATUS_NAME
        };
        if (!strcmp(dash + 2, names[s])) return s;
    }
    return -1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* replays one target's cases; returns how many there were */
static int replay(const char *src, const swin_fuzz_target *t) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/data/fuzz/%s", src, t->name);
    DIR *d = opendir(dir);
    if (!d) return 0;
    char *files[4096];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 4096;)
        if (e->d_name[0] != '.') files[n++] = strdup(e->d_name);
    closedir(d);
    qsort(files, (size_t)n, sizeof *files, cmp_str);
    for (int i = 0; i < n; i++) {
        char path[2048];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        int want = expected_status(files[i]);
        CHECK(want >= 0, "%s: name it DESCRIPTION--STATUS (e.g. --ERR_IMAGE)", path);
        unsigned char *data = tu_read_file(path, &len);
        CHECK(data != NULL, "%s: cannot read", path);
        if (!data || want < 0) { free(data); free(files[i]); continue; }
        double t0 = now_s();
        swin_status st = t->run(data, len);
        double s = now_s() - t0;
        const char *msg = swin_last_error();
        printf("%-20s %-48s %6zu bytes %8.1f ms  %s%s%s\n", t->name, files[i], len, s * 1e3,
               swin_status_str(st), st ? ": " : "", st ? msg : "");
        CHECK((int)st == want, "%s: status %s, expected %s", path, swin_status_str(st),
              swin_status_str((swin_status)want));
        CHECK(st == SWIN_OK || msg[0], "%s: failed without a message", path);
        CHECK(s <= LIMIT_S, "%s: took %.2f s (limit %.0f s)", path, s, LIMIT_S);
        free(data);
        free(files[i]);
    }
    return n;
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    int total = 0;
    for (int i = 0; i < swin_fuzz_target_count; i++) {
        int n = replay(src, &swin_fuzz_targets[i]);
        CHECK(n > 0, "target %s has no regression case under tests/data/fuzz/%s/", swin_fuzz_targets[i].name,
              swin_fuzz_targets[i].name);
        total += n;
    }
    printf("replayed %d cases of %d targets\n", total, swin_fuzz_target_count);
    swin_fuzz_cleanup();
    return tu_finish("test_fuzz_replay");
}
