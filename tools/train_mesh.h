/*
 * `uform train` over a mesh: the flags (--mesh DIR|tcp://HOST:PORT|redis://HOST:PORT|auto [--job NAME]
 * [--index I --count K] [--mesh-timeout S] [--mesh-address IP] [--mesh-overlap backward|none], or
 * --processes K for K local members), the launcher's variables when --index and --count are not
 * given (torchrun, mpirun, srun), the bootstrap and the line that prints the mesh's shape, each
 * member's share of a global batch, and the launcher behind --processes; and --accumulate K, which
 * runs each member's share in K chunks (the step of the whole batch, with a chunk's memory).
 */
#ifndef UFORM_TOOLS_TRAIN_MESH_H
#define UFORM_TOOLS_TRAIN_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

typedef struct train_mesh_t {
    const char *where;         /* --mesh's value */
    const char *directory, *rendezvous, *job, *address;
    size_t index, count, processes;
    size_t threads;            /* the launcher's share of the cores, 0: none */
    double timeout;
    int have_index, have_count;
    int overlap_none;          /* --mesh-overlap none */
    size_t accumulate;         /* --accumulate K (0: the batch at once) */
    uform_mesh_launch_t launch; /* when --index and --count come from a launcher */
    uform_mesh_t mesh;         /* after train_mesh_join; NULL without --mesh */
} train_mesh_t;

/* The usage and help lines of the mesh's flags. */
extern const char train_mesh_usage[];
extern const char train_mesh_help[];

/* Whether `flag` takes a value and is one of the mesh's. */
int train_mesh_is_flag(const char *flag);

/* Takes one of the mesh's flags and its value; answers 0, or -1 for a bad value. */
int train_mesh_flag(train_mesh_t *mesh, const char *flag, const char *value);

/* Checks the combination after parsing and reads a launcher's variables when --index and --count are
 * not given (filling index, count and threads); answers 0, or -1 with the reason in `why`. */
int train_mesh_check(train_mesh_t *mesh, int skip_bad, char *why, size_t capacity);

/* --processes K: runs K members of this same command line over a temporary folder on 127.0.0.1,
 * prefixing their output lines with "[i] ", and answers the run's exit status (the first failing
 * member's; the others are stopped a few seconds after it). `argv` is the train command's. */
int train_mesh_launch(const train_mesh_t *mesh, int argc, char **argv);

/* With --mesh: bootstraps (the trainer config and the command's `agreement` lines are compared between
 * members) and prints the mesh's shape unless `quiet`. Answers 0, or 1 after printing the failure.
 * Without --mesh: nothing, 0. */
int train_mesh_join(train_mesh_t *mesh, uform_executor_t executor, const uform_trainer_config_t *config,
                    const char *agreement, int quiet);

/* Whether this process is a member of a mesh (--mesh). */
int train_mesh_wanted(const train_mesh_t *mesh);

/* This member's contiguous share [first, end) of a global batch of `count` lines. */
void train_mesh_share(const train_mesh_t *mesh, size_t count, size_t *first, size_t *end);

/* Whether this process writes --out, the log, evaluations and the summary (member 0, or no mesh). */
int train_mesh_leads(const train_mesh_t *mesh);

/* After a member was lost: member 0 saved step `step` to `out`; prints the command that resumes
 * (this command's arguments with --resume OUT, and --steps `remaining` when it is not 0). */
void train_mesh_say_resume(int argc, char **argv, const char *out, uint64_t step, size_t remaining);

void train_mesh_free(train_mesh_t *mesh);

#endif
