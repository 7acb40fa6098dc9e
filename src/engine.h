/* engine.h - the CUDA engine behind a session (src/cuda/engine.c). Internal.
 * A CPU-only build has no engine: session.c reports SWIN_ERR_NO_DEVICE instead. */
#ifndef SWIN_ENGINE_H
#define SWIN_ENGINE_H

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct swin_engine swin_engine;

swin_status swin_engine_create(const swin_model *m, const swin_session_options *o, swin_engine **out);
void swin_engine_free(swin_engine *e);
/* host in [B,3,S,S] fp32 -> host logits [B,classes] fp32 */
swin_status swin_engine_forward(swin_engine *e, const float *input, int B, float *logits);
swin_status swin_engine_describe(const swin_engine *e, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
