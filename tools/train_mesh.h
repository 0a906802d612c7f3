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

#include "cli.h"
#include "uform/uform.h"

typedef struct train_mesh_t {
    const char *where;         /* --mesh's value: a folder, tcp://, redis:// or auto (train_mesh_check sorts it) */
    const char *overlap;       /* --mesh-overlap's value: backward (the default) or none */
    const char *directory, *rendezvous, *job, *address;
    size_t index, count, processes;
    size_t threads;            /* the launcher's share of the cores, 0: none */
    double timeout;
    int have_index, have_count;
    size_t accumulate;         /* --accumulate K (0: the batch at once) */
    uform_mesh_launch_t launch; /* when --index and --count come from a launcher */
    uform_mesh_t mesh;         /* after train_mesh_join; NULL without --mesh */
} train_mesh_t;

/* The flags of a mesh member, shared by `uform train` and `uform index` (one table, one parser):
 * they fill the train_mesh_t `field` of `type`. */
#define MESH_MEMBER_FLAGS(type, field)                                                                                 \
    CLI_FLAG("--mesh", CLI_TEXT, type, field.where, "WHERE",                                                           \
             "where the members meet: a folder every member can reach (a shared file\n"                                \
             "system across hosts; the job's folder in it is removed once they have met),\n"                           \
             "tcp://HOST:PORT (member 0 hosts a small store on PORT while they meet; HOST is\n"                        \
             "member 0's host), redis://HOST:PORT (a Redis server), or auto (the launcher's:\n"                        \
             "tcp://MASTER_ADDR:MASTER_PORT+1 under torchrun, or where MASTER_ADDR and\n"                              \
             "MASTER_PORT say; Slurm's first node; the loopback when all are on this host)"),                          \
    CLI_FLAG("--job", CLI_TEXT, type, field.job, "NAME",                                                               \
             "the run's name (one path component; default: the launcher's job id, or\n"                                \
             "'uform' at a tcp:// store); a folder or keys left by a failed run of the\n"                              \
             "same name are refused: remove them or choose another name"),                                             \
    CLI_FLAG("--index", CLI_SIZE, type, field.index, "I",                                                              \
             "this member, in 0..K-1 (with --count; without both: the launcher's)"),                                  \
    CLI_FLAG("--count", CLI_POSITIVE, type, field.count, "K", "members of the run"),                                    \
    CLI_FLAG("--mesh-timeout", CLI_POSITIVE_NUMBER, type, field.timeout, "S",                                          \
             "how long to wait for every member to arrive, and for a peer's answer in a\n"                             \
             "step, before failing (default 120)"),                                                                    \
    CLI_FLAG("--mesh-address", CLI_TEXT, type, field.address, "IP",                                                    \
             "the address this member's collectives listen on, reachable from the other\n"                             \
             "hosts (default: the host's first non-loopback IPv4 address)")

/* --processes K, shared the same way. */
#define MESH_PROCESSES_FLAG(type, field)                                                                               \
    CLI_FLAG("--processes", CLI_POSITIVE, type, field.processes, "K",                                                  \
             "start K local members of this same command over a temporary folder on\n"                                 \
             "127.0.0.1, their output prefixed with [i]; --threads defaults to the cores / K.\n"                        \
             "The run fails as a whole when a member fails")

/* The mesh's flags, for the train command's table: they fill the train_mesh_t `field` of `type`. */
#define TRAIN_MESH_FLAGS(type, field)                                                                                  \
    CLI_HEADING("Data-parallel training (the mesh):"),                                                                 \
    MESH_MEMBER_FLAGS(type, field),                                                                                    \
    CLI_FLAG("--mesh-overlap", CLI_TEXT, type, field.overlap, "X",                                                     \
             "backward (default): all-reduce the gradients bucket by bucket while the\n"                               \
             "backward runs; none: after it (the same result, bit for bit)"),                                          \
    MESH_PROCESSES_FLAG(type, field),                                                                                  \
    CLI_FLAG("--accumulate", CLI_POSITIVE, type, field.accumulate, "K",                                                \
             "run each step's batch (a member's share of it) in K chunks: the same step as\n"                          \
             "the whole batch at once (every chunk's embeddings first, the loss over all of\n"                         \
             "them, then each chunk's forward again and its backward), with the activations'\n"                        \
             "memory of one chunk, for a second forward's time. With a mesh or without")

/* What --help says about the mesh after the flags. */
#define TRAIN_MESH_HELP                                                                                                \
    "Data-parallel training (the mesh): K processes, on one host or several, train one model as one\n"                 \
    "process would with the same --batch: each step every member takes its contiguous share of the\n"                  \
    "global batch, the members exchange bag embeddings and gradients, and all apply the same update.\n"               \
    "Every member gets the same flags but --index; member 0 writes --out and --log and runs --eval (the\n"            \
    "others wait for it in their next step, within the mesh timeout). Under a launcher (torchrun, Open\n"             \
    "MPI's or MPICH's mpirun, Slurm's srun) leave out --index and --count: they, the job and --threads\n"             \
    "(the cores / the members on the host) come from its variables.\n"                                               \
    "A member that dies or stops answering makes the others stop within the timeout; member 0 then\n"                 \
    "saves the last completed step to --out (optimizer and data order) and prints the command that\n"                 \
    "resumes, which may run on another number of members.\n"

/* Checks the combination after parsing and reads a launcher's variables when --index and --count are
 * not given (filling index, count and threads); answers 0, or -1 with the reason in `why`. */
int train_mesh_check(train_mesh_t *mesh, int skip_bad, char *why, size_t capacity);

/* --processes K: runs K members of this same command line over a temporary folder on 127.0.0.1,
 * prefixing their output lines with "[i] ", and answers the run's exit status (the first failing
 * member's; the others are stopped a few seconds after it; 3 when none failed and one finished with
 * bad inputs listed, which stops no one). `argv` is the command's (argv[0] its name:
 * train, index). */
int train_mesh_launch(const train_mesh_t *mesh, int argc, char **argv);

/* With --mesh: bootstraps (the trainer config and the command's `agreement` lines are compared between
 * members) and prints the mesh's shape unless `quiet`. Answers 0, or 1 after printing the failure.
 * Without --mesh: nothing, 0. */
int train_mesh_join(train_mesh_t *mesh, uform_executor_t executor, const uform_trainer_config_t *config,
                    const char *agreement, int quiet);

/* Whether this process is a member of a mesh (--mesh). */
int train_mesh_wanted(const train_mesh_t *mesh);

/* Whether this process writes --out, the log, evaluations and the summary (member 0, or no mesh). */
int train_mesh_leads(const train_mesh_t *mesh);

/* After a member was lost: member 0 saved step `step` to `out`; prints the command that resumes
 * (this command's arguments with --resume OUT, and --steps `remaining` when it is not 0). */
void train_mesh_say_resume(int argc, char **argv, const char *out, uint64_t step, size_t remaining);

void train_mesh_free(train_mesh_t *mesh);

#endif
