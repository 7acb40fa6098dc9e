/* resize.c - Pillow-exact resampling of RGB8 images (see resize.h).
 *
 * Follows Pillow's libImaging/Resample.c (precompute_coeffs, normalize_coeffs_8bpc,
 * ImagingResampleHorizontal/Vertical_8bpc, ImagingResampleInner) and, for nearest,
 * libImaging/Geometry.c ImagingScaleAffine, as in Pillow 12.3 and 13.0, which differ only in the
 * pass order (Pillow 13 runs the vertical pass first when the height shrinks much more than the
 * width; the caller picks the version). Arithmetic is kept in the same order and the same types
 * so that results match bit for bit; the windowed form computes only the coefficients and rows
 * that the window needs. A resize is a plan (swin_resize_plan: pass order,
 * regions, coefficients) then its application; the GPU path (kernels/preprocess.cu) applies the
 * same plan, so the CPU and the GPU share one source of coefficients. The loops below are the
 * reference; on CPUs with AVX2 the passes run as resize_avx2.c's kernels, which compute the same
 * integers (resize_kernels.h).
 * Test: build/tests/test_preprocess (against Pillow 13 and Pillow 12 references),
 * build/tests/test_resize (every kernel against the reference).
 */
#include "resize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "resize_kernels.h"

/* ---- filters, as in Resample.c */
static double bilinear_filter(double x) {
    if (x < 0.0) x = -x;
    if (x < 1.0) return 1.0 - x;
    return 0.0;
}

static double bicubic_filter(double x) {
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

#define PRECISION_BITS SWIN_RESIZE_PRECISION_BITS

/* Pillow accumulates in int: 255 x the sum of |weights| (at most ~1.2 x 2^22 for bicubic) plus the
 * rounding half stays below 2^31, so int32 is both exact and Pillow's own arithmetic. */
static inline uint8_t clip8(int32_t ss) {
    if (ss < 0) return 0;
    ss >>= PRECISION_BITS;
    return ss > 255 ? 255 : (uint8_t)ss;
}

/* ---- coefficients: for outputs o0 .. o0+n-1 of a resize from in_size to out_size,
 * first[i] / count[i] name the input taps and k[i * ksize ..] their fixed-point weights. */
static swin_status coeffs_make(int in_size, int out_size, int o0, int n, swin_interp interp,
                               swin_resize_axis *c) {
    double (*filter)(double) = interp == SWIN_INTERP_BICUBIC ? bicubic_filter : bilinear_filter;
    double fsupport = interp == SWIN_INTERP_BICUBIC ? 2.0 : 1.0;
    double scale = (double)in_size / out_size, filterscale = scale;
    if (filterscale < 1.0) filterscale = 1.0;
    double support = fsupport * filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    size_t nk, len;
    *c = (swin_resize_axis){0};
    if (swin_mul_size((size_t)n, (size_t)ksize, &nk) || nk > ((size_t)1 << 31) ||
        swin_add_size(nk, (size_t)2 * n, &len))
        return swin_fail(SWIN_ERR_ARGUMENT, "resize %d -> %d: too many coefficients", in_size, out_size);
    int32_t *block = calloc(len, sizeof *block);
    double *kd = malloc((size_t)ksize * sizeof *kd);
    if (!block || !kd) {
        free(kd);
        free(block);
        return swin_fail(SWIN_ERR_MEMORY, "resize %d -> %d: out of memory", in_size, out_size);
    }
    c->n = n;
    c->ksize = ksize;
    c->first = block;
    c->count = block + n;
    c->k = block + 2 * (size_t)n;
    c->len = len;
    for (int i = 0; i < n; i++) {
        int xx = o0 + i;
        double center = 0.0 + (xx + 0.5) * scale;
        double ww = 0.0, ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int xmax = (int)(center + support + 0.5);
        if (xmax > in_size) xmax = in_size;
        xmax -= xmin;
        for (int x = 0; x < xmax; x++) {
            double w = filter((x + xmin - center + 0.5) * ss);
            kd[x] = w;
            ww += w;
        }
        for (int x = 0; x < xmax; x++)
            if (ww != 0.0) kd[x] /= ww;
        int32_t *k = c->k + (size_t)i * ksize;
        for (int x = 0; x < xmax; x++) /* normalize_coeffs_8bpc */
            k[x] = kd[x] < 0 ? (int32_t)(-0.5 + kd[x] * (1 << PRECISION_BITS))
                             : (int32_t)(0.5 + kd[x] * (1 << PRECISION_BITS));
        c->first[i] = xmin;
        c->count[i] = xmax;
    }
    free(kd);
    return SWIN_OK;
}

/* ---- nearest: ImagingScaleAffine with a = (in/out, 0, 0, 0, ...). first[i] is the source index
 * of output o0 + i along one axis, -1 when it falls outside the source. */
static swin_status nearest_make(int in_size, int out_size, int o0, int n, swin_resize_axis *c) {
    *c = (swin_resize_axis){0};
    c->first = malloc((size_t)n * sizeof *c->first);
    if (!c->first) return swin_fail(SWIN_ERR_MEMORY, "resize %d -> %d: out of memory", in_size, out_size);
    c->n = n;
    c->len = (size_t)n;
    double a = (double)in_size / out_size;
    double pos = 0.0 + a * 0.5;
    /* positions are accumulated from 0 as Pillow does, so the rounding drift is the same */
    for (int x = 0; x < o0 + n; x++, pos += a) {
        int xi = pos < 0.0 ? -1 : (int)pos;
        if (x >= o0) c->first[x - o0] = xi < in_size ? xi : -1;
    }
    return SWIN_OK;
}

/* [lo, hi) of the input taps used by a set of coefficients */
static void tap_range(const swin_resize_axis *c, int *lo, int *hi) {
    *lo = c->first[0];
    *hi = c->first[0] + c->count[0];
    for (int i = 1; i < c->n; i++) {
        if (c->first[i] < *lo) *lo = c->first[i];
        if (c->first[i] + c->count[i] > *hi) *hi = c->first[i] + c->count[i];
    }
}

// ---- the plan

/* The Pillow version whose pass order to follow. Pillow 13.0 added the rule: "if height is being
 * scaled down more than twice the amount the width is, run the vertical pass first"; older
 * versions always ran the horizontal pass first. The order changes the intermediate rounding.
 * How much (recorded in the README on 2026-11-23; no command or Pillow patch versions recorded):
 * a random 333x500 image resized to 224x224 bicubic differs between the two orders in 23% of
 * the bytes, by up to 7 levels; on 49 ImageNet photos, --preprocess hf matched Pillow 12's
 * transformers pipeline on 97.9% of the values (up to 11 levels apart) in Pillow 13's order,
 * and on all of them in Pillow 12's. build/tests/test_preprocess prints the share that differs,
 * and the largest difference, on the bundled shapes where the orders differ. */
#define PILLOW_V_FIRST_SINCE 13

static int pillow_h_first(int pillow, int sw, int sh, int dw, int dh) {
    if (pillow == 0) pillow = SWIN_PILLOW_DEFAULT;
    if (pillow < PILLOW_V_FIRST_SINCE) return 1;
    int64_t dy = (int64_t)sh - dh, dx = (int64_t)sw - dw;
    return !(dy > 0 && dy > dx * 2);
}

void swin_resize_plan_free(swin_resize_plan *plan) {
    if (!plan) return;
    free(plan->h.first); /* first is the start of each axis's one block */
    free(plan->v.first);
    plan->h = plan->v = (swin_resize_axis){0};
}

swin_status swin_resize_plan_make(int sw, int sh, int dw, int dh, int wx0, int wy0, int ww, int wh,
                                  swin_interp interp, int pillow, swin_resize_plan *plan) {
    swin_resize_plan *pl = plan;
    if (!pl) return swin_fail(SWIN_ERR_ARGUMENT, "resize: NULL plan");
    *pl = (swin_resize_plan){0};
    if (sw < 1 || sh < 1 || dw < 1 || dh < 1 || ww < 1 || wh < 1)
        return swin_fail(SWIN_ERR_ARGUMENT, "resize %dx%d -> %dx%d (window %dx%d): bad size", sw, sh,
                         dw, dh, ww, wh);
    if (interp != SWIN_INTERP_NEAREST && interp != SWIN_INTERP_BILINEAR && interp != SWIN_INTERP_BICUBIC)
        return swin_fail(SWIN_ERR_ARGUMENT, "resize: unknown interpolation %d", (int)interp);
    if (pillow < 0)
        return swin_fail(SWIN_ERR_ARGUMENT, "resize: Pillow version %d (expected a major version, or 0 for %d)",
                         pillow, SWIN_PILLOW_DEFAULT);
    pl->interp = interp;
    pl->sw = sw, pl->sh = sh, pl->dw = dw, pl->dh = dh;
    pl->wx0 = wx0, pl->wy0 = wy0, pl->ww = ww, pl->wh = wh;
    pl->ix0 = wx0 > 0 ? wx0 : 0, pl->ix1 = wx0 + ww < dw ? wx0 + ww : dw;
    pl->iy0 = wy0 > 0 ? wy0 : 0, pl->iy1 = wy0 + wh < dh ? wy0 + wh : dh;
    pl->h_first = 1;
    if (pl->ix0 >= pl->ix1 || pl->iy0 >= pl->iy1) { /* the window misses the image: all zero */
        pl->ix1 = pl->ix0;
        pl->iy1 = pl->iy0;
        pl->r0 = pl->r1 = pl->iy0;
        pl->c0 = pl->c1 = pl->ix0;
        return SWIN_OK;
    }
    int ix0 = pl->ix0, iy0 = pl->iy0, nx = pl->ix1 - pl->ix0, ny = pl->iy1 - pl->iy0;
    pl->r0 = pl->iy0, pl->r1 = pl->iy1, pl->c0 = pl->ix0, pl->c1 = pl->ix1;
    swin_status st;
    if (interp == SWIN_INTERP_NEAREST) {
        if ((st = nearest_make(sw, dw, ix0, nx, &pl->h)) == SWIN_OK)
            st = nearest_make(sh, dh, iy0, ny, &pl->v);
        if (st != SWIN_OK) swin_resize_plan_free(pl);
        return st;
    }
    pl->need_h = dw != sw;
    pl->need_v = dh != sh;
    pl->h_first = pillow_h_first(pillow, sw, sh, dw, dh);
    st = SWIN_OK;
    if (pl->need_v) st = coeffs_make(sh, dh, iy0, ny, interp, &pl->v);
    if (st == SWIN_OK && pl->need_h) st = coeffs_make(sw, dw, ix0, nx, interp, &pl->h);
    if (st != SWIN_OK) {
        swin_resize_plan_free(pl);
        return st;
    }
    /* the intermediate: source rows r0..r1 x window columns (horizontal first), or window rows x
     * source columns c0..c1 (vertical first) */
    if (pl->need_v && pl->h_first) tap_range(&pl->v, &pl->r0, &pl->r1);
    if (pl->need_h && !pl->h_first) tap_range(&pl->h, &pl->c0, &pl->c1);
    return SWIN_OK;
}

// ---- the part of the source a plan reads, and the plan for a source that holds only a part

/* [lo, hi) of the source indices a nearest axis reads; lo = hi when none */
static void nearest_range(const swin_resize_axis *c, int *lo, int *hi) {
    *lo = *hi = 0;
    for (int i = 0; i < c->n; i++) {
        const int v = c->first[i];
        if (v < 0) continue;
        if (*lo == *hi) *lo = v, *hi = v + 1;
        else if (v < *lo) *lo = v;
        else if (v >= *hi) *hi = v + 1;
    }
}

void swin_resize_plan_source(const swin_resize_plan *pl, swin_rect *r) {
    *r = (swin_rect){0, 0, 0, 0};
    if (pl->ix0 >= pl->ix1 || pl->iy0 >= pl->iy1) return;
    if (pl->interp == SWIN_INTERP_NEAREST) {
        nearest_range(&pl->h, &r->x0, &r->x1);
        nearest_range(&pl->v, &r->y0, &r->y1);
        if (r->x0 == r->x1 || r->y0 == r->y1) *r = (swin_rect){0, 0, 0, 0};
        return;
    }
    if (pl->need_h) tap_range(&pl->h, &r->x0, &r->x1);
    else r->x0 = pl->ix0, r->x1 = pl->ix1;   /* sw == dw: window columns are source columns */
    if (pl->need_v) tap_range(&pl->v, &r->y0, &r->y1);
    else r->y0 = pl->iy0, r->y1 = pl->iy1;
}

/* every tap index of a filter axis, or every source index >= 0 of a nearest one, moves by -d */
static void axis_move(swin_resize_axis *c, int d) {
    for (int i = 0; i < c->n; i++)
        if (c->ksize || c->first[i] >= 0) c->first[i] -= d;
}

swin_status swin_resize_plan_to_part(swin_resize_plan *pl, int x0, int y0, int w, int h) {
    swin_rect need;
    swin_resize_plan_source(pl, &need);
    if (x0 < 0 || y0 < 0 || w < 1 || h < 1 || w > pl->sw - x0 || h > pl->sh - y0)
        return swin_fail(SWIN_ERR_ARGUMENT, "resize: part %dx%d at (%d, %d) is not within the %dx%d image", w, h,
                         x0, y0, pl->sw, pl->sh);
    if (need.x0 == need.x1) {   /* the window misses the image: nothing is read */
        pl->sw = w, pl->sh = h;
        return SWIN_OK;
    }
    if (need.x0 < x0 || need.x1 > x0 + w || need.y0 < y0 || need.y1 > y0 + h)
        return swin_fail(SWIN_ERR_ARGUMENT, "resize: part %dx%d at (%d, %d) of a %dx%d image lacks pixels the "
                         "resize reads ([%d, %d) x [%d, %d))", w, h, x0, y0, pl->sw, pl->sh, need.x0, need.x1,
                         need.y0, need.y1);
    if (pl->interp == SWIN_INTERP_NEAREST) {   /* the taps are all there is in source coordinates */
        axis_move(&pl->h, x0);
        axis_move(&pl->v, y0);
        pl->sw = w, pl->sh = h;
        return SWIN_OK;
    }
    /* columns: the horizontal taps, or, when the width is not resized, the window itself; c0, c1
     * are the vertical-first intermediate's source columns, else copies of ix0, ix1 */
    if (pl->need_h) axis_move(&pl->h, x0);
    else pl->wx0 -= x0, pl->ix0 -= x0, pl->ix1 -= x0, pl->dw = w;
    if (!pl->h_first || !pl->need_h) pl->c0 -= x0, pl->c1 -= x0;
    /* rows likewise: r0, r1 are the horizontal-first intermediate's source rows, else copies of
     * iy0, iy1 */
    if (pl->need_v) axis_move(&pl->v, y0);
    else pl->wy0 -= y0, pl->iy0 -= y0, pl->iy1 -= y0, pl->dh = h;
    if (pl->h_first || !pl->need_v) pl->r0 -= y0, pl->r1 -= y0;
    pl->sw = w, pl->sh = h;
    return SWIN_OK;
}

// ---- applying a plan on the CPU. Images are RGB8 with rows `stride` pixels apart.

/* Horizontal: out[y][xx] = sum_x in[y][first[xx] - col0 + x] * k[xx][x], for c->n outputs. */
static void pass_h(const uint8_t *in, size_t in_stride, int col0, int rows, const swin_resize_axis *c,
                   uint8_t *out, size_t out_stride) {
    for (int y = 0; y < rows; y++) {
        const uint8_t *row = in + (size_t)y * in_stride * 3;
        uint8_t *o = out + (size_t)y * out_stride * 3;
        for (int xx = 0; xx < c->n; xx++) {
            const int32_t *k = c->k + (size_t)xx * c->ksize;
            const uint8_t *p = row + (size_t)(c->first[xx] - col0) * 3;
            int32_t s0 = 1 << (PRECISION_BITS - 1), s1 = s0, s2 = s0;
            for (int x = 0; x < c->count[xx]; x++) {
                s0 += p[x * 3 + 0] * k[x];
                s1 += p[x * 3 + 1] * k[x];
                s2 += p[x * 3 + 2] * k[x];
            }
            o[xx * 3 + 0] = clip8(s0);
            o[xx * 3 + 1] = clip8(s1);
            o[xx * 3 + 2] = clip8(s2);
        }
    }
}

/* Vertical: out[yy][x] = sum_y in[first[yy] - row0 + y][x] * k[yy][y], for c->n output rows.
 * Accumulated a chunk of a row at a time, tap row by tap row (contiguous reads; the same sums in
 * the same order as Pillow's per-pixel loop). */
#define PASS_V_CHUNK 1024
static void pass_v(const uint8_t *in, size_t in_stride, int row0, int cols, const swin_resize_axis *c,
                   uint8_t *out, size_t out_stride) {
    int32_t acc[PASS_V_CHUNK];
    const int nv = cols * 3;
    for (int yy = 0; yy < c->n; yy++) {
        const int32_t *k = c->k + (size_t)yy * c->ksize;
        const uint8_t *base = in + (size_t)(c->first[yy] - row0) * in_stride * 3;
        uint8_t *o = out + (size_t)yy * out_stride * 3;
        for (int x0 = 0; x0 < nv; x0 += PASS_V_CHUNK) {
            const int n = nv - x0 < PASS_V_CHUNK ? nv - x0 : PASS_V_CHUNK;
            for (int i = 0; i < n; i++) acc[i] = 1 << (PRECISION_BITS - 1);
            for (int y = 0; y < c->count[yy]; y++) {
                const uint8_t *r = base + (size_t)y * in_stride * 3 + x0;
                const int32_t ky = k[y];
                for (int i = 0; i < n; i++) acc[i] += r[i] * ky;
            }
            for (int i = 0; i < n; i++) o[x0 + i] = clip8(acc[i]);
        }
    }
}

/* copy a [rows, cols] block */
static void copy_block(const uint8_t *in, size_t in_stride, int rows, int cols, uint8_t *out,
                       size_t out_stride) {
    for (int y = 0; y < rows; y++)
        memcpy(out + (size_t)y * out_stride * 3, in + (size_t)y * in_stride * 3, (size_t)cols * 3);
}

/* nearest: out[j][i] = src[v.first[j]][h.first[i]] where both are >= 0 (out is zeroed) */
static void nearest_apply(const swin_resize_plan *pl, const uint8_t *src, uint8_t *out, size_t stride) {
    for (int j = 0; j < pl->v.n; j++) {
        int yi = pl->v.first[j];
        if (yi < 0) continue;
        const uint8_t *in = src + (size_t)yi * pl->sw * 3;
        uint8_t *o = out + (size_t)j * stride * 3;
        for (int i = 0; i < pl->h.n; i++)
            if (pl->h.first[i] >= 0) memcpy(o + (size_t)i * 3, in + (size_t)pl->h.first[i] * 3, 3);
    }
}

/* the passes with the kernel chosen (avx2: 1 for the AVX2 kernels, which decline some calls;
 * the reference then runs) */
static void run_h(int avx2, const uint8_t *in, size_t in_stride, int col0, int rows, const swin_resize_axis *c,
                  uint8_t *out, size_t out_stride) {
    if (!avx2 || !swin_resize_pass_h_avx2(in, in_stride, col0, rows, c, out, out_stride))
        pass_h(in, in_stride, col0, rows, c, out, out_stride);
}

static void run_v(int avx2, const uint8_t *in, size_t in_stride, int row0, int cols, const swin_resize_axis *c,
                  uint8_t *out, size_t out_stride) {
    if (!avx2 || !swin_resize_pass_v_avx2(in, in_stride, row0, cols, c, out, out_stride))
        pass_v(in, in_stride, row0, cols, c, out, out_stride);
}

swin_status swin_resize_plan_apply(const swin_resize_plan *plan, const uint8_t *src, uint8_t *dst) {
    return swin_resize_plan_apply_kernel(plan, SWIN_RESIZE_KERNEL_AUTO, src, dst);
}

swin_status swin_resize_plan_apply_kernel(const swin_resize_plan *plan, swin_resize_kernel kernel,
                                          const uint8_t *src, uint8_t *dst) {
    const swin_resize_plan *pl = plan;
    if (!pl || !src || !dst) return swin_fail(SWIN_ERR_ARGUMENT, "resize: NULL plan, source or destination");
    if (kernel != SWIN_RESIZE_KERNEL_AUTO && kernel != SWIN_RESIZE_KERNEL_C && kernel != SWIN_RESIZE_KERNEL_AVX2)
        return swin_fail(SWIN_ERR_ARGUMENT, "resize: unknown kernel %d", (int)kernel);
    int avx2 = kernel != SWIN_RESIZE_KERNEL_C && swin_resize_avx2_available();
    if (kernel == SWIN_RESIZE_KERNEL_AVX2 && !avx2)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "resize: no AVX2 kernels on this CPU or in this build");
    size_t ww = (size_t)pl->ww;
    memset(dst, 0, ww * pl->wh * 3);
    int nx = pl->ix1 - pl->ix0, ny = pl->iy1 - pl->iy0, sw = pl->sw;
    if (nx <= 0 || ny <= 0) return SWIN_OK;
    uint8_t *out = dst + ((size_t)(pl->iy0 - pl->wy0) * ww + (pl->ix0 - pl->wx0)) * 3;
    if (pl->interp == SWIN_INTERP_NEAREST) {
        nearest_apply(pl, src, out, ww);
        return SWIN_OK;
    }
    int r0 = pl->r0, r1 = pl->r1, c0 = pl->c0, c1 = pl->c1;
    size_t tmp_px = pl->h_first ? (size_t)(r1 - r0) * nx : (size_t)ny * (c1 - c0);
    uint8_t *tmp = malloc(tmp_px * 3 + 1);
    if (!tmp)
        return swin_fail(SWIN_ERR_MEMORY, "resize %dx%d -> %dx%d: out of memory", pl->sw, pl->sh, pl->dw, pl->dh);
    if (pl->h_first) {
        const uint8_t *in = src + (size_t)r0 * sw * 3;
        if (pl->need_h) run_h(avx2, in, (size_t)sw, 0, r1 - r0, &pl->h, tmp, (size_t)nx);
        else copy_block(in + (size_t)pl->ix0 * 3, (size_t)sw, r1 - r0, nx, tmp, (size_t)nx);
        if (pl->need_v) run_v(avx2, tmp, (size_t)nx, r0, nx, &pl->v, out, ww);
        else copy_block(tmp, (size_t)nx, ny, nx, out, ww);
    } else { /* need_v holds here */
        run_v(avx2, src + (size_t)c0 * 3, (size_t)sw, 0, c1 - c0, &pl->v, tmp, (size_t)(c1 - c0));
        if (pl->need_h) run_h(avx2, tmp, (size_t)(c1 - c0), c0, ny, &pl->h, out, ww);
        else copy_block(tmp, (size_t)(c1 - c0), ny, nx, out, ww);
    }
    free(tmp);
    return SWIN_OK;
}

// ---- the entry points: plan, apply, free

swin_status swin_resize_rgb8_window(const uint8_t *src, int sw, int sh, int dw, int dh,
                                    int wx0, int wy0, int ww, int wh, swin_interp interp,
                                    int pillow, uint8_t *dst) {
    if (!src || !dst)
        return swin_fail(SWIN_ERR_ARGUMENT, "resize %dx%d -> %dx%d: NULL source or destination", sw, sh, dw, dh);
    swin_resize_plan plan;
    SWIN_TRY(swin_resize_plan_make(sw, sh, dw, dh, wx0, wy0, ww, wh, interp, pillow, &plan));
    swin_status st = swin_resize_plan_apply(&plan, src, dst);
    swin_resize_plan_free(&plan);
    return st;
}

swin_status swin_resize_rgb8(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh,
                             swin_interp interp) {
    return swin_resize_rgb8_window(src, sw, sh, dw, dh, 0, 0, dw, dh, interp, 0, dst);
}
