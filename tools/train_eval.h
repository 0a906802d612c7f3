/* Held-out evaluation for `uform train --eval`: recall@1 and @5 per modality pair. */
#ifndef UFORM_TOOLS_TRAIN_EVAL_H
#define UFORM_TOOLS_TRAIN_EVAL_H

#include <stdint.h>

#include "train_manifest.h"
#include "uform/uform.h"

/* Snapshots the trainer's weights into a model and prints, for every modality with held-out pairs,
 * R@1 and R@5 text→media and media→text, where a hit is any item whose caption equals the query's
 * (captions repeat when attributes do); `label` (may be NULL) ends each line in parentheses.
 * Answers 0, or 1 after printing why it failed. */
int train_evaluate(uform_trainer_t trainer, uform_executor_t executor, const manifest_t *heldout, int bf16,
                   uint64_t step, int skip_bad, const char *label);

#endif
