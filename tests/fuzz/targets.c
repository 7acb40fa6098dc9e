/* targets.c - the fuzz targets (see targets.h). Each one takes arbitrary bytes to a public entry
 * point of libswin and on to what a caller does next with a success (read every tensor, load the
 * model, preprocess the image), so that a half-valid input reaches the code behind the parser.
 *
 *   safetensors          swin_st_open + swin_st_read_f32 of every tensor, then swin_model_load of
 *                        the file next to the tiny model's config.json (V2 when a key holds
 *                        "cpb_mlp", else V1): header, data, name mapping, shape checks
 *   config_timm          swin_config_parse_json (timm and Hugging Face layouts: the seeds decide),
 *   config_hf            swin_config_finish, parameter and FLOP counts, preprocessing plans
 *   preprocessor_config  an HF config.json with this preprocessor_config.json next to it
 *   jpeg, image          swin_image_decode (JPEG, and PNG/BMP/GIF/TGA/PNM: the seeds decide), half
 *                        of them into a caller's allocator, then timm or HF preprocessing to 16x16;
 *                        the part decode for that preprocessing (swin_image_decode_part) must
 *                        give the same verdict and the same preprocessed input (else abort)
 *   jpeg_entropy         the CPU side of the exact GPU JPEG decoder: libjpeg's header
 *                        (swin_jpeg_read_scan), staging, the sequential Huffman decoder and the
 *                        parallel one's CPU emulation, which must agree (else abort)
 *   reference            swin_reference_read for the tiny V1 model
 *   fp8_scales           swin_fp8_scales_read (FP8 scales file, versions 1 and 2) for the tiny V1
 *                        model, then the CPU emulation's weights from what it read; what it accepts
 *                        must hold src/fp8.h's invariants (else abort)
 * Test: tests/test_fuzz_replay.c replays tests/data/fuzz/<target>/; tools/fuzz.sh fuzzes.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include "targets.h"

#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fp8.h"
#include "fp8_session.h"
#include "image.h"
#include "internal.h"   /* swin_fail */
#include "jpeg.h"
#include "jpeg_par.h"
#include "model.h"
#include "preprocess.h"
#include "reference.h"
#include "safetensors.h"

// ---- the tiny model

swin_config swin_fuzz_tiny_config(int version) {
    static const float MEAN[3] = {0.485f, 0.456f, 0.406f}, STD[3] = {0.229f, 0.224f, 0.225f};
    swin_config c;
    memset(&c, 0, sizeof c);
    c.version = version;
    snprintf(c.arch, sizeof c.arch, "%s", version == 2 ? "swinv2_fuzz" : "swin_fuzz");
    c.img_h = c.img_w = 8;
    c.patch_size = 2;
    c.in_chans = 3;
    c.embed_dim = 8;
    c.num_stages = 2;
    c.depths[0] = c.depths[1] = 1;
    c.num_heads[0] = 1;
    c.num_heads[1] = 2;
    c.window_size = 2;
    c.mlp_ratio = 2.0f;
    c.qkv_bias = 1;
    c.ln_eps = 1e-5f;
    c.num_classes = 3;
    c.crop_pct = 0.875f;
    c.interp = SWIN_INTERP_BICUBIC;
    memcpy(c.mean, MEAN, sizeof MEAN);
    memcpy(c.std, STD, sizeof STD);
    return c;
}

const char *swin_fuzz_tiny_config_json(int version) {
    return version == 2
               ? "{\"architecture\": \"swinv2_fuzz\", \"num_classes\": 3, \"model_args\": {\"img_size\": 8, "
                 "\"patch_size\": 2, \"embed_dim\": 8, \"depths\": [1, 1], \"num_heads\": [1, 2], "
                 "\"window_size\": 2, \"mlp_ratio\": 2.0}}"
               : "{\"architecture\": \"swin_fuzz\", \"num_classes\": 3, \"model_args\": {\"img_size\": 8, "
                 "\"patch_size\": 2, \"embed_dim\": 8, \"depths\": [1, 1], \"num_heads\": [1, 2], "
                 "\"window_size\": 2, \"mlp_ratio\": 2.0}}";
}

// ---- a private temporary directory

static char g_dir[512];
static swin_model *g_ref_model;

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void swin_fuzz_cleanup(void) {
    if (g_dir[0]) nftw(g_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    g_dir[0] = '\0';
    swin_model_free(g_ref_model);
    g_ref_model = NULL;
}

/* g_dir/sub (made on first use), or NULL */
static const char *path_of(const char *sub, char *buf, size_t size) {
    if (!g_dir[0]) {   /* memory-backed /dev/shm when there is one: a write per input */
        const char *t = getenv("TMPDIR");
        struct stat sb;
        if (!t || !*t) t = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
        snprintf(g_dir, sizeof g_dir, "%s/swin_fuzz_XXXXXX", t);
        if (!mkdtemp(g_dir)) {
            fprintf(stderr, "swin fuzz: cannot make a directory %s\n", g_dir);
            g_dir[0] = '\0';
            return NULL;
        }
    }
    snprintf(buf, size, "%s/%s", g_dir, sub);
    return buf;
}

/* written over, then cut to size: no truncation to zero first, which makes ext4 flush on close */
static int write_file(const char *path, const void *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    if (fd < 0) return -1;
    const char *p = data;
    size_t left = size;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w <= 0) break;
        p += w;
        left -= (size_t)w;
    }
    int ok = left == 0 && ftruncate(fd, (off_t)size) == 0;
    return close(fd) == 0 && ok ? 0 : -1;
}

/* g_dir/sub/name holding the input; the directory is made once, with `config` (when not NULL) as
 * its config.json. NULL (after a message) when the file system refuses. */
static const char *input_file(const char *sub, const char *config, const char *name, const uint8_t *d, size_t n,
                              char *buf, size_t size) {
    char dir[600], cfg[700];
    if (!path_of(sub, dir, sizeof dir)) return NULL;
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        snprintf(cfg, sizeof cfg, "%s/config.json", dir);
        if (mkdir(dir, 0700) != 0 || (config && write_file(cfg, config, strlen(config)) != 0)) {
            fprintf(stderr, "swin fuzz: cannot write %s\n", dir);
            return NULL;
        }
    }
    snprintf(buf, size, "%s/%s", dir, name);
    if (write_file(buf, d, n) != 0) {
        fprintf(stderr, "swin fuzz: cannot write %s\n", buf);
        return NULL;
    }
    return buf;
}

static void quiet(const char *message, void *user) { (void)message, (void)user; }

static int contains(const uint8_t *d, size_t n, const char *s) {
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(d + i, s, k)) return 1;
    return 0;
}

// ---- the targets

static swin_status fuzz_safetensors(const uint8_t *d, size_t n) {
    int version = contains(d, n, "cpb_mlp") ? 2 : 1;
    char path[800];
    if (!input_file(version == 2 ? "model_v2" : "model_v1", swin_fuzz_tiny_config_json(version), "model.safetensors",
                    d, n, path, sizeof path))
        return SWIN_ERR_IO;
    swin_st *f = NULL;
    swin_status st = swin_st_open(path, &f);
    if (st != SWIN_OK) return st;
    for (int i = 0; i < swin_st_count(f); i++) {
        const swin_st_tensor *t = swin_st_at(f, i);
        float one;
        if (t->numel > ((int64_t)1 << 24)) continue;
        float *dst = t->numel > 0 ? malloc((size_t)t->numel * sizeof *dst) : &one;
        if (dst) swin_st_read_f32(f, t, dst);
        if (dst != &one) free(dst);
        if (swin_st_find(f, t->name) != t) fprintf(stderr, "swin fuzz: swin_st_find misses '%s'\n", t->name), abort();
    }
    swin_st_close(f);
    char dir[800];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    swin_load_options lo = swin_load_options_default();
    lo.warn = quiet;
    swin_model *m = NULL;
    st = swin_model_load(dir, &lo, &m);
    swin_model_free(m);
    return st;
}

static swin_status fuzz_config(const uint8_t *d, size_t n) {
    swin_parsed_config pc;
    swin_status st = swin_config_parse_json((const char *)d, n, "config.json", NULL, &pc);
    if (st == SWIN_OK) st = swin_config_finish(&pc.cfg, "config.json");
    if (st == SWIN_OK) {
        (void)swin_config_param_count(&pc.cfg);
        (void)swin_config_gflops(&pc.cfg);
        swin_preprocess_params pp = swin_preprocess_params_from_config(&pc.cfg);
        static const int SIZES[][2] = {{640, 480}, {1, 16384}, {16384, 1}, {7, 7}};
        for (int i = 0; i < 4; i++) {
            int rw, rh, x0, y0;
            swin_preprocess_plan(&pp, SIZES[i][0], SIZES[i][1], &rw, &rh, &x0, &y0);
        }
    }
    swin_parsed_config_free(&pc);
    return st;
}

static swin_status fuzz_preprocessor_config(const uint8_t *d, size_t n) {
    static const char HF[] = "{\"model_type\": \"swin\", \"image_size\": 8, \"patch_size\": 2, \"embed_dim\": 8, "
                             "\"depths\": [1, 1], \"num_heads\": [1, 2], \"window_size\": 2, \"num_labels\": 3}";
    char path[800];
    if (!input_file("hf", HF, "preprocessor_config.json", d, n, path, sizeof path)) return SWIN_ERR_IO;
    *strrchr(path, '/') = '\0';
    swin_parsed_config pc;
    swin_status st = swin_config_parse_json(HF, sizeof HF - 1, "config.json", path, &pc);
    if (st == SWIN_OK) st = swin_config_finish(&pc.cfg, "config.json");
    swin_parsed_config_free(&pc);
    return st;
}

/* a caller's pixel allocator that runs out: images over its 64 KiB fall back to malloc */
static struct { uint8_t mem[1 << 16]; size_t used; } g_pool;

static void *pool_alloc(void *ctx, size_t bytes) {
    (void)ctx;
    if (bytes > sizeof g_pool.mem - g_pool.used) return NULL;
    void *p = g_pool.mem + g_pool.used;
    g_pool.used += bytes;
    return p;
}

static swin_status fuzz_image(const uint8_t *d, size_t n) {
    swin_preprocess_params p;
    memset(&p, 0, sizeof p);
    p.style = n & 2 ? SWIN_PRE_HF : SWIN_PRE_TIMM;
    p.interp = (swin_interp)(n / 4 % 3);
    p.size = 16;
    p.crop_pct = 0.875f;
    for (int c = 0; c < 3; c++) p.mean[c] = 0.5f, p.std[c] = 0.25f;
    swin_image img;
    int custom = 0;
    g_pool.used = 0;
    swin_status st = n & 1 ? swin_image_decode_into(d, n, "fuzz", pool_alloc, NULL, &img, &custom)
                           : swin_image_decode(d, n, "fuzz", &img);
    /* the part decode (only what p reads) must agree: the same verdict, the same preprocessed input */
    swin_image part;
    int pc = 0;
    swin_status ps = swin_image_decode_part(d, n, "fuzz", &p, NULL, NULL, &part, &pc);
    if ((ps == SWIN_OK) != (st == SWIN_OK))
        fprintf(stderr, "swin fuzz: whole decode %d, part decode %d\n", st, ps), abort();
    if (st != SWIN_OK) {
        if (img.rgb || custom || part.rgb) fprintf(stderr, "swin fuzz: a failed decode left pixels\n"), abort();
        return st;
    }
    float out[3 * 16 * 16], out_part[3 * 16 * 16];
    swin_status pst = swin_preprocess_image(&p, &img, out);
    swin_status pps = swin_preprocess_image(&p, &part, out_part);
    if (pst != pps || (pst == SWIN_OK && memcmp(out, out_part, sizeof out)))
        fprintf(stderr, "swin fuzz: the part decode preprocesses differently (%d, %d)\n", pst, pps), abort();
    if (!custom) swin_image_free(&img);
    swin_image_free(&part);
    return pst == SWIN_OK ? st : pst;
}

/* the parallel decoder's emulation against the sequential verdict e and coefficients a, with
 * pieces of min_bits; a disagreement aborts (a crash to the fuzzer) */
static void entropy_agree(const swin_jpeg_scan *sc, const swin_jh_image *staged, const uint8_t *u, int e,
                          const int16_t *a, int16_t *b, int32_t min_bits) {
    swin_jh_image m = *staged;
    memset(b, 0, sc->n_coef * sizeof *b);
    int rounds;
    int pe = swin_jp_decode_host(&m, u, sc->tables, b, SWIN_JP_THREADS, min_bits, &rounds);
    if (pe == SWIN_JP_NO_SYNC) return;   /* undecided: the caller leaves the image to libjpeg */
    if ((pe == SWIN_JH_OK) != (e == SWIN_JH_OK) || (pe == SWIN_JH_OK && memcmp(a, b, sc->n_coef * sizeof *b))) {
        fprintf(stderr, "swin fuzz: parallel decoder %d (%d-bit pieces), sequential %d\n", pe, (int)min_bits, e);
        abort();
    }
}

static swin_status fuzz_jpeg_entropy(const uint8_t *d, size_t n) {
    static swin_jpeg_scan sc;
    swin_status st = swin_jpeg_read_scan(d, n, "fuzz.jpg", &sc);
    if (st != SWIN_OK) return st;
    if (sc.n_coef > ((size_t)1 << 22))   /* the fuzzer's own bound on time and memory */
        return swin_fail(SWIN_ERR_UNSUPPORTED, "fuzz.jpg: %zu coefficients, over the fuzz limit", sc.n_coef);
    int16_t *a = calloc(sc.n_coef, sizeof *a), *b = calloc(sc.n_coef, sizeof *b);
    uint8_t *u = malloc(swin_jp_stage_cap(&sc.img));
    if (!a || !b || !u) {
        free(a), free(b), free(u);
        return swin_fail(SWIN_ERR_MEMORY, "fuzz.jpg: out of memory");
    }
    int e = swin_jh_decode(&sc.img, d, sc.tables, a);
    swin_jh_image m = sc.img;
    if (sc.img.data_len <= 65536 && swin_jp_stage(d, &m, u) == 0) {
        entropy_agree(&sc, &m, u, e, a, b, SWIN_JP_MIN_BITS);
        entropy_agree(&sc, &m, u, e, a, b, 256);
    }
    free(a), free(b), free(u);
    return e == SWIN_JH_OK ? SWIN_OK : swin_fail(SWIN_ERR_IMAGE, "fuzz.jpg: left to libjpeg (%d)", e);
}

static swin_status tiny_v1(void);

static swin_status fuzz_reference(const uint8_t *d, size_t n) {
    SWIN_TRY(tiny_v1());
    char path[800];
    if (!input_file("reference", NULL, "reference.safetensors", d, n, path, sizeof path)) return SWIN_ERR_IO;
    swin_reference r;
    swin_status st = swin_reference_read(path, g_ref_model, &r);
    swin_reference_free(&r);
    return st;
}

/* the tiny V1 model of the reference and fp8_scales targets, made once */
static swin_status tiny_v1(void) {
    if (g_ref_model) return SWIN_OK;
    swin_config c = swin_fuzz_tiny_config(1);
    return swin_model_random_config(&c, 1, &g_ref_model);
}

static swin_status fuzz_fp8_scales(const uint8_t *d, size_t n) {
    SWIN_TRY(tiny_v1());
    char path[800];
    if (!input_file("fp8_scales", NULL, "scales.json", d, n, path, sizeof path)) return SWIN_ERR_IO;
    const int sites = swin_fp8_sites(g_ref_model, NULL), count = swin_fp8_scale_count(g_ref_model);
    float *scale = malloc(sizeof(float) * (size_t)count);
    swin_fp8_site *site = malloc(sizeof *site * (size_t)sites);
    if (!scale || !site) {
        free(scale), free(site);
        return swin_fail(SWIN_ERR_MEMORY, "fuzz: out of memory");
    }
    swin_fp8_sites(g_ref_model, site);
    swin_status st = swin_fp8_scales_read(g_ref_model, path, scale);
    for (int i = 0; st == SWIN_OK && i < sites; i++) {   /* fp8.h: input scales finite >= FLT_MIN; a qkv
                                                          * site's channel scales all 0 or all like them */
        if (!(isfinite(scale[i]) && scale[i] >= FLT_MIN)) fprintf(stderr, "swin fuzz: scale %d %g\n", i, scale[i]), abort();
        if (site[i].out_off < 0) continue;
        int pos = 0;
        for (int j = 0; j < site[i].N; j++) {
            const float so = scale[site[i].out_off + j];
            if (!(so == 0.0f || (isfinite(so) && so >= FLT_MIN))) fprintf(stderr, "swin fuzz: channel %g\n", so), abort();
            pos += so > 0.0f;
        }
        if (pos != 0 && pos != site[i].N) fprintf(stderr, "swin fuzz: site %d: %d of %d channel scales\n", i, pos,
                                                  site[i].N), abort();
    }
    if (st == SWIN_OK) {
        swin_fp8_forward f;
        st = swin_fp8_emulation_create(g_ref_model, 1, scale, &f, NULL);
        if (st == SWIN_OK) swin_fp8_emulation_free(&f);
    }
    free(scale), free(site);
    return st;
}

const swin_fuzz_target swin_fuzz_targets[] = {
    {"safetensors", fuzz_safetensors, "safetensors reader, then the model loader (tiny V1/V2 config)"},
    {"config_timm", fuzz_config, "config.json parsing and checks (timm seeds)"},
    {"config_hf", fuzz_config, "config.json parsing and checks (Hugging Face seeds)"},
    {"preprocessor_config", fuzz_preprocessor_config, "preprocessor_config.json of an HF model"},
    {"jpeg", fuzz_image, "image decoding (JPEG seeds: libjpeg-turbo) and preprocessing"},
    {"image", fuzz_image, "image decoding (PNG, BMP, GIF, TGA, PNM seeds: stb_image) and preprocessing"},
    {"jpeg_entropy", fuzz_jpeg_entropy, "the exact GPU JPEG decoder's CPU side: header, staging, Huffman "
                                        "decoding sequential and parallel (emulated), which must agree"},
    {"reference", fuzz_reference, "swin verify's reference reader (tiny V1 model)"},
    {"fp8_scales", fuzz_fp8_scales, "the FP8 scales file reader (tiny V1 model), then the emulation's weights"},
};
const int swin_fuzz_target_count = (int)(sizeof swin_fuzz_targets / sizeof swin_fuzz_targets[0]);

const swin_fuzz_target *swin_fuzz_find(const char *name) {
    for (int i = 0; name && i < swin_fuzz_target_count; i++)
        if (!strcmp(swin_fuzz_targets[i].name, name)) return &swin_fuzz_targets[i];
    return NULL;
}
