/* fp8_session.h - what a session needs for SWIN_FP8 and calibration (src/fp8_session.c): the CPU
 * emulation's quantised weights, the default calibration's random images, the amax check.
 * Internal; the arithmetic is src/fp8.h's. */
#ifndef SWIN_FP8_SESSION_H
#define SWIN_FP8_SESSION_H

#include "fp8.h"
#include "layers.h"

/* The default calibration (no scales file): this many random images, margin 2. The margin
 * matters little: calibrated on their own inputs, the reference fixtures' logit errors with
 * margins 1, 2 and 4 differ by at most 0.013 (the CPU emulation, recorded in the README on
 * 2026-11-24; no command recorded); --margin 0.01 clips and verify fails. */
#define SWIN_FP8_RANDOM_IMAGES 8
#define SWIN_FP8_DEFAULT_MARGIN 2.0f

/* Images first .. first + n - 1 of the default calibration's fixed set, into out [n, 3, H, W]:
 * uniformly random 8-bit values per pixel and channel (a fixed seed per image), normalised with
 * the model's mean and std as timm's ToTensor + Normalize would. */
void swin_fp8_random_images(const swin_config *c, int first, int n, float *out);

/* SWIN_ERR_VALUE naming `where` and the first site (and qkv output channel) whose amax is not
 * finite, over swin_fp8_scale_count(m) entries; else SWIN_OK. */
swin_status swin_fp8_check_amax(const swin_model *m, const float *amax, const char *where);

/* The scales of an SWIN_FP8 session or engine, scale[swin_fp8_scale_count(m)]: read from
 * o->fp8_scales, or the default calibration: the random images in batches of at most o->max_batch
 * through record, a forward that leaves the running max |input| of every site and max |output| of
 * every qkv channel in amax[swin_fp8_scale_count(m)], then margin 2 and a warning through o->warn
 * (stderr when NULL) that real images (`swin calibrate`) do better. */
typedef swin_status (*swin_fp8_record_fn)(void *ctx, const float *x, int n, float *amax);
swin_status swin_fp8_input_scales(const swin_model *m, const swin_session_options *o, swin_fp8_record_fn record,
                                  void *ctx, float *scale);

#ifdef SWIN_HAVE_CUDA
#include "engine.h"
/* An SWIN_FP8 engine's scales (swin_fp8_input_scales through swin_engine_calibrate_forward),
 * then swin_engine_set_fp8_scales: what a session does; for callers holding an engine (swin bench). */
swin_status swin_fp8_engine_setup(swin_engine *e, const swin_model *m, const swin_session_options *o);
#endif

/* The CPU emulation: every site's weights quantised (swin_fp8_quantize_weights) and decoded to
 * float, with scale[i] as its input scale and, for a qkv site whose channel scales in scale[] are
 * > 0 in a block where fp8.h stores q, k, v in E4M3 (swin_fp8_qkv_e4m3_block), those scales as
 * used (swin_fp8_qkv_scales), and the xq scratch for max_batch, in one allocation
 * (*bytes) that swin_fp8_emulation_free releases. scale has swin_fp8_scale_count(m) entries; the
 * caller keeps it. */
swin_status swin_fp8_emulation_create(const swin_model *m, int max_batch, const float *scale, swin_fp8_forward *out,
                                      size_t *bytes);
void swin_fp8_emulation_free(swin_fp8_forward *f);

#endif
