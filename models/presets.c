/* presets.c - timm's standard Swin V1 / V2 architectures with their default configurations
 * (timm 1.0: swin_transformer.py / swin_transformer_v2.py model_args and default pretrained_cfg).
 * img_size is the pretrained_cfg input size; crop_pct the pretrained_cfg crop; all use bicubic
 * resizing and ImageNet mean/std. Parameter counts of these presets are checked against timm in
 * tests/cli_info.sh.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"

#define D_T {2, 2, 6, 2}
#define D_S {2, 2, 18, 2}
#define H_T {3, 6, 12, 24}
#define H_B {4, 8, 16, 32}
#define H_L {6, 12, 24, 48}
#define PW0 {0, 0, 0, 0}
#define PW12 {12, 12, 12, 6}

static const swin_preset PRESETS[] = {
    /* name                                 ver img  p  win  C  st depths heads  pretrained  cls  crop */
    {"swin_tiny_patch4_window7_224",         1, 224, 4,  7,  96, 4, D_T, H_T, PW0, 1000, 0.9f},
    {"swin_small_patch4_window7_224",        1, 224, 4,  7,  96, 4, D_S, H_T, PW0, 1000, 0.9f},
    {"swin_base_patch4_window7_224",         1, 224, 4,  7, 128, 4, D_S, H_B, PW0, 1000, 0.9f},
    {"swin_base_patch4_window12_384",        1, 384, 4, 12, 128, 4, D_S, H_B, PW0, 1000, 1.0f},
    {"swin_large_patch4_window7_224",        1, 224, 4,  7, 192, 4, D_S, H_L, PW0, 1000, 0.9f},
    {"swin_large_patch4_window12_384",       1, 384, 4, 12, 192, 4, D_S, H_L, PW0, 1000, 1.0f},
    {"swinv2_tiny_window8_256",              2, 256, 4,  8,  96, 4, D_T, H_T, PW0, 1000, 0.9f},
    {"swinv2_tiny_window16_256",             2, 256, 4, 16,  96, 4, D_T, H_T, PW0, 1000, 0.9f},
    {"swinv2_small_window8_256",             2, 256, 4,  8,  96, 4, D_S, H_T, PW0, 1000, 0.9f},
    {"swinv2_small_window16_256",            2, 256, 4, 16,  96, 4, D_S, H_T, PW0, 1000, 0.9f},
    {"swinv2_base_window8_256",              2, 256, 4,  8, 128, 4, D_S, H_B, PW0, 1000, 0.9f},
    {"swinv2_base_window16_256",             2, 256, 4, 16, 128, 4, D_S, H_B, PW0, 1000, 0.9f},
    {"swinv2_base_window12_192",             2, 192, 4, 12, 128, 4, D_S, H_B, PW0, 21841, 0.9f},
    {"swinv2_base_window12to16_192to256",    2, 256, 4, 16, 128, 4, D_S, H_B, PW12, 1000, 0.9f},
    {"swinv2_base_window12to24_192to384",    2, 384, 4, 24, 128, 4, D_S, H_B, PW12, 1000, 1.0f},
    {"swinv2_large_window12_192",            2, 192, 4, 12, 192, 4, D_S, H_L, PW0, 21841, 0.9f},
    {"swinv2_large_window12to16_192to256",   2, 256, 4, 16, 192, 4, D_S, H_L, PW12, 1000, 0.9f},
    {"swinv2_large_window12to24_192to384",   2, 384, 4, 24, 192, 4, D_S, H_L, PW12, 1000, 1.0f},
};

#define N_PRESETS ((int)(sizeof PRESETS / sizeof PRESETS[0]))

int swin_preset_count(void) { return N_PRESETS; }

const swin_preset *swin_preset_at(int i) { return (i >= 0 && i < N_PRESETS) ? &PRESETS[i] : NULL; }

const swin_preset *swin_preset_find(const char *name) {
    if (!name) return NULL;
    /* timm also accepts "name.tag" (e.g. swin_tiny_patch4_window7_224.ms_in1k) */
    size_t len = strcspn(name, ".");
    for (int i = 0; i < N_PRESETS; i++)
        if (strlen(PRESETS[i].name) == len && !strncmp(PRESETS[i].name, name, len)) return &PRESETS[i];
    return NULL;
}

void swin_config_from_preset(const swin_preset *p, swin_config *c) {
    memset(c, 0, sizeof *c);
    c->version = p->version;
    snprintf(c->arch, sizeof c->arch, "%s", p->name);
    c->img_h = c->img_w = p->img_size;
    c->family = SWIN_FAMILY_TIMM;
    c->patch_size = p->patch_size;
    c->in_chans = 3;
    c->embed_dim = p->embed_dim;
    c->num_stages = p->num_stages;
    for (int s = 0; s < SWIN_MAX_STAGES; s++) {
        c->depths[s] = p->depths[s];
        c->num_heads[s] = p->num_heads[s];
        c->pretrained_window_sizes[s] = p->pretrained_window_sizes[s];
    }
    c->window_size = p->window_size;
    c->mlp_ratio = 4.0f;
    c->qkv_bias = 1;
    c->ln_eps = 1e-5f;
    c->ape = 0;
    c->num_classes = p->num_classes;
    c->pre_style = SWIN_PRE_TIMM;
    c->interp = SWIN_INTERP_BICUBIC;
    c->crop_pct = p->crop_pct;
    const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    memcpy(c->mean, mean, sizeof mean);
    memcpy(c->std, std, sizeof std);
}
