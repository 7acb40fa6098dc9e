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
 * hf (transformers 5.17 ViTImageProcessor, PIL backend, size {height: S, width: S}):
 *   PIL resize straight to S x S; rescale (float32)(x * (1/255 in double)); normalise.
 * Both match the reference libraries bit for bit when the decoded RGB8 image is the same
 * (tests/test_preprocess.c prints the measured differences).
 */
#ifndef SWIN_PREPROCESS_H
#define SWIN_PREPROCESS_H

#include <stddef.h>
#include "image.h"
#include "swin.h"

typedef struct {
    swin_preprocess_style style;
    swin_interp interp;
    int size;          /* output is [3, size, size] */
    float crop_pct;    /* timm only; 0 means timm's default 0.875 */
    float mean[3], std[3];
} swin_preprocess_params;

swin_preprocess_params swin_preprocess_params_from_config(const swin_config *cfg);
size_t swin_preprocess_floats(const swin_preprocess_params *p);   /* 3 * size * size */

/* The geometry for a w x h image: resize to rw x rh, then take the size x size window at
 * (x0, y0) of the resized image (x0, y0 < 0 when it is padded). */
swin_status swin_preprocess_plan(const swin_preprocess_params *p, int w, int h, int *rw, int *rh,
                                 int *x0, int *y0);

/* out [3, size, size] (CHW, float32). */
swin_status swin_preprocess_image(const swin_preprocess_params *p, const swin_image *img, float *out);
swin_status swin_preprocess_file(const swin_preprocess_params *p, const char *path, float *out);

/* "timm" / "hf" */
const char *swin_preprocess_style_str(swin_preprocess_style s);
swin_status swin_preprocess_style_parse(const char *s, swin_preprocess_style *out);

#endif
