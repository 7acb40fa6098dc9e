/* preprocess.h - image to normalised model input, as timm or Hugging Face would do it.
 *
 *   swin_preprocess_params pp = swin_preprocess_params_from_config(swin_model_config(model));
 *   float *x = malloc(swin_preprocess_floats(&pp) * sizeof(float));   // [3, S, S]
 *   if (swin_preprocess_file(&pp, "cat.jpg", x) != SWIN_OK) ... swin_last_error() ...
 *
 * timm (timm 1.0.29 transforms_imagenet_eval, crop_mode 'center', square input):
 *   Resize(floor(S / crop_pct)) on the shorter side, the longer side int(new * long / short)
 *   (torchvision's rule), PIL resampling with the model's interpolation; CenterCrop(S)
 *   (offset round((size - S) / 2) with Python's half-to-even round; zero padding when the
 *   image is smaller); ToTensor (x / 255 in float32); Normalize ((x - mean) / std, float32).
 *   An H x W input (H != W): scale (sh, sw) = (floor(H / crop_pct), floor(W / crop_pct)); when
 *   they differ, ResizeKeepRatio: ratio = min(h / sh, w / sw), resize to (round(h / ratio),
 *   round(w / ratio)) (Python round), then CenterCrop((H, W)). timm 1.0.31 resamples that with the
 *   model's interpolation, as here; timm 1.0.29 used bilinear there (it did not pass it on).
 * hf (transformers 5.17 ViTImageProcessor, PIL backend, size {height: H, width: W}):
 *   PIL resize straight to H x W; rescale (float32)(x * (1/255 in double)); normalise.
 * Both match the reference libraries bit for bit when the decoded RGB8 image is the same and
 * `pillow` names the installed Pillow's major version (tests/test_preprocess.c prints the measured
 * differences against Pillow 13 and Pillow 12).
 */
#ifndef SWIN_PREPROCESS_H
#define SWIN_PREPROCESS_H

#include <stddef.h>
#include "image.h"
#include "swin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct swin_preprocess_params {
    swin_preprocess_style style;
    swin_interp interp;
    int size;          /* output is [3, size, size] ... */
    int height, width; /* ... or, when both are set, [3, height, width] (non-square models) */
    float crop_pct;    /* timm only; 0 means timm's default 0.875 */
    float mean[3], std[3];
    int pillow;        /* resize as this Pillow major version does; 0: SWIN_PILLOW_DEFAULT (13).
                        * 12 and older always resize horizontally first, 13 vertically first when
                        * the height shrinks more than twice as much as the width (swin.h) */
} swin_preprocess_params;

/* Output rows and columns of p: (height, width) when set, else (size, size). */
static inline int swin_preprocess_height(const swin_preprocess_params *p) {
    return p->height > 0 && p->width > 0 ? p->height : p->size;
}
static inline int swin_preprocess_width(const swin_preprocess_params *p) {
    return p->height > 0 && p->width > 0 ? p->width : p->size;
}

/* size = S for a square model (height, width 0), else height and width. */
swin_preprocess_params swin_preprocess_params_from_config(const swin_config *cfg);
size_t swin_preprocess_floats(const swin_preprocess_params *p);   /* 3 * height * width */

/* The geometry for a w x h image: resize to rw x rh, then take the output window (width x
 * height) at (x0, y0) of the resized image (x0, y0 < 0 when it is padded). */
swin_status swin_preprocess_plan(const swin_preprocess_params *p, int w, int h, int *rw, int *rh,
                                 int *x0, int *y0);

/* The pixels of a w x h image that preprocessing with p reads: *r (swin_image_decode_part asks
 * the decoder for them alone). Empty (x0 = x1) when it reads none (the crop misses the image). */
swin_status swin_preprocess_source_rect(const swin_preprocess_params *p, int w, int h, swin_rect *r);

/* out [3, height, width] (CHW, float32). img may be a part of an image (image.h) that holds what
 * swin_preprocess_source_rect names; the output is then the whole image's. */
swin_status swin_preprocess_image(const swin_preprocess_params *p, const swin_image *img, float *out);
swin_status swin_preprocess_file(const swin_preprocess_params *p, const char *path, float *out);

/* ---- images straight into a session: preprocess on the session's device, then the forward.
 *
 *   swin_image imgs[n];                               // any sizes; pixels ideally in memory from
 *   ...                                               // swin_session_host_alloc (pinned on CUDA)
 *   swin_status st = swin_forward_images(sess, &pp, imgs, n, SWIN_PRE_DEVICE_AUTO, logits, NULL);
 *
 * SWIN_PRE_DEVICE_GPU (AUTO on a CUDA session): the RGB8 pixels are copied to the GPU and
 * resized, cropped, normalised and laid out there, bit-identical to swin_preprocess_image.
 * SWIN_PRE_DEVICE_CPU (AUTO on a CPU session): swin_preprocess_image per image on the host.
 * p's output size must be the model's (img_h x img_w); 1 <= n <= the session's max batch; logits
 * [n, num_classes]. timing, when not NULL, receives per-call times (CUDA events on the GPU). */
typedef enum {
    SWIN_PRE_DEVICE_AUTO = 0,
    SWIN_PRE_DEVICE_CPU = 1,
    SWIN_PRE_DEVICE_GPU = 2
} swin_preprocess_device;

typedef struct {
    double upload_ms;       /* host pixels -> device (0 on the CPU path) */
    double preprocess_ms;   /* resize + crop + normalise (+ layout) */
    double forward_ms;      /* the model, logits back on the host included */
} swin_images_timing;

swin_status swin_forward_images(swin_session *s, const swin_preprocess_params *p,
                                const swin_image *imgs, int n, swin_preprocess_device where,
                                float *logits, swin_images_timing *timing);

/* swin_forward_images on a CUDA session with GPU preprocessing, where on_device[i] (NULL: none)
 * says that image i's pixels are in device memory on the session's GPU (a GPU decoder's output). */
swin_status swin_forward_images_on(swin_session *s, const swin_preprocess_params *p, const swin_image *imgs,
                                   const int *on_device, int n, float *logits, swin_images_timing *timing);

/* ---- the same in two halves, so that the caller works while the GPU runs (the pipeline prints
 * batch k's results during batch k + 1's forward).
 *
 *   swin_forward_images_begin(sess, &pp, imgs, NULL, n, SWIN_PRE_DEVICE_AUTO, 0, logits);
 *   ... other work; imgs' pixels and logits stay untouched ...
 *   swin_forward_end(sess, &timing);          // logits written, pixels free again
 *
 * _begin checks and enqueues the batch and returns: on a CUDA session without waiting for the
 * GPU, on the CPU (or with CPU preprocessing) after doing all the work. swin_forward_end waits
 * (without spinning a core) and reports the batch's status. on_device as for
 * swin_forward_images_on (NULL: none). pad_to (0: n; else n .. max batch) runs a CUDA forward
 * of pad_to rows, so that a short last batch replays the captured graph (and tuned GEMMs) of a
 * full one; the extra rows compute garbage that is dropped. The CPU ignores it.
 * swin_forward_input_begin: the same for a host input [n, 3, H, W], kept untouched until the end.
 * One batch in flight per session; between the halves call nothing else on the session. */
swin_status swin_forward_images_begin(swin_session *s, const swin_preprocess_params *p, const swin_image *imgs,
                                      const int *on_device, int n, swin_preprocess_device where, int pad_to,
                                      float *logits);
swin_status swin_forward_input_begin(swin_session *s, const float *input, int n, int pad_to, float *logits);
swin_status swin_forward_end(swin_session *s, swin_images_timing *timing);

/* Host memory for image pixels: page-locked on a CUDA session (faster, asynchronous copies),
 * plain malloc on the CPU. NULL when it cannot be had. Free with swin_session_host_free on the
 * same session, before the session is freed. */
void *swin_session_host_alloc(swin_session *s, size_t bytes);
void swin_session_host_free(swin_session *s, void *ptr);

/* "cpu" / "gpu" (AUTO prints "auto") */
const char *swin_preprocess_device_str(swin_preprocess_device d);
swin_status swin_preprocess_device_parse(const char *s, swin_preprocess_device *out);

/* A Pillow version, "MAJOR[.MINOR[.PATCH]]" ("12", "12.3", "12.3.0"): its major version (1 to 999),
 * which is all that the resize depends on. */
swin_status swin_pillow_parse(const char *s, int *major);

/* "timm" / "hf" */
const char *swin_preprocess_style_str(swin_preprocess_style s);
swin_status swin_preprocess_style_parse(const char *s, swin_preprocess_style *out);

#ifdef __cplusplus
}
#endif
#endif
