/*
 * `uform train` over a mesh: the flags (--mesh DIR --job NAME --index I --count K [--mesh-timeout S]
 * [--mesh-address IP], or --processes K for K local members), the bootstrap and the line that prints
 * the mesh's shape, each member's share of a global batch, and the launcher behind --processes.
 */
#ifndef UFORM_TOOLS_TRAIN_MESH_H
#define UFORM_TOOLS_TRAIN_MESH_H

#include <stddef.h>

#include "cli.h"
#include "uform/uform.h"

typedef struct train_mesh_t {
    const char *directory, *job, *address;
    size_t index, count, processes;
    double timeout;
    int have_index, have_count;
    uform_mesh_t mesh;   /* after train_mesh_join; NULL without --mesh */
} train_mesh_t;

/* The mesh's flags, for the train command's table: they fill the train_mesh_t `field` of `type`. */
#define TRAIN_MESH_FLAGS(type, field)                                                                                  \
    CLI_HEADING("Data-parallel training (the mesh):"),                                                                 \
    CLI_FLAG("--mesh", CLI_TEXT, type, field.directory, "DIR",                                                         \
             "a folder every member can reach (a shared file system across hosts) where\n"                             \
             "the members meet; the job's folder in it is removed once they have met"),                                \
    CLI_FLAG("--job", CLI_TEXT, type, field.job, "NAME",                                                               \
             "the run's name (one path component); a folder left by a failed run of the\n"                             \
             "same name is refused: remove it or choose another name"),                                                \
    CLI_FLAG("--index", CLI_SIZE, type, field.index, "I", "this member, in 0..K-1"),                                    \
    CLI_FLAG("--count", CLI_POSITIVE, type, field.count, "K", "members of the run"),                                    \
    CLI_FLAG("--mesh-timeout", CLI_POSITIVE_NUMBER, type, field.timeout, "S",                                          \
             "how long to wait for every member to arrive, and for a peer's answer in a\n"                             \
             "step, before failing (default 120)"),                                                                    \
    CLI_FLAG("--mesh-address", CLI_TEXT, type, field.address, "IP",                                                    \
             "the address this member's collectives listen on, reachable from the other\n"                             \
             "hosts (default: the host's first non-loopback IPv4 address)"),                                           \
    CLI_FLAG("--processes", CLI_POSITIVE, type, field.processes, "K",                                                  \
             "start K local members of this same command over a temporary folder on\n"                                 \
             "127.0.0.1, their output prefixed with [i]; --threads defaults to the cores / K.\n"                        \
             "The run fails as a whole when a member fails")

/* What --help says about the mesh after the flags. */
#define TRAIN_MESH_HELP                                                                                                \
    "Data-parallel training (the mesh): K processes, on one host or several, train one model as one\n"                 \
    "process would with the same --batch: each step every member takes its contiguous share of the\n"                  \
    "global batch of lines, the members exchange bag embeddings and gradients, and all apply the same\n"               \
    "update. Every member gets the same flags except --index; member 0 writes --out and --log and runs\n"             \
    "--eval (the others wait for it in their next step, within the mesh timeout).\n"

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

void train_mesh_free(train_mesh_t *mesh);

#endif
