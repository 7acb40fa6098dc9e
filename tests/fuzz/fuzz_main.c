/* fuzz_main.c - the libFuzzer entry of one target (targets.c), chosen at build time:
 * tests/fuzz/CMakeLists.txt builds fuzz_<name> with -DSWIN_FUZZ_TARGET="<name>". Run by
 * tools/fuzz.sh; by hand: build-fuzz/tests/fuzz/fuzz_jpeg -max_total_time=60 CORPUS_DIR SEED_DIR
 */
#include <stdio.h>
#include <stdlib.h>

#include "targets.h"

#ifndef SWIN_FUZZ_TARGET
#error "build with -DSWIN_FUZZ_TARGET=\"name\" (tests/fuzz/CMakeLists.txt)"
#endif

static const swin_fuzz_target *g_target;

static void cleanup(void) { swin_fuzz_cleanup(); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    g_target = swin_fuzz_find(SWIN_FUZZ_TARGET);
    if (!g_target) {
        fprintf(stderr, "fuzz: no target '%s' in tests/fuzz/targets.c\n", SWIN_FUZZ_TARGET);
        exit(2);
    }
    atexit(cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    g_target->run(data, size);
    return 0;
}
