/*
 * The model's hyperparameters, read from the checkpoint's "uform.config" JSON (docs/model.md).
 * Keys are fixed so checkpoints written by other tools load; unknown keys are ignored.
 */
#ifndef UFORM_MODEL_CONFIG_H
#define UFORM_MODEL_CONFIG_H

#include <stddef.h>

#include "uform/uform.h"

#define UFORM__MODEL_MAX_MATRYOSHKA 8

/* Whisper's STFT geometry, fixed by docs/preprocessing.md: a window of 400 samples every 160 at 16 kHz. */
#define UFORM__AUDIO_N_FFT 400
#define UFORM__AUDIO_HOP 160
/* Log-mel frames per audio token. */
#define UFORM__AUDIO_FRAMES_PER_TOKEN 4

/* Text token ids beyond the 256 byte values. */
#define UFORM__TEXT_CLS 256
#define UFORM__TEXT_NEXT 257
#define UFORM__TEXT_VOCABULARY 260

typedef struct uform__model_config_t {
    char size[16];
    size_t hidden, depth, heads, mlp, embedding;
    size_t matryoshka[UFORM__MODEL_MAX_MATRYOSHKA];
    size_t matryoshka_count;
    size_t temperature_groups;
    double norm_eps;
    unsigned modalities; /* bit (1 << uform_modality_t) */
    size_t text_bytes;
    size_t image_size, image_patch;
    float image_mean[3], image_std[3];
    size_t video_size, video_patch, video_frames, video_tubelet;
    float video_mean[3], video_std[3];
    size_t audio_rate, audio_seconds, audio_mels;
} uform__model_config_t;

/* Parses and checks a config (NUL-terminated JSON). UFORM_FORMAT names the key that is missing,
 * of the wrong type, or inconsistent ("image.size 30 is not a multiple of image.patch 8");
 * UFORM_OUT_OF_MEMORY when the JSON could not be parsed for lack of memory. */
uform_status_t uform__model_config_parse(const char *json, uform__model_config_t *config, uform_outcome_t *outcome,
                                         const char *function);

/* Writes the config as JSON into a malloc'ed string (NULL when memory runs out). */
char *uform__model_config_print(const uform__model_config_t *config);

/* The named sizes of docs/model.md ("tiny", "small", "base"); UFORM_INVALID_ARGUMENT for another name. */
uform_status_t uform__model_config_named(const char *size, uform__model_config_t *config, uform_outcome_t *outcome,
                                         const char *function);

/* Writes the config's fields into a public description (the rest of it is left as it was). */
void uform__model_config_describe(const uform__model_config_t *config, uform_model_description_t *description);

/* Tokens per item of each modality (including CLS). */
size_t uform__model_image_tokens(const uform__model_config_t *config);
size_t uform__model_video_tokens(const uform__model_config_t *config);
size_t uform__model_audio_tokens(const uform__model_config_t *config);
/* Audio samples after resampling and padding: rate · seconds. */
size_t uform__model_audio_samples(const uform__model_config_t *config);

#endif
