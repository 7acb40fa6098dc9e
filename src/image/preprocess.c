/* preprocess.c - timm / Hugging Face eval preprocessing (see preprocess.h for the rules).
 * Test: build/test_preprocess (compares with tensors made by tools/export_preprocess.py). */
#include "preprocess.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "resize.h"

swin_preprocess_params swin_preprocess_params_from_config(const swin_config *cfg) {
    swin_preprocess_params p;
    memset(&p, 0, sizeof p);
    p.style = cfg->pre_style;
    p.interp = cfg->interp;
    if (cfg->img_h == cfg->img_w) {
        p.size = cfg->img_h;
    } else {
        p.height = cfg->img_h;
        p.width = cfg->img_w;
    }
    p.crop_pct = cfg->crop_pct;
    memcpy(p.mean, cfg->mean, sizeof p.mean);
    memcpy(p.std, cfg->std, sizeof p.std);
    return p;
}

size_t swin_preprocess_floats(const swin_preprocess_params *p) {
    int h = swin_preprocess_height(p), w = swin_preprocess_width(p);
    return h > 0 && w > 0 ? (size_t)3 * h * w : 0;
}

const char *swin_preprocess_device_str(swin_preprocess_device d) {
    return d == SWIN_PRE_DEVICE_CPU ? "cpu" : d == SWIN_PRE_DEVICE_GPU ? "gpu" : "auto";
}

swin_status swin_preprocess_device_parse(const char *s, swin_preprocess_device *out) {
    if (s && !strcmp(s, "cpu")) { *out = SWIN_PRE_DEVICE_CPU; return SWIN_OK; }
    if (s && !strcmp(s, "gpu")) { *out = SWIN_PRE_DEVICE_GPU; return SWIN_OK; }
    if (s && !strcmp(s, "auto")) { *out = SWIN_PRE_DEVICE_AUTO; return SWIN_OK; }
    return swin_fail(SWIN_ERR_ARGUMENT, "preprocess device '%s': expected cpu, gpu or auto", s ? s : "(null)");
}

const char *swin_preprocess_style_str(swin_preprocess_style s) {
    return s == SWIN_PRE_HF ? "hf" : s == SWIN_PRE_TIMM ? "timm" : "?";
}

swin_status swin_preprocess_style_parse(const char *s, swin_preprocess_style *out) {
    if (s && !strcmp(s, "timm")) { *out = SWIN_PRE_TIMM; return SWIN_OK; }
    if (s && !strcmp(s, "hf")) { *out = SWIN_PRE_HF; return SWIN_OK; }
    return swin_fail(SWIN_ERR_ARGUMENT, "preprocess style '%s': expected timm or hf", s ? s : "(null)");
}

swin_status swin_pillow_parse(const char *s, int *major) {
    const char *c = s;
    long v0 = -1;
    for (int parts = 0; c && parts < 3;) {   /* up to three numbers joined by '.' */
        if (*c < '0' || *c > '9') { c = NULL; break; }
        char *end;
        errno = 0;
        long v = strtol(c, &end, 10);
        if (errno) { c = NULL; break; }
        if (parts++ == 0) v0 = v;
        if (*end == '\0') { c = end; break; }
        c = *end == '.' && parts < 3 ? end + 1 : NULL;
    }
    if (!c || *c || v0 < 1 || v0 > 999)
        return swin_fail(SWIN_ERR_ARGUMENT, "Pillow version '%s': expected MAJOR[.MINOR[.PATCH]], e.g. 12 or 12.3.0",
                         s ? s : "(null)");
    *major = (int)v0;
    return SWIN_OK;
}

/* Python's round() on d / 2.0 for an integer d >= 0: halves go to the even neighbour. */
static int half_even(int d) {
    int k = d / 2;
    if (d % 2 == 0) return k;
    return k % 2 == 0 ? k : k + 1;
}

/* torchvision CenterCrop offset along one side of length n for a crop of c */
static int crop_offset(int n, int c) {
    if (c > n) return -((c - n) / 2); /* padded with (c - n) // 2 on the leading side */
    return half_even(n - c);
}

/* crop_pct came from a decimal in a JSON file: recover that decimal before dividing, as Python
 * divides by the double, not by its float rounding (224 / 0.9f != 224 / 0.9) */
static double crop_pct_of(const swin_preprocess_params *p) {
    double cp = p->crop_pct > 0 ? p->crop_pct : 0.875;
    char buf[32];
    snprintf(buf, sizeof buf, "%.7g", cp);
    return strtod(buf, NULL);
}

/* timm's shorter-side Resize(scale): the shorter side to scale, the longer int(scale * long / short) */
static swin_status resize_shorter(int w, int h, double scaled, int *rw, int *rh) {
    int new_short = (int)scaled;
    int shorter = w <= h ? w : h, longer = w <= h ? h : w;
    double nl = (double)((long long)new_short * longer) / shorter; /* torchvision: int(s * long / short) */
    if (nl > 1e9) return swin_fail(SWIN_ERR_ARGUMENT, "preprocess: %dx%d image is too elongated", w, h);
    int new_long = (int)nl;
    *rw = w <= h ? new_short : new_long;
    *rh = w <= h ? new_long : new_short;
    return SWIN_OK;
}

/* timm's ResizeKeepRatio(scale (sh, sw), longest 0): ratio = min(h / sh, w / sw), each side
 * round(side / ratio) with Python's half-to-even round */
static swin_status resize_keep_ratio(int w, int h, double sh, double sw, int *rw, int *rh) {
    double rh_ = (double)h / sh, rw_ = (double)w / sw, ratio = rh_ < rw_ ? rh_ : rw_;
    double nh = nearbyint((double)h / ratio), nw = nearbyint((double)w / ratio);
    if (!(nh >= 1 && nw >= 1 && nh <= 1e9 && nw <= 1e9))
        return swin_fail(SWIN_ERR_ARGUMENT, "preprocess: %dx%d image is too elongated", w, h);
    *rh = (int)nh;
    *rw = (int)nw;
    return SWIN_OK;
}

swin_status swin_preprocess_plan(const swin_preprocess_params *p, int w, int h, int *rw, int *rh,
                                 int *x0, int *y0) {
    int oh = swin_preprocess_height(p), ow = swin_preprocess_width(p);
    if (oh < 1 || oh > SWIN_IMAGE_MAX_SIDE || ow < 1 || ow > SWIN_IMAGE_MAX_SIDE)
        return swin_fail(SWIN_ERR_ARGUMENT, "preprocess: input size %dx%d out of range", oh, ow);
    if (w < 1 || h < 1) return swin_fail(SWIN_ERR_ARGUMENT, "preprocess: empty image %dx%d", w, h);
    if (p->style == SWIN_PRE_HF) {
        *rw = ow;
        *rh = oh;
        *x0 = *y0 = 0;
        return SWIN_OK;
    }
    if (p->style != SWIN_PRE_TIMM)
        return swin_fail(SWIN_ERR_ARGUMENT, "preprocess: unknown style %d", (int)p->style);
    double cp = crop_pct_of(p);
    double sh = floor(oh / cp), sw = floor(ow / cp);
    if (!(sh >= 1 && sh <= 4 * SWIN_IMAGE_MAX_SIDE && sw >= 1 && sw <= 4 * SWIN_IMAGE_MAX_SIDE))
        return swin_fail(SWIN_ERR_ARGUMENT, "preprocess: crop_pct %g gives a resize to %gx%g pixels", cp, sh, sw);
    if (sh == sw) SWIN_TRY(resize_shorter(w, h, sh, rw, rh));   /* square scale: shorter side */
    else SWIN_TRY(resize_keep_ratio(w, h, sh, sw, rw, rh));
    *x0 = crop_offset(*rw, ow);
    *y0 = crop_offset(*rh, oh);
    return SWIN_OK;
}

swin_status swin_preprocess_resize_plan(const swin_preprocess_params *p, const swin_image *img, swin_resize_plan *plan) {
    int rw, rh, x0, y0, fw = swin_image_full_width(img), fh = swin_image_full_height(img);
    SWIN_TRY(swin_preprocess_plan(p, fw, fh, &rw, &rh, &x0, &y0));
    SWIN_TRY(swin_resize_plan_make(fw, fh, rw, rh, x0, y0, swin_preprocess_width(p), swin_preprocess_height(p),
                                   p->interp, p->pillow, plan));
    if (img->full_width <= 0 && img->full_height <= 0) return SWIN_OK;
    swin_status st = swin_resize_plan_to_part(plan, img->x0, img->y0, img->width, img->height);
    if (st != SWIN_OK) swin_resize_plan_free(plan);
    return st;
}

swin_status swin_preprocess_source_rect(const swin_preprocess_params *p, int w, int h, swin_rect *r) {
    const swin_image whole = {.width = w, .height = h};
    swin_resize_plan plan;
    SWIN_TRY(swin_preprocess_resize_plan(p, &whole, &plan));
    swin_resize_plan_source(&plan, r);
    swin_resize_plan_free(&plan);
    return SWIN_OK;
}

swin_status swin_preprocess_image(const swin_preprocess_params *p, const swin_image *img, float *out) {
    int oh = swin_preprocess_height(p), ow = swin_preprocess_width(p);
    if (!img || !img->rgb || !out) return swin_fail(SWIN_ERR_ARGUMENT, "preprocess: NULL image or output");
    for (int c = 0; c < 3; c++)
        if (!(p->std[c] != 0.0f) || !isfinite(p->std[c]) || !isfinite(p->mean[c]))
            return swin_fail(SWIN_ERR_ARGUMENT, "preprocess: bad mean/std for channel %d (%g, %g)", c,
                             p->mean[c], p->std[c]);
    uint8_t *win = malloc((size_t)oh * ow * 3);
    if (!win) return swin_fail(SWIN_ERR_MEMORY, "preprocess: out of memory");
    /* an image already at the resized size is used as is (torchvision and PIL skip the resize) */
    swin_resize_plan plan;
    swin_status st = swin_preprocess_resize_plan(p, img, &plan);
    if (st == SWIN_OK) {
        st = swin_resize_plan_apply(&plan, img->rgb, win);
        swin_resize_plan_free(&plan);
    }
    if (st != SWIN_OK) { free(win); return st; }
    /* a channel has 256 possible values: each is normalised once, with torch's (numpy's for hf)
     * float operations, and looked up: the same floats as normalising every pixel, without two
     * divisions per value */
    float lut[3][256];
    for (int c = 0; c < 3; c++) {
        float mean = p->mean[c], std = p->std[c];
        for (int u = 0; u < 256; u++) {
            float v;
            if (p->style == SWIN_PRE_HF)
                v = (float)((double)u * (1.0 / 255.0)); /* numpy: float64 then cast */
            else
                v = (float)u / 255.0f; /* torch: uint8 -> float32, div(255) */
            lut[c][u] = (v - mean) / std;
        }
    }
    size_t plane = (size_t)oh * ow;
    float *o0 = out, *o1 = out + plane, *o2 = out + 2 * plane;
    for (size_t i = 0; i < plane; i++) {
        o0[i] = lut[0][win[i * 3 + 0]];
        o1[i] = lut[1][win[i * 3 + 1]];
        o2[i] = lut[2][win[i * 3 + 2]];
    }
    free(win);
    return SWIN_OK;
}

swin_status swin_preprocess_file(const swin_preprocess_params *p, const char *path, float *out) {
    uint8_t *data;
    size_t size;
    SWIN_TRY(swin_image_read_file(path, &data, &size));
    swin_image img;
    int custom;   /* no allocator: always 0 */
    /* only what p reads (SWIN_DECODE_PART=0: the whole image, to compare) */
    swin_status st = swin_image_decode_part(data, size, path, swin_env_on("SWIN_DECODE_PART", 1) ? p : NULL, NULL, NULL,
                                            &img, &custom);
    free(data);
    if (st != SWIN_OK) return st;
    st = swin_preprocess_image(p, &img, out);
    swin_image_free(&img);
    if (st != SWIN_OK) return swin_fail_prefix(st, "%s", path);
    return SWIN_OK;
}
