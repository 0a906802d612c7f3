/* Held-out evaluation for `uform train --eval`: the recall table (uform_evaluate) printed per modality
 * pair and, with --eval-log, one JSON line per set and modality for programs. */
#ifndef UFORM_TOOLS_TRAIN_EVAL_H
#define UFORM_TOOLS_TRAIN_EVAL_H

#include <stdint.h>
#include <stdio.h>

#include "uform/uform.h"

/* Snapshots the trainer's weights into a model (of `compute`) and evaluates `dataset`: prints, for
 * every modality with held-out pairs, R@1 and R@5 text→media and media→text (a hit is any item whose
 * caption equals the query's), each line ending with " (label)" when `label` is given, and appends
 * {"step", "set", "modality", "pairs", "text_to_media": {"1":…, "5":…}, "media_to_text": {…}} lines to
 * `log` (may be NULL). Answers 0, or 1 after printing why it failed. */
int train_evaluate(uform_trainer_t trainer, uform_executor_t executor, uform_dataset_t dataset, uform_compute_t compute,
                   uint64_t step, const char *label, FILE *log);

#endif
