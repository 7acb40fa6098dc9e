/* test_gpu_pipeline.c - the decode pipeline on a CUDA session (src/image/pipeline.c) and the nvJPEG
 * decoder (src/image/nvjpeg_decode.c), with the digits model and the JPEG / PNG fixtures:
 *   - GPU preprocessing gives the same logits as CPU preprocessing on the same session, bit for
 *     bit, with bad files reported in their place (both paths); libjpeg decoding only the part
 *     that preprocessing reads (the default) gives what whole images give (SWIN_DECODE_PART=0);
 *   - nvJPEG (when built): its pixels are close to libjpeg's (mean |diff| at most 1.5 levels over
 *     all fixtures and 3 for any file of 1024+ pixels: a wrong pitch, a missing upsampling or a
 *     colour-conversion mix-up is far above that; nvJPEG is not exact by design), every
 *     file is delivered (files nvJPEG cannot decode go to the CPU decoder), truncated files are
 *     refused, PNGs (decoded on the CPU in this mode too) give the same logits as the default;
 *   - nvJPEG decoder threads: batches of 4 with 3 decoders (pipeline_nvjpeg.c) give the results
 *     of 1 decoder on the calling thread, bit for bit, bad files in their places;
 *   - the exact GPU decoder (SWIN_DECODER_GPU, src/image/jpeg_gpu.c): every JPEG offered to the
 *     GPU on the calling thread, and half of them with 3 decoder threads, give the logits of the
 *     CPU decoder bit for bit, bad files reported with the same messages.
 * Run: build/tests/test_gpu_pipeline SOURCE_DIR (exits 77 without a GPU).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "nvjpeg_decode.h"
#include "pipeline_collect.h"
#include "testutil.h"

static swin_status run_with(swin_session *s, const swin_preprocess_params *pp, char **paths, int n,
                            swin_preprocess_device where, swin_decoder dec, int batch, int nvjpeg_decoders, int gpu_share,
                            pc_collect *c, swin_pipeline_stats *st) {
    pc_reset(c, swin_model_config(swin_session_get_model(s))->num_classes);
    swin_pipeline_options po = swin_pipeline_options_default();
    po.batch = batch;
    po.threads = 3;
    po.where = where;
    po.decoder = dec;
    po.nvjpeg_decoders = nvjpeg_decoders;
    po.gpu_share = gpu_share;
    return swin_pipeline_run(s, pp, (const char *const *)paths, n, &po, pc_on_result, c, st);
}

static swin_status run(swin_session *s, const swin_preprocess_params *pp, char **paths, int n, swin_preprocess_device where,
                       swin_decoder dec, int batch, pc_collect *c) {
    swin_pipeline_stats st;
    return run_with(s, pp, paths, n, where, dec, batch, 0, 0, c, &st);
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("test_gpu_pipeline: skipped, no usable GPU\n");
        return TU_SKIP;
    }
    char dir[1024], tmp[512];
    swin_model *m = pc_load_digits(src);
    if (!m) return 1;
    swin_preprocess_params pp = swin_preprocess_params_from_config(swin_model_config(m));
    swin_session_options so = swin_session_options_default();
    so.device = SWIN_DEVICE_CUDA;
    so.precision = SWIN_FP32;
    so.max_batch = 16;
    swin_session *s = NULL;
    if (swin_session_create(m, &so, &s) != SWIN_OK) { printf("session: %s\n", swin_last_error()); return 1; }
    if (tu_tmpdir(tmp, sizeof tmp, "swin_gpu_pipeline")) return 1;

    /* the files: JPEG fixtures, preprocessing fixtures (PNG, GIF, ...), and bad ones */
    char *paths[PC_MAX_FILES];
    int n = 0, first_bad;
    snprintf(dir, sizeof dir, "%s/tests/data/jpeg", src);
    n = pc_list_dir(dir, paths, n, PC_MAX_FILES);
    snprintf(dir, sizeof dir, "%s/tests/data/preprocess", src);
    n = pc_list_dir(dir, paths, n, PC_MAX_FILES);
    first_bad = n;
    n = pc_add_bad(paths, n, tmp, paths[0]);   /* two truncated JPEGs and a missing file */
    CHECK(first_bad >= 20, "%d fixture images found", first_bad);

    /* GPU vs CPU preprocessing, default decoder: identical */
    static pc_collect cpu, gpu, nv;
    CHECK(run(s, &pp, paths, n, SWIN_PRE_DEVICE_CPU, SWIN_DECODER_CPU, 16, &cpu) == SWIN_OK, "cpu run: %s", swin_last_error());
    CHECK(run(s, &pp, paths, n, SWIN_PRE_DEVICE_GPU, SWIN_DECODER_CPU, 16, &gpu) == SWIN_OK, "gpu run: %s", swin_last_error());
    int diff = 0, bad_ok = 1;
    for (int i = 0; i < n; i++) {
        int want = i < first_bad ? 1 : 2;
        if (cpu.got[i] != want || gpu.got[i] != want) { bad_ok = 0; printf("  %s: cpu %d gpu %d\n", paths[i], cpu.got[i], gpu.got[i]); }
        if (want == 1 && memcmp(cpu.logits + (size_t)i * cpu.nc, gpu.logits + (size_t)i * gpu.nc, (size_t)cpu.nc * sizeof(float)))
            diff++;
    }
    CHECK(cpu.calls == n && gpu.calls == n && cpu.in_order && gpu.in_order, "every file delivered once, in order");
    CHECK(bad_ok, "good files classified, bad files reported (both preprocessing devices)");
    CHECK(diff == 0, "GPU preprocessing: %d of %d files with logits different from CPU preprocessing", diff, first_bad);

    /* libjpeg decoding only what preprocessing reads (the default, above) vs whole images
     * (SWIN_DECODE_PART=0): identical, on both preprocessing devices */
    for (int dev = 0; dev < 2; dev++) {
        static pc_collect whole;
        const pc_collect *part = dev ? &gpu : &cpu;
        setenv("SWIN_DECODE_PART", "0", 1);
        CHECK(run(s, &pp, paths, n, dev ? SWIN_PRE_DEVICE_GPU : SWIN_PRE_DEVICE_CPU, SWIN_DECODER_CPU, 16, &whole) ==
                  SWIN_OK, "whole-image run: %s", swin_last_error());
        unsetenv("SWIN_DECODE_PART");
        int wdiff = 0;
        for (int i = 0; i < n; i++)
            wdiff += whole.got[i] != part->got[i] ||
                     (whole.got[i] == 1 && memcmp(whole.logits + (size_t)i * whole.nc, part->logits + (size_t)i * part->nc,
                                                  (size_t)whole.nc * sizeof(float))) ||
                     (whole.got[i] == 2 && strcmp(whole.err[i], part->err[i]));
        CHECK(whole.calls == n && wdiff == 0, "%s preprocessing: %d files differ between whole and part decoding",
              dev ? "GPU" : "CPU", wdiff);
    }

    /* the exact GPU decoder: all JPEGs offered on the calling thread, half with 3 decoder threads */
    for (int v = 0; v < 2; v++) {
        static pc_collect ex;
        swin_pipeline_stats est;
        const int decoders = v ? 3 : 1, share = v ? 50 : 100;
        CHECK(run_with(s, &pp, paths, n, SWIN_PRE_DEVICE_GPU, SWIN_DECODER_GPU, 16, decoders, share, &ex, &est) ==
                  SWIN_OK, "gpu decoder run: %s", swin_last_error());
        int ex_diff = 0;
        for (int i = 0; i < n; i++) {
            int same = ex.got[i] == gpu.got[i] &&
                       (ex.got[i] != 1 || !memcmp(ex.logits + (size_t)i * ex.nc, gpu.logits + (size_t)i * gpu.nc,
                                                  (size_t)ex.nc * sizeof(float))) &&
                       (ex.got[i] != 2 || !strcmp(ex.err[i], gpu.err[i]));
            if (!same) {
                ex_diff++;
                printf("  gpu decoder %s: got %d (%s), cpu decoder %d (%s)\n", paths[i], ex.got[i], ex.err[i], gpu.got[i],
                       gpu.err[i]);
            }
        }
        printf("gpu decoder (%d decoders, %d%% offered): %d JPEGs decoded on the GPU, %d left to libjpeg, %d decoders "
               "used\n", decoders, share, est.gpu_jpeg_images, est.gpu_jpeg_refused, est.nvjpeg_decoders);
        CHECK(ex.calls == n && ex.in_order, "gpu decoder: every file delivered once, in order");
        CHECK(ex_diff == 0, "gpu decoder: %d files differ from the cpu decoder", ex_diff);
        CHECK(est.gpu_jpeg_images >= (v ? 5 : 12) && est.gpu_jpeg_refused >= (v ? 0 : 1),
              "gpu decoder: %d decoded on the GPU, %d refused (the file cut short before its end-of-image marker "
              "goes back to libjpeg)", est.gpu_jpeg_images, est.gpu_jpeg_refused);
        CHECK(est.nvjpeg_decoders == decoders, "gpu decoder: %d decoders used (want %d)", est.nvjpeg_decoders, decoders);
    }

    /* nvJPEG */
    swin_nvjpeg *dec = NULL;
    swin_status cs = swin_nvjpeg_create(0, &dec);
    if (cs == SWIN_ERR_UNSUPPORTED) {
        printf("nvJPEG not built: %s (its checks not run)\n", swin_last_error());
    } else if (CHECK(cs == SWIN_OK, "nvjpeg create: %s", swin_last_error())) {
        printf("nvJPEG backend: %s\n", swin_nvjpeg_backend(dec));
        swin_nvjpeg_buffer px = {0};
        int far = 0, njpeg = 0, outside = 0, guarded = 0;
        double all_sum = 0, all_n = 0;
        /* a buffer larger than any fixture batch needs (16 copies of the largest hardware image),
         * poisoned before each decode: what nvJPEG writes past the regions the decoder laid out
         * (swin_nvjpeg_stats.last_bytes, each image's pixels back to back) would show, whatever
         * the order of the writes */
        CHECK(swin_nvjpeg_buffer_reserve(&px, 0, (size_t)4 << 20) == SWIN_OK, "nvjpeg buffer: %s", swin_last_error());
        uint8_t *poisoned = malloc(px.cap);
        uint8_t *const px_dev = px.dev;
        for (int i = 0; i < first_bad; i++) {
            const char *p = paths[i], *dot = strrchr(p, '.');
            if (!dot || strcmp(dot, ".jpg")) continue;
            uint8_t *data = NULL;
            size_t len = 0;
            swin_image ref;
            if (swin_image_read_file(p, &data, &len) != SWIN_OK || swin_image_load(p, &ref) != SWIN_OK) { free(data); continue; }
            swin_nvjpeg_image o;
            const uint8_t *d1[1] = {data};
            size_t l1[1] = {len};
            const char *n1[1] = {p};
            const int poison = poisoned && px.dev == px_dev && cudaMemset(px.dev, 0xA5, px.cap) == cudaSuccess;
            if (swin_nvjpeg_decode_into(dec, &px, d1, l1, n1, 1, &o) == SWIN_OK && o.ok) {
                swin_nvjpeg_stats ns;
                swin_nvjpeg_get_stats(dec, &ns);
                size_t last = 0;   /* one past the last byte written (poison left unchanged) */
                if (poison && px.dev == px_dev && cudaMemcpy(poisoned, px.dev, px.cap, cudaMemcpyDeviceToHost) == cudaSuccess) {
                    for (last = px.cap; last > 0 && poisoned[last - 1] == 0xA5; last--) {}
                    guarded++;
                    if (last > ns.last_bytes) {
                        outside++;
                        printf("  nvjpeg %s: bytes written up to %zu, past the %zu laid out\n", p, last, ns.last_bytes);
                    }
                }
                size_t bytes = (size_t)o.width * o.height * 3;
                uint8_t *h = malloc(bytes);
                double sum = 0;
                int maxd = 0;
                CHECK(o.width == ref.width && o.height == ref.height, "%s: %dx%d vs %dx%d", p, o.width, o.height, ref.width,
                      ref.height);
                if (h && o.width == ref.width && o.height == ref.height &&
                    cudaMemcpy(h, o.rgb, bytes, cudaMemcpyDeviceToHost) == cudaSuccess) {
                    for (size_t k = 0; k < bytes; k++) {
                        int dd = abs((int)h[k] - (int)ref.rgb[k]);
                        sum += dd;
                        if (dd > maxd) maxd = dd;
                    }
                    printf("  nvjpeg %-60s mean |diff| %.3f, max %d; written to byte %zu of %zu\n", p, sum / bytes, maxd,
                           last, ns.last_bytes);
                    if (bytes >= 3 * 1024 && sum / bytes > 3.0) far++;   /* tiny files: a pixel or two decide */
                    all_sum += sum;
                    all_n += bytes;
                    njpeg++;
                }
                free(h);
            } else {
                printf("  nvjpeg %-60s not decoded: %s\n", p, o.err);
            }
            swin_image_free(&ref);
            free(data);
        }
        CHECK(njpeg >= 10, "nvJPEG decoded %d fixture JPEGs", njpeg);
        CHECK(guarded == njpeg, "nvjpeg: %d of %d decodes checked in the poisoned buffer (%zu bytes, %s)", guarded, njpeg,
              px.cap, px.dev == px_dev ? "kept" : "grown");
        CHECK(outside == 0, "nvjpeg: %d JPEGs written past the buffer's regions", outside);
        free(poisoned);
        CHECK(far == 0, "%d JPEGs of >= 1024 pixels decoded by nvJPEG with mean |diff| > 3 levels from libjpeg", far);
        CHECK(all_n > 0 && all_sum / all_n <= 1.5, "nvJPEG vs libjpeg over all fixtures: mean |diff| %.3f levels (<= 1.5)",
              all_n > 0 ? all_sum / all_n : -1.0);
        CHECK(run(s, &pp, paths, n, SWIN_PRE_DEVICE_GPU, SWIN_DECODER_NVJPEG, 16, &nv) == SWIN_OK, "nvjpeg run: %s",
              swin_last_error());
        int nv_bad = 0, png_diff = 0;
        for (int i = 0; i < n; i++) {
            int want = i < first_bad ? 1 : 2;
            if (strstr(paths[i], "cut_eoi.jpg")) continue;   /* pc_add_bad: nvJPEG decodes it */
            if (nv.got[i] != want) { nv_bad++; printf("  nvjpeg mode %s: got %d (%s)\n", paths[i], nv.got[i], nv.err[i]); }
            const char *dot = strrchr(paths[i], '.');
            if (want == 1 && dot && strcmp(dot, ".jpg") &&
                memcmp(nv.logits + (size_t)i * nv.nc, gpu.logits + (size_t)i * nv.nc, (size_t)nv.nc * sizeof(float)))
                png_diff++;
        }
        CHECK(nv.calls == n && nv.in_order, "nvjpeg mode: every file delivered once, in order");
        CHECK(nv_bad == 0, "nvjpeg mode: %d files not classified / not refused as expected", nv_bad);
        CHECK(png_diff == 0, "nvjpeg mode: %d non-JPEG files differ from the default mode", png_diff);
        CHECK(strstr(nv.err[first_bad], "cut.jpg") != NULL, "nvjpeg mode: truncated file named: '%s'", nv.err[first_bad]);

        /* decoder threads: 3 at once against 1 on the calling thread, batches of 4 */
        static pc_collect one, three;
        swin_pipeline_stats st1, st3;
        CHECK(run_with(s, &pp, paths, n, SWIN_PRE_DEVICE_GPU, SWIN_DECODER_NVJPEG, 4, 1, 0, &one, &st1) == SWIN_OK,
              "nvjpeg, 1 decoder: %s", swin_last_error());
        CHECK(run_with(s, &pp, paths, n, SWIN_PRE_DEVICE_GPU, SWIN_DECODER_NVJPEG, 4, 3, 0, &three, &st3) == SWIN_OK,
              "nvjpeg, 3 decoders: %s", swin_last_error());
        int mism = 0;
        for (int i = 0; i < n; i++) {
            if (strstr(paths[i], "cut_eoi.jpg")) continue;   /* what nvJPEG makes of it is nvJPEG's */
            if (one.got[i] != three.got[i] || (one.got[i] == 2 && strcmp(one.err[i], three.err[i])) ||
                (one.got[i] == 1 && memcmp(one.logits + (size_t)i * one.nc, three.logits + (size_t)i * one.nc,
                                           (size_t)one.nc * sizeof(float)))) {
                mism++;
                float dmax = 0;   /* for the message: how far apart the logits are */
                for (int c = 0; one.got[i] == 1 && three.got[i] == 1 && c < one.nc; c++) {
                    const float d = fabsf(one.logits[(size_t)i * one.nc + c] - three.logits[(size_t)i * one.nc + c]);
                    dmax = d > dmax ? d : dmax;
                }
                printf("  %s: 1 decoder %d (%s), 3 decoders %d (%s), logits up to %.3g apart\n", paths[i], one.got[i],
                       one.err[i], three.got[i], three.err[i], dmax);
            }
        }
        printf("nvJPEG decoders: %d and %d; batched set-ups %d and %d, padding images %d and %d, JPEGs left to libjpeg "
               "%d and %d\n", st1.nvjpeg_decoders, st3.nvjpeg_decoders, st1.nvjpeg_hw_setups, st3.nvjpeg_hw_setups,
               st1.nvjpeg_hw_padding, st3.nvjpeg_hw_padding, st1.cpu_fallback, st3.cpu_fallback);
        CHECK(one.calls == n && three.calls == n && one.in_order && three.in_order,
              "nvjpeg decoder threads: every file delivered once, in order");
        CHECK(st1.nvjpeg_decoders == 1 && st3.nvjpeg_decoders == 3, "nvjpeg decoders used: %d and %d (want 1 and 3)",
              st1.nvjpeg_decoders, st3.nvjpeg_decoders);
        CHECK(mism == 0, "nvjpeg: %d files differ between 1 and 3 decoders", mism);
        swin_nvjpeg_buffer_free(&px);
        swin_nvjpeg_free(dec);
    }
    for (int i = 0; i < n; i++) free(paths[i]);
    swin_session_free(s);
    swin_model_free(m);
    tu_rmtree(tmp);
    return tu_finish("test_gpu_pipeline");
}
