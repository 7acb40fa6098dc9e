/* main.c - `swin` entry point: dispatches to subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: swin <command> [options]\n"
            "\n"
            "commands:\n"
            "  classify    classify images (default model: the bundled digits Swin)\n"
            "  verify      run a reference input and compare with reference logits\n"
            "  info        describe a model (and, with --device cuda, its memory plan)\n"
            "  preprocess  write the model's input tensor for images to a .safetensors file\n"
            "  bench       measure latency and throughput on the GPU\n"
            "  calibrate   write the FP8 scales file of a model (for --precision fp8)\n"
            "\n"
            "`swin <command> --help` describes each command's options; `swin --version` says what\n"
            "this build supports.\n");
}

#ifdef SWIN_HAVE_CUDA
#define HAVE_CUDA "on"
#else
#define HAVE_CUDA "off"
#endif
#ifdef SWIN_HAVE_NVJPEG
#define HAVE_NVJPEG "on"
#else
#define HAVE_NVJPEG "off"
#endif
#ifdef SWIN_HAVE_MPI
#define HAVE_MPI "on"
#else
#define HAVE_MPI "off"
#endif

static void version(void) {
    printf("swin " SWIN_VERSION "\nCUDA " HAVE_CUDA ", nvJPEG " HAVE_NVJPEG ", MPI " HAVE_MPI "\n");
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return EXIT_USAGE; }
    const char *c = argv[1];
    if (!strcmp(c, "-h") || !strcmp(c, "--help") || !strcmp(c, "help")) { usage(stdout); return 0; }
    if (!strcmp(c, "--version") || !strcmp(c, "version")) { version(); return 0; }
    if (!strcmp(c, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(c, "verify")) return cmd_verify(argc - 1, argv + 1);
    if (!strcmp(c, "classify")) return cmd_classify(argc - 1, argv + 1);
    if (!strcmp(c, "preprocess")) return cmd_preprocess(argc - 1, argv + 1);
    if (!strcmp(c, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(c, "calibrate")) return cmd_calibrate(argc - 1, argv + 1);
    fprintf(stderr, "swin: unknown command '%s' (try swin --help)\n", c);
    return EXIT_USAGE;
}
