/* config.h - model configuration: timm / Hugging Face config.json parsing, architecture presets,
 * parameter and FLOP counts computed from a configuration alone.
 *
 * A parsed configuration may leave fields unknown (0, or -1 for the flags qkv_bias / ape); the
 * loader then infers them from tensor shapes (model_load.c) and swin_config_finish() fills
 * defaults and validates. Test: tests/test_malformed.c (config cases), tests/cli_info.sh.
 */
#ifndef SWIN_CONFIG_H
#define SWIN_CONFIG_H

#include <stdint.h>
#include "swin.h"

/* ---- presets (models/presets.c): timm's standard architectures with their defaults */
typedef struct {
    const char *name;          /* timm architecture, e.g. "swin_tiny_patch4_window7_224" */
    int version;               /* 1 or 2 */
    int img_size, patch_size, window_size, embed_dim, num_stages;
    int depths[SWIN_MAX_STAGES], num_heads[SWIN_MAX_STAGES];
    int pretrained_window_sizes[SWIN_MAX_STAGES];
    int num_classes;           /* timm default head (1000, or 21841 for the in22k V2 models) */
    float crop_pct;            /* timm pretrained_cfg crop_pct */
} swin_preset;

const swin_preset *swin_preset_find(const char *name);   /* NULL if not a preset */
int swin_preset_count(void);
const swin_preset *swin_preset_at(int i);
/* cfg <- preset with timm's preprocessing defaults (bicubic, ImageNet mean/std). */
void swin_config_from_preset(const swin_preset *p, swin_config *cfg);

/* ---- labels: ImageNet-1k class names compiled in (models/imagenet_labels.c) */
extern const char *const swin_imagenet_labels[1000];

/* ---- config.json */
typedef struct {
    swin_config cfg;     /* unknown fields 0 (qkv_bias, ape: -1) */
    char **labels;       /* [num_labels] from id2label / label_names, or NULL; heap */
    int num_labels;
} swin_parsed_config;

/* Parse config.json at path (timm or Hugging Face layout) and, for an HF config, an optional
 * preprocessor_config.json in the same directory. Errors: SWIN_ERR_IO, SWIN_ERR_CONFIG naming
 * the file and field. out is zeroed first; free with swin_parsed_config_free even on failure. */
swin_status swin_config_parse_file(const char *path, swin_parsed_config *out);
/* The same from memory; name is used in messages, dir (may be NULL) locates preprocessor_config.json. */
swin_status swin_config_parse_json(const char *text, size_t len, const char *name, const char *dir,
                                   swin_parsed_config *out);
/* A preset by name for a bare .safetensors file; num_classes left 0 (taken from the head). */
swin_status swin_config_parse_arch(const char *arch, swin_parsed_config *out);
void swin_parsed_config_free(swin_parsed_config *p);

/* Fill defaults for fields still unknown (qkv_bias 1, ape 0, mlp_ratio 4, ln_eps 1e-5, ...) and
 * validate ranges; what names the source in messages. SWIN_ERR_CONFIG when a required field
 * (img_h / img_w, embed_dim, depths, ...) is still unknown or out of range. */
swin_status swin_config_finish(swin_config *cfg, const char *what);

/* Parameters as timm counts them (q/v biases, not the k zeros, for V2) and 2 x multiply-adds
 * of one image (every GEMM incl. QK^T, PV and the patch-embed conv). cfg must be finished. */
int64_t swin_config_param_count(const swin_config *cfg);
double swin_config_gflops(const swin_config *cfg);

#endif
