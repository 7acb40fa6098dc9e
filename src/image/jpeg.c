/* jpeg.c - JPEG decoding with libjpeg-turbo, pixel for pixel as Pillow decodes.
 *
 * Pillow's settings (libImaging/JpegDecode.c, PIL/JpegImagePlugin.py): ISLOW IDCT, fancy
 * upsampling, no scaling, and a mode chosen by the number of components: 1 -> "L" (convert('RGB')
 * replicates it), 3 -> "RGB" (libjpeg guesses YCbCr or RGB from the JFIF / Adobe markers),
 * 4 -> "CMYK" read with rawmode "CMYK;I" (Adobe's inverted polarity, assumed for every 4-component
 * file) and turned into RGB by Pillow's cmyk2rgb (libImaging/Convert.c).
 *
 * libjpeg reports trouble in two ways: errors (error_exit, whose default calls exit()) and
 * warnings (emit_message with level -1, after which it pads the data and carries on). Both jump
 * back here with longjmp. Warnings refuse the image, like Pillow's "image file is truncated" for
 * a premature end of file, except the ones that leave every pixel intact: an unknown JFIF
 * revision or Adobe transform code, a bad ICC marker, and junk bytes between the header
 * segments or before the end-of-image marker (Pillow opens all of those).
 * Pixels are decoded straight into the caller's RGB rows; no state outside the call.
 * Test: build/tests/test_jpeg <source dir> (fixtures from tools/export_jpeg.py).
 */
#include "jpeg.h"

#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE */
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>
#ifndef JCS_EXTENSIONS
#error "libjpeg-turbo is needed (Debian: libjpeg62-turbo-dev); this jpeglib.h is another libjpeg"
#endif

#include "internal.h"
#include "preprocess.h"

typedef enum { FAIL_CORRUPT, FAIL_TRUNCATED, FAIL_UNSUPPORTED, FAIL_MEMORY } fail_kind;

typedef struct {
    struct jpeg_error_mgr pub; /* first: libjpeg casts cinfo->err to this struct */
    jmp_buf jump;
    int in_header;             /* 1 while jpeg_read_header runs */
    fail_kind kind;
    char msg[JMSG_LENGTH_MAX];
} error_mgr;

typedef struct {
    struct jpeg_decompress_struct cinfo;
    error_mgr err;
} decoder;

// ---- error manager: record the message and jump back; never print, never exit
static _Noreturn void fail_jump(j_common_ptr c, fail_kind kind) {
    error_mgr *e = (error_mgr *)c->err;
    e->kind = kind;
    (*c->err->format_message)(c, e->msg);
    longjmp(e->jump, 1);
}

static void on_error(j_common_ptr c) {
    switch (c->err->msg_code) {
    case JERR_OUT_OF_MEMORY: fail_jump(c, FAIL_MEMORY);
    case JERR_BAD_PRECISION:
    case JERR_ARITH_NOTIMPL:
    case JERR_NOT_COMPILED:
    case JERR_NOTIMPL:
    case JERR_CONVERSION_NOTIMPL: fail_jump(c, FAIL_UNSUPPORTED);
    default: fail_jump(c, FAIL_CORRUPT);
    }
}

static void on_message(j_common_ptr c, int level) {
    if (level >= 0) return; /* trace messages */
    const error_mgr *e = (const error_mgr *)c->err;
    switch (c->err->msg_code) {
    case JWRN_JFIF_MAJOR:
    case JWRN_ADOBE_XFORM:
    case JWRN_BOGUS_ICC: return;
    case JWRN_EXTRANEOUS_DATA: /* msg_parm.i[1]: the marker the junk came before */
        if (e->in_header || c->err->msg_parm.i[1] == 0xD9) return;
        break;
    case JWRN_JPEG_EOF: fail_jump(c, FAIL_TRUNCATED);
    default: break;
    }
    fail_jump(c, FAIL_CORRUPT);
}

static void no_output(j_common_ptr c) { (void)c; }

// ---- colour conversion
/* Pillow: unpackCMYKI inverts libjpeg's CMYK (v -> 255 - v), then cmyk2rgb gives
 * CLIP8(nk - MULDIV255(c, nk)) with nk = 255 - k and MULDIV255(a, b) = (t + (t >> 8)) >> 8,
 * t = a * b + 128. With the inversion folded in: nk is libjpeg's K byte, c = 255 - its C byte. */
static void cmyk_row_to_rgb(uint8_t *rgb, const uint8_t *cmyk, unsigned w) {
    for (unsigned x = 0; x < w; x++, rgb += 3, cmyk += 4) {
        int nk = cmyk[3];
        for (int k = 0; k < 3; k++) {
            int t = (255 - cmyk[k]) * nk + 128;
            int v = nk - (((t >> 8) + t) >> 8);
            rgb[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
}

/* The first w bytes of the row are grey; spread them to RGB from the end backwards. */
static void grey_row_to_rgb(uint8_t *row, unsigned w) {
    for (unsigned x = w; x-- > 0;) row[3 * x] = row[3 * x + 1] = row[3 * x + 2] = row[x];
}

// ---- decoding
static void decoder_init(decoder *d) {
    *d = (decoder){0};
    d->cinfo.err = jpeg_std_error(&d->err.pub);
    d->err.pub.error_exit = on_error;
    d->err.pub.emit_message = on_message;
    d->err.pub.output_message = no_output;
}

/* the status of a failure that jumped back (setjmp returned 1) */
static swin_status jump_status(const decoder *d, const char *name) {
    static const char *const WHAT[] = {"corrupt JPEG", "truncated JPEG", "unsupported JPEG",
                                       "out of memory decoding JPEG"};
    return swin_fail(d->err.kind == FAIL_MEMORY ? SWIN_ERR_MEMORY : SWIN_ERR_IMAGE, "%s: %s (%s)", name,
                     WHAT[d->err.kind], d->err.msg);
}

/* with setjmp armed by the caller: the decompressor over data, its header read */
static void read_header(decoder *d, const uint8_t *data, size_t size) {
    jpeg_create_decompress(&d->cinfo);
    jpeg_mem_src(&d->cinfo, data, (unsigned long)size);
    d->err.in_header = 1;
    jpeg_read_header(&d->cinfo, TRUE);
    d->err.in_header = 0;
}

/* With the decompression started: the part of the image to decode when only what preprocessing
 * with part_for reads is wanted (*part: columns from libjpeg's crop, rows [y0, y1)), 1; 0 to
 * decode the whole image. The part has a margin of one iMCU (8 or 16 pixels, 32 at most) around
 * what is read: libjpeg-turbo's fancy upsampling treats a cropped row's ends as the image's edges
 * (libjpeg.txt, "Partial image decompression"), so the pixels next to them may differ from a
 * whole decode; the margin keeps those out of what preprocessing reads, and one iMCU row above
 * the first row read keeps the rows after a skip away from the skip's start as well. Progressive
 * files take three iMCUs on either side: where their scans leave AC coefficients unknown, libjpeg
 * smooths each block with the DC values of the blocks up to two away (jdcoefct.c,
 * decompress_smooth_data), and at a crop's first column it takes the block itself for the ones
 * to its left (found by tools/fuzz.sh jpeg: a progressive file cut short). */
static int choose_part(struct jpeg_decompress_struct *c, const swin_preprocess_params *part_for, swin_rect *part) {
    const int w = (int)c->output_width, h = (int)c->output_height;
    swin_rect need;
    if (!part_for || swin_preprocess_source_rect(part_for, w, h, &need) != SWIN_OK || need.x0 >= need.x1)
        return 0;   /* a geometry preprocessing refuses is refused there, with its message */
    const int mx = 8 * c->max_h_samp_factor * (c->progressive_mode ? 3 : 1), my = 8 * c->max_v_samp_factor;
    const int x0 = need.x0 > mx ? need.x0 - mx : 0, x1 = need.x1 < w - mx ? need.x1 + mx : w;
    part->y0 = need.y0 > my ? need.y0 - my : 0;
    part->y1 = need.y1;
    if (x0 > 0 || x1 < w) {
        JDIMENSION xoff = (JDIMENSION)x0, width = (JDIMENSION)(x1 - x0);
        jpeg_crop_scanline(c, &xoff, &width);   /* xoff down to an iMCU boundary, width grown to match */
        part->x0 = (int)xoff;
        part->x1 = (int)(xoff + c->output_width);
    } else {
        part->x0 = 0, part->x1 = w;
    }
    return part->x0 > 0 || part->x1 < w || part->y0 > 0 || part->y1 < h;
}

/* Runs with setjmp armed. d and out are not local to this function, so what is written to them
 * survives the longjmp: out takes the pixel buffer as soon as it exists (the caller frees it). */
static swin_status run(decoder *d, const uint8_t *data, size_t size, const char *name,
                       const swin_preprocess_params *part_for, swin_image_alloc_fn alloc, void *ctx, swin_image *out,
                       int *custom) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    if (setjmp(d->err.jump)) return jump_status(d, name);
    read_header(d, data, size);

    unsigned w = c->image_width, h = c->image_height;
    int nc = c->num_components;
    if (nc != 1 && nc != 3 && nc != 4)
        return swin_fail(SWIN_ERR_IMAGE, "%s: unsupported JPEG (%d components; 1, 3 or 4 are read)", name, nc);
    swin_status st = swin_image_check_size(name, "JPEG", (long)w, (long)h);
    if (st != SWIN_OK) return st;
    /* Pillow's settings, spelled out even where they are libjpeg's defaults */
    c->out_color_space = nc == 1 ? JCS_GRAYSCALE : nc == 3 ? JCS_EXT_RGB : JCS_CMYK;
    c->dct_method = JDCT_ISLOW;
    c->do_fancy_upsampling = TRUE;
    c->scale_num = c->scale_denom = 1;
    jpeg_start_decompress(c);
    if (c->output_width != w || c->output_height != h)
        return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt JPEG (%ux%u in the header, %ux%u decoded)", name, w, h,
                         c->output_width, c->output_height);

    swin_rect part = {0, 0, (int)w, (int)h};
    const int is_part = choose_part(c, part_for, &part);
    const unsigned pw = (unsigned)(part.x1 - part.x0), ph = (unsigned)(part.y1 - part.y0);
    size_t stride = (size_t)pw * 3;
    uint8_t *rgb = alloc ? alloc(ctx, stride * ph) : NULL;
    if (rgb) *custom = 1;
    else rgb = malloc(stride * ph);
    out->rgb = rgb;
    if (!rgb) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory (%ux%u JPEG)", name, w, h);

    /* CMYK rows are wider than RGB ones: they go through a scratch buffer from libjpeg's pool */
    JSAMPARRAY cmyk = nc == 4 ? (*c->mem->alloc_sarray)((j_common_ptr)c, JPOOL_IMAGE, pw * 4,
                                                         (JDIMENSION)c->rec_outbuf_height) : NULL;
    if (part.y0 > 0) jpeg_skip_scanlines(c, (JDIMENSION)part.y0);   /* entropy-decoded all the same */
    while (c->output_scanline < (unsigned)part.y1) {
        unsigned y = c->output_scanline - (unsigned)part.y0, n;
        if (cmyk) {
            const unsigned want = (unsigned)part.y1 - c->output_scanline, most = (unsigned)c->rec_outbuf_height;
            n = jpeg_read_scanlines(c, cmyk, want < most ? want : most);
            for (unsigned i = 0; i < n; i++) cmyk_row_to_rgb(rgb + (y + i) * stride, cmyk[i], pw);
        } else {
            JSAMPROW rows[16];
            unsigned want = ph - y < 16 ? ph - y : 16;
            for (unsigned i = 0; i < want; i++) rows[i] = rgb + (y + i) * stride;
            n = jpeg_read_scanlines(c, rows, want);
            if (nc == 1)
                for (unsigned i = 0; i < n; i++) grey_row_to_rgb(rows[i], pw);
        }
        if (n == 0) /* only a suspending data source returns 0; ours never suspends */
            return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt JPEG (no rows decoded at row %u)", name, c->output_scanline);
    }
    /* The rows below the part are decoded all the same (entropy-decoded, at least), so that damage
     * there is found as a whole decode finds it. Not by skipping them all: told to skip to the
     * bottom, jpeg_skip_scanlines marks the data read without reading it (a file truncated there
     * would pass), so it skips all rows but the last, which is read. */
    if (c->output_scanline < h) {
        if (h - c->output_scanline > 1) jpeg_skip_scanlines(c, h - c->output_scanline - 1);
        JSAMPARRAY last = (*c->mem->alloc_sarray)((j_common_ptr)c, JPOOL_IMAGE, pw * 4, 1);
        if (jpeg_read_scanlines(c, last, 1) != 1)
            return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt JPEG (no rows decoded at row %u)", name, c->output_scanline);
    }
    jpeg_finish_decompress(c); /* reads up to the end-of-image marker: a missing one is truncation */
    out->width = (int)pw;
    out->height = (int)ph;
    if (is_part) {
        out->x0 = part.x0, out->y0 = part.y0;
        out->full_width = (int)w, out->full_height = (int)h;
    }
    return SWIN_OK;
}

swin_status swin_jpeg_decode(const uint8_t *data, size_t size, const char *name,
                             const swin_preprocess_params *part_for, swin_image_alloc_fn alloc, void *ctx,
                             swin_image *out, int *custom) {
    *out = (swin_image){0};
    *custom = 0;
    decoder d;
    decoder_init(&d);
    swin_status st = run(&d, data, size, name, part_for, alloc, ctx, out, custom);
    jpeg_destroy_decompress(&d.cinfo);
    if (st != SWIN_OK) {
        if (*custom) *out = (swin_image){0}; /* the allocator's memory stays the allocator's */
        else swin_image_free(out);
        *custom = 0;
    }
    return st;
}

// ---- coefficients only (jpeg.h): entropy decoding, the rest left to jpeg_exact.h

/* With the header read: refuse (SWIN_ERR_UNSUPPORTED) a layout the split decode does not cover,
 * else fill r's layout (everything but the quantisation tables) and the sizes. */
static swin_status split_layout(const struct jpeg_decompress_struct *c, const char *name, swin_jx_image *r,
                                size_t *n_coef, size_t *scratch_bytes) {
    const int nc = c->num_components;
    int ok = c->data_precision == 8 && (nc == 1 || (nc == 3 && (c->jpeg_color_space == JCS_YCbCr ||
                                                                 c->jpeg_color_space == JCS_RGB)));
    for (int i = 0; ok && i < nc; i++) {
        const jpeg_component_info *ci = &c->comp_info[i];
        r->fx[i] = c->max_h_samp_factor / ci->h_samp_factor, r->fy[i] = c->max_v_samp_factor / ci->v_samp_factor;
        ok = (r->fx[i] == 1 || r->fx[i] == 2) && (r->fy[i] == 1 || r->fy[i] == 2) &&
             r->fx[i] * ci->h_samp_factor == c->max_h_samp_factor && r->fy[i] * ci->v_samp_factor == c->max_v_samp_factor;
    }
    if (!ok)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: JPEG layout not covered by the split decode (%d components, "
                         "colour space %d, %d-bit)", name, nc, (int)c->jpeg_color_space, c->data_precision);
    r->w = (int)c->image_width, r->h = (int)c->image_height, r->nc = nc;
    r->ycc = nc == 3 && c->jpeg_color_space == JCS_YCbCr;
    *n_coef = *scratch_bytes = 0;
    for (int i = 0; i < nc; i++) {
        const jpeg_component_info *ci = &c->comp_info[i];
        r->dw[i] = (int)ci->downsampled_width, r->dh[i] = (int)ci->downsampled_height;
        r->bw[i] = (int)ci->width_in_blocks, r->bh[i] = (int)ci->height_in_blocks;
        r->coef[i] = (long long)*n_coef;
        r->plane[i] = (long long)*scratch_bytes;
        *n_coef += (size_t)r->bw[i] * r->bh[i] * 64;
        *scratch_bytes += (size_t)r->bw[i] * r->bh[i] * 64;   /* 8 x 8 samples a block */
    }
    return SWIN_OK;
}

static swin_status run_coefs(decoder *d, const uint8_t *data, size_t size, const char *name, swin_jpeg_coefs *out) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    if (setjmp(d->err.jump)) return jump_status(d, name);
    read_header(d, data, size);
    const int nc = c->num_components;
    swin_status st = swin_image_check_size(name, "JPEG", (long)c->image_width, (long)c->image_height);
    if (st != SWIN_OK) return st;
    swin_jx_image *r = &out->rec;
    SWIN_TRY(split_layout(c, name, r, &out->n_coef, &out->scratch_bytes));
    jvirt_barray_ptr *arrays = jpeg_read_coefficients(c);
    for (int i = 0; i < nc; i++) {   /* the tables latched when the component's first scan began */
        const jpeg_component_info *ci = &c->comp_info[i];
        if (!ci->quant_table)
            return swin_fail(SWIN_ERR_IMAGE, "%s: corrupt JPEG (no quantisation table for component %d)", name, i);
        for (int k = 0; k < 64; k++) r->quant[i][k] = ci->quant_table->quantval[k];
    }
    out->buf = malloc(out->n_coef * sizeof(int16_t));
    if (!out->buf) return swin_fail(SWIN_ERR_MEMORY, "%s: out of memory (%zu coefficients)", name, out->n_coef);
    int16_t *q = out->buf;
    for (int i = 0; i < nc; i++)
        for (int by = 0; by < r->bh[i]; by++) {
            JBLOCKARRAY row = (*c->mem->access_virt_barray)((j_common_ptr)c, arrays[i], (JDIMENSION)by, 1, FALSE);
            for (int bx = 0; bx < r->bw[i]; bx++, q += 64)
                for (int k = 0; k < 64; k++) q[k] = row[0][bx][k];
        }
    jpeg_finish_decompress(c); /* as swin_jpeg_decode: a missing end-of-image marker is truncation */
    return SWIN_OK;
}

swin_status swin_jpeg_read_coefs(const uint8_t *data, size_t size, const char *name, swin_jpeg_coefs *out) {
    *out = (swin_jpeg_coefs){0};
    decoder d;
    decoder_init(&d);
    swin_status st = run_coefs(&d, data, size, name, out);
    jpeg_destroy_decompress(&d.cinfo);
    if (st != SWIN_OK) swin_jpeg_coefs_free(out);
    return st;
}

void swin_jpeg_coefs_free(swin_jpeg_coefs *c) {
    if (!c) return;
    free(c->buf);
    *c = (swin_jpeg_coefs){0};
}


// ---- the scan for jpeg_huff.h's decoder: libjpeg reads the header, the decoder the data

/* libjpeg's jpeg_make_d_derived_tbl for table h into t: 0, or -1 for a table libjpeg refuses */
static int derive_table(const JHUFF_TBL *h, int dc, swin_jh_table *t) {
    int size[257], code[256], p = 0;
    for (int l = 1; l <= 16; l++) {
        int n = h->bits[l];
        if (n < 0 || p + n > 256) return -1;
        while (n--) size[p++] = l;
    }
    size[p] = 0;
    const int n_sym = p;
    int c = 0, si = size[0];
    p = 0;
    while (size[p]) {
        while (size[p] == si) code[p++] = c++;
        if (c >= 1 << si) return -1;
        c <<= 1;
        si++;
    }
    memset(t, 0, sizeof *t);
    p = 0;
    for (int l = 1; l <= 16; l++) {
        if (h->bits[l]) {
            t->valoffset[l] = p - code[p];
            p += h->bits[l];
            t->maxcode[l] = code[p - 1];
        } else {
            t->maxcode[l] = -1;
        }
    }
    t->maxcode[17] = 0xFFFFF;
    for (int i = 0; i < n_sym; i++) {
        const int v = h->huffval[i];
        if (dc && v > 15) return -1;
        t->huffval[i] = (uint8_t)v;
        if (size[i] > SWIN_JH_LOOK) continue;
        const int shift = SWIN_JH_LOOK - size[i];
        for (int k = 0; k < 1 << shift; k++) t->look[(code[i] << shift) | k] = (uint16_t)(size[i] << 8 | v);
    }
    return 0;
}

static swin_status run_scan(decoder *d, const uint8_t *data, size_t size, const char *name, swin_jpeg_scan *out) {
    struct jpeg_decompress_struct *c = &d->cinfo;
    if (setjmp(d->err.jump)) return jump_status(d, name);
    read_header(d, data, size);
    swin_status st = swin_image_check_size(name, "JPEG", (long)c->image_width, (long)c->image_height);
    if (st != SWIN_OK) return st;
    swin_jh_image *m = &out->img;
    SWIN_TRY(split_layout(c, name, &m->rec, &out->n_coef, &out->scratch_bytes));
    const int nc = c->num_components;
    if (c->progressive_mode || c->arith_code || c->comps_in_scan != nc || c->Ss != 0 || c->Se != 63 || c->Ah != 0 ||
        c->Al != 0)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: not one baseline scan of every component", name);
    for (int i = 0; i < nc; i++) {   /* the tables as they stand when the scan begins */
        const int no = c->comp_info[i].quant_tbl_no;   /* as read from the frame header: unchecked */
        const JQUANT_TBL *qt = no >= 0 && no < NUM_QUANT_TBLS ? c->quant_tbl_ptrs[no] : NULL;
        if (!qt) return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: no quantisation table for component %d", name, i);
        for (int k = 0; k < 64; k++) m->rec.quant[i][k] = qt->quantval[k];
    }
    int dc_at[NUM_HUFF_TBLS], ac_at[NUM_HUFF_TBLS];
    for (int i = 0; i < NUM_HUFF_TBLS; i++) dc_at[i] = ac_at[i] = -1;
    m->ns = nc;
    for (int s = 0; s < nc; s++) {
        const jpeg_component_info *ci = c->cur_comp_info[s];
        m->comp[s] = ci->component_index;
        m->hs[s] = nc == 1 ? 1 : ci->h_samp_factor;
        m->vs[s] = nc == 1 ? 1 : ci->v_samp_factor;
        for (int ac = 0; ac < 2; ac++) {
            const int no = ac ? ci->ac_tbl_no : ci->dc_tbl_no;
            int *at = ac ? ac_at : dc_at;
            const JHUFF_TBL *h = no >= 0 && no < NUM_HUFF_TBLS ? (ac ? c->ac_huff_tbl_ptrs : c->dc_huff_tbl_ptrs)[no] : NULL;
            if (!h) return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: no Huffman table for component %d", name, s);
            if (at[no] < 0) {
                if (derive_table(h, !ac, &out->tables[out->n_tables]) != 0)
                    return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: a Huffman table libjpeg refuses", name);
                at[no] = out->n_tables++;
            }
            (ac ? m->ac : m->dc)[s] = at[no];
        }
    }
    if (nc == 1) {
        m->mcux = m->rec.bw[0], m->mcuy = m->rec.bh[0];
    } else {
        m->mcux = (int)((c->image_width + 8 * c->max_h_samp_factor - 1) / (8 * c->max_h_samp_factor));
        m->mcuy = (int)((c->image_height + 8 * c->max_v_samp_factor - 1) / (8 * c->max_v_samp_factor));
    }
    m->restart = (int)c->restart_interval;
    m->table = 0;
    m->data = (long long)(c->src->next_input_byte - data);   /* right after the SOS segment */
    m->data_len = (long long)c->src->bytes_in_buffer;
    if (m->data < 0 || (size_t)(m->data + m->data_len) != size)
        return swin_fail(SWIN_ERR_UNSUPPORTED, "%s: the scan's data is not where expected", name);
    return SWIN_OK;
}

swin_status swin_jpeg_read_scan(const uint8_t *data, size_t size, const char *name, swin_jpeg_scan *out) {
    memset(out, 0, sizeof *out);
    decoder d;
    decoder_init(&d);
    swin_status st = run_scan(&d, data, size, name, out);
    jpeg_destroy_decompress(&d.cinfo);
    return st;
}
