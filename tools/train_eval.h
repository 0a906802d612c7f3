/* Held-out evaluation for `uform train --eval`: the recall table of uform_evaluate's results (which
 * uform_trainer_fit computes and hands to the command's callback) printed per modality pair and,
 * with --eval-log, one JSON line per set and modality for programs. */
#ifndef UFORM_TOOLS_TRAIN_EVAL_H
#define UFORM_TOOLS_TRAIN_EVAL_H

#include <stdint.h>
#include <stdio.h>

#include "uform/uform.h"

/* Prints, for every modality of `results` (by uform_modality_t) with held-out pairs, R@1 and R@5
 * text→media and media→text (ks {1, 5}: a hit is any item whose caption equals the query's), each
 * line ending with " (label)" when `label` is given, and appends {"step", "set", "modality", "pairs",
 * "text_to_media": {"1":…, "5":…}, "media_to_text": {…}} lines to `log` (may be NULL). */
void train_eval_print(const uform_evaluation_t results[4], uint64_t step, const char *label, FILE *log);

#endif
