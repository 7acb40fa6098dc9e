/* targets.h - the fuzz targets: one function per input surface of libswin, shared by the libFuzzer
 * executables (fuzz_main.c, built with -DSWIN_FUZZ=ON and clang) and by the regression replay that
 * runs in the normal test suite (tests/test_fuzz_replay.c), so that a case found by the fuzzer is
 * replayed through the very same code.
 *
 *   const swin_fuzz_target *t = swin_fuzz_find("jpeg");
 *   swin_status st = t->run(data, size);    // never crashes, leaks or takes long: that is the test
 *   swin_fuzz_cleanup();                    // temporary files and the reference target's model
 *
 * Targets that need files (safetensors, preprocessor_config, reference) write the input into a
 * private temporary directory, made on first use. Not thread-safe (one fuzzer, one thread).
 */
#ifndef SWIN_FUZZ_TARGETS_H
#define SWIN_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

#include "swin.h"

typedef struct {
    const char *name;      /* fuzz_<name> executable, tests/data/fuzz/<name>/ regressions */
    swin_status (*run)(const uint8_t *data, size_t size);
    const char *what;      /* one line: the code it reaches */
} swin_fuzz_target;

extern const swin_fuzz_target swin_fuzz_targets[];
extern const int swin_fuzz_target_count;
const swin_fuzz_target *swin_fuzz_find(const char *name);   /* NULL when unknown */
void swin_fuzz_cleanup(void);

/* The tiny model the safetensors and reference targets are built around (V1: version 1, V2: 2):
 * 8x8 pixels, patch 2, embed 8, depths [1, 1], heads [1, 2], window 2, 3 classes; its config.json
 * in timm's layout (tests/fuzz/make_seeds.c writes checkpoints and references of it). */
swin_config swin_fuzz_tiny_config(int version);
const char *swin_fuzz_tiny_config_json(int version);

#endif
