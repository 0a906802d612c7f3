/*
 * `uform train` over a mesh: the flags (--mesh DIR --job NAME --index I --count K [--mesh-timeout S]
 * [--mesh-address IP], or --processes K for K local members), the bootstrap and the line that prints
 * the mesh's shape, each member's share of a global batch, and the launcher behind --processes.
 */
#ifndef UFORM_TOOLS_TRAIN_MESH_H
#define UFORM_TOOLS_TRAIN_MESH_H

#include <stddef.h>

#include "uform/uform.h"

typedef struct train_mesh_t {
    const char *directory, *job, *address;
    size_t index, count, processes;
    double timeout;
    int have_index, have_count;
    uform_mesh_t mesh;   /* after train_mesh_join; NULL without --mesh */
} train_mesh_t;

/* The usage and help lines of the mesh's flags. */
extern const char train_mesh_usage[];
extern const char train_mesh_help[];

/* Whether `flag` takes a value and is one of the mesh's. */
int train_mesh_is_flag(const char *flag);

/* Takes one of the mesh's flags and its value; answers 0, or -1 for a bad value. */
int train_mesh_flag(train_mesh_t *mesh, const char *flag, const char *value);

/* Checks the combination after parsing; answers 0, or -1 with the reason in `why`. */
int train_mesh_check(const train_mesh_t *mesh, int skip_bad, char *why, size_t capacity);

/* --processes K: runs K members of this same command line over a temporary folder on 127.0.0.1,
 * prefixing their output lines with "[i] ", and answers the run's exit status (the first failing
 * member's; the others are stopped a few seconds after it). `argv` is the train command's. */
int train_mesh_launch(const train_mesh_t *mesh, int argc, char **argv);

/* With --mesh: bootstraps (the trainer config and the command's `agreement` lines are compared between
 * members) and prints the mesh's shape unless `quiet`. Answers 0, or 1 after printing the failure.
 * Without --mesh: nothing, 0. */
int train_mesh_join(train_mesh_t *mesh, uform_executor_t executor, const uform_trainer_config_t *config,
                    const char *agreement, int quiet);

/* This member's contiguous share [first, end) of a global batch of `count` lines. */
void train_mesh_share(const train_mesh_t *mesh, size_t count, size_t *first, size_t *end);

/* Whether this process writes --out, the log, evaluations and the summary (member 0, or no mesh). */
int train_mesh_leads(const train_mesh_t *mesh);

void train_mesh_free(train_mesh_t *mesh);

#endif
