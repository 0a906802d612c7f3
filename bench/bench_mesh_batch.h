/* What bench_mesh's modes share (bench_mesh_batch.c): the batches they step, timing them, medians. */
#ifndef UFORM_BENCH_MESH_BATCH_H
#define UFORM_BENCH_MESH_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "bench_clock.h"
#include "uform/uform.h"

#define BENCH_MESH_PAIRS 24       /* tiny: pairs of a caption and a 32x32 JPEG a step */
#define BENCH_MESH_SMALL_PAIRS 12 /* small: pairs of 64-byte texts a step */

typedef struct bench_batch_t {
    unsigned char *data;
    size_t used, count, pairs;
    size_t offsets[2 * BENCH_MESH_PAIRS + 1], bags[2 * BENCH_MESH_PAIRS + 1];
    size_t lefts[BENCH_MESH_PAIRS], rights[BENCH_MESH_PAIRS];
    uform_modality_t modalities[2 * BENCH_MESH_PAIRS];
    uint8_t sides[2 * BENCH_MESH_PAIRS];
} bench_batch_t;

/* What a run of steps measured: medians over the timed steps (the first is a warm-up). */
typedef struct bench_steps_t {
    double seconds, flops, waited, exchange, backward;
} bench_steps_t;

double bench_median(double *values, size_t count);

/* Pairs [first, end) of the global batch: images (tiny) or texts (small); sides 0 and 1. Free
 * batch->data. */
void bench_batch_make(bench_batch_t *batch, int images, size_t first, size_t end);

/* One step: its seconds and stats; negative after a failed step (printed). */
double bench_batch_step(uform_trainer_t trainer, uform_arena_t arena, const bench_batch_t *batch,
                        uform_trainer_stats_t *stats);

/* `steps` timed steps after one warm-up into *measured; 0, or -1 after a failed step (printed). */
int bench_batch_steps(uform_trainer_t trainer, uform_arena_t arena, const bench_batch_t *batch, size_t steps,
                      bench_steps_t *measured);

/* A BF16 trainer of `size` with seed 1 over `mesh` (NULL: alone); NULL after printing the failure. */
uform_trainer_t bench_trainer(uform_executor_t executor, const char *size, uform_mesh_t mesh);

/* Runs `count` members as forked children: child i runs member(i, context, result), `result` being
 * `bytes` zeroed bytes it fills, and exits with member's answer; its result comes back through
 * folder/result.{i} into results + i * bytes. A child still running `limit` seconds after the start
 * is killed. Answers 0 when every child exited 0 and gave its result. */
int bench_members_run(const char *folder, size_t count, size_t bytes, int (*member)(size_t, void *, void *),
                      void *context, void *results, double limit);

#endif
