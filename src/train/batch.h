/*
 * A step's batch: validation of everything the caller passed (docs/training.md: anything inconsistent
 * is UFORM_INVALID_ARGUMENT naming the field and index, before anything changes), and the plan of
 * the sequences the trunk runs. Private to libuform.
 *
 * Sequences are ordered: the embedding sequences of every content in a bag, grouped by modality
 * (text, image, video, audio; within a modality in content order), then the choice sequences
 * (text contents with choices, in content order). So embedding sequence i is sequence i, each
 * modality's embedding sequences are one contiguous range of tokens, and the choice sequences are
 * the batch's last tokens.
 */
#ifndef UFORM_TRAIN_BATCH_H
#define UFORM_TRAIN_BATCH_H

#include "train/trainer.h"

typedef struct uform__sequence_t {
    size_t content;             /* index into the contents */
    uform_modality_t modality;
    int choose;                 /* [CLS] last bytes [NEXT] for the choice loss, else an embedding */
    size_t bag;                 /* embedding sequences: the bag it belongs to */
    size_t first_token, tokens; /* its rows of the packed batch */
    size_t first_patch;         /* media: its first row of its modality's patch matrix */
} uform__sequence_t;

typedef struct uform__batch_plan_t {
    size_t contents;            /* n */
    size_t bags;                /* B (n when the request has no bags) */
    size_t sequences;           /* S = embeddings + choices */
    size_t embeddings, choices;
    size_t tokens;              /* T */
    uform__sequence_t *sequence;   /* [S] */
    size_t *token_offsets;      /* [S + 1] */
    size_t modality_first[4], modality_count[4]; /* each modality's embedding sequences */
    size_t patch_rows[4];       /* media: patch rows of each modality (tokens minus CLS rows) */
    size_t *bag_offsets;        /* [B + 1] into bag_members */
    size_t *bag_members;        /* [embeddings]: embedding sequence indices grouped by bag */
    uint8_t *sides;             /* [B]; all 0 without sides */
    int have_sides;
    size_t relations;
    const size_t *lefts, *rights, *groups; /* borrowed from the request (groups may be NULL) */
    const uform_tape_t *choice_tape;       /* borrowed; NULL without choices */
    const uint8_t *targets;
    uint32_t *text_ids;         /* [T]: the byte or special id of every text token (others unused) */
    uint32_t *position_ids;     /* [T]: the row of the position table (video: of video.space) */
    uint32_t *time_ids;         /* [patch_rows[VIDEO]]: the row of video.time per video patch */
    size_t *keep;               /* [S]: absolute index of each sequence's read row ([CLS] or [NEXT]) */
} uform__batch_plan_t;

/* Checks the request against the trainer's model (see uform_trainer_step in uform.h). */
uform_status_t uform__train_batch_check(uform_trainer_t trainer, const uform_trainer_step_t *request,
                                        uform_outcome_t *outcome, const char *function);

/* Builds the plan of a checked request (allocates; free with uform__train_batch_free). */
uform_status_t uform__train_batch_plan(uform_trainer_t trainer, const uform_trainer_step_t *request,
                                       uform__batch_plan_t *plan, uform_outcome_t *outcome, const char *function);
void uform__train_batch_free(uform__batch_plan_t *plan);

#endif
