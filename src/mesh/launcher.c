/*
 * uform_mesh_launch_read (uform.h, "Mesh"; docs/mesh.md, "Launchers"): a member's index, the count,
 * its place on its host, its job and a default rendezvous, from the variables a launcher sets.
 *
 * A launcher started by another sees the outer one's variables as well (torchrun under srun sees
 * SLURM_PROCID, the index of its srun task; mpirun in an sbatch script sees the batch step's), and
 * those describe the outer launch, not this process: so the launchers are read innermost first —
 * torchrun, Open MPI, MPICH / Intel MPI, Slurm — and the first whose rank variable is set decides.
 * Its variables must then be complete and agree with each other; an outer launcher's never override
 * them, but may fill in what it lacks (MPICH gives no local count under some process managers, and
 * Slurm's SLURM_LOCALID is the same process's then).
 */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fnv.h"
#include "core/outcome.h"
#include "mesh/mesh.h"

typedef struct launcher_names_t {
    uform_mesh_launcher_t launcher;
    const char *label;  /* for messages: "torchrun" */
    const char *rank, *size, *local_rank, *local_size; /* local_size NULL: derived otherwise */
} launcher_names_t;

/* Innermost first (see above). */
static const launcher_names_t launchers[] = {
    {UFORM_MESH_LAUNCHER_TORCHRUN, "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {UFORM_MESH_LAUNCHER_OPEN_MPI, "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {UFORM_MESH_LAUNCHER_MPICH, "MPICH", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {UFORM_MESH_LAUNCHER_SLURM, "Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL},
};
#define LAUNCHERS (sizeof launchers / sizeof launchers[0])

/* The largest count we take from a variable (the mesh's own limit is far below). */
#define MOST_MEMBERS 1000000u

UFORM_API const char *uform_mesh_launcher_name(uform_mesh_launcher_t launcher) {
    switch (launcher) {
    case UFORM_MESH_LAUNCHER_NONE: return "none";
    case UFORM_MESH_LAUNCHER_AUTO: return "auto";
    case UFORM_MESH_LAUNCHER_TORCHRUN: return "torchrun";
    case UFORM_MESH_LAUNCHER_OPEN_MPI: return "open-mpi";
    case UFORM_MESH_LAUNCHER_MPICH: return "mpich";
    case UFORM_MESH_LAUNCHER_SLURM: return "slurm";
    }
    return "unknown";
}

static const char *variable(const char *name) {
    const char *value = name ? getenv(name) : NULL;
    return value && value[0] ? value : NULL;
}

/* A decimal count of at most MOST_MEMBERS, nothing else (no sign, no spaces, no suffix). */
static int parse_count(const char *text, size_t *value) {
    if (!text || !*text) return -1;
    size_t number = 0;
    for (const char *c = text; *c; ++c) {
        if (*c < '0' || *c > '9') return -1;
        number = number * 10 + (size_t)(*c - '0');
        if (number > MOST_MEMBERS) return -1;
    }
    *value = number;
    return 0;
}

typedef struct reading_t {
    uform_outcome_t *outcome;
    const char *function;
    const char *label; /* the launcher's, for messages */
} reading_t;

__attribute__((format(printf, 2, 3))) static uform_status_t refuse(const reading_t *reading, const char *format, ...) {
    char text[400];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(text, sizeof text, format, arguments);
    va_end(arguments);
    return uform__fail(reading->outcome, UFORM_INVALID_ARGUMENT, reading->function,
                       "%s (%s's variables; unset the ones no launcher set for this process, or start it by hand)",
                       text, reading->label);
}

/* Reads `name` as a count into *value; a variable that is set but not a count is refused. Answers
 * UFORM_OK with *present 0 or 1. */
static uform_status_t read_count(const reading_t *reading, const char *name, size_t *value, int *present) {
    const char *text = variable(name);
    *present = text != NULL;
    if (!text) return UFORM_OK;
    if (parse_count(text, value) == 0) return UFORM_OK;
    return refuse(reading, "%s=%s is not a count (a decimal number up to 1000000)", name, text);
}

/* Slurm's tasks per node, "2(x3),1": the count of node `node` (0-based); 0 when it does not say. */
static size_t slurm_tasks_on_node(const char *text, size_t node) {
    size_t seen = 0;
    while (text && *text) {
        char *end = NULL;
        unsigned long tasks = strtoul(text, &end, 10);
        if (end == text) return 0;
        unsigned long repeat = 1;
        if (*end == '(') {
            if (end[1] != 'x') return 0;
            char *after = NULL;
            repeat = strtoul(end + 2, &after, 10);
            if (after == end + 2 || *after != ')') return 0;
            end = after + 1;
        }
        if (node < seen + repeat) return (size_t)tasks;
        seen += repeat;
        if (*end != ',') return 0;
        text = end + 1;
    }
    return 0;
}

/* The first host of a Slurm host list ("node[07-09,12],gpu01" gives "node07"), into `host`. */
static int slurm_first_host(const char *list, char *host, size_t capacity) {
    if (!list || !*list) return -1;
    size_t used = 0;
    const char *c = list;
    while (*c && *c != ',' && *c != '[' && used + 1 < capacity) host[used++] = *c++;
    if (*c == '[') {
        ++c; /* the first number of the first range keeps its zero padding */
        while (*c >= '0' && *c <= '9' && used + 1 < capacity) host[used++] = *c++;
        while (*c && *c != ']') ++c;
        if (*c == ']') ++c;
        while (*c && *c != ',' && *c != '[' && used + 1 < capacity) host[used++] = *c++;
    }
    host[used] = 0;
    return used ? 0 : -1;
}

/* A launcher's job id as a job name: letters, digits, '.', '-', '_' (others become '_'). */
static void job_name(const char *id, char *job, size_t capacity) {
    size_t used = 0;
    for (const char *c = id; c && *c && used + 1 < capacity; ++c)
        job[used++] = (isalnum((unsigned char)*c) || *c == '.' || *c == '-' || *c == '_') ? *c : '_';
    job[used] = 0;
}

/* The cores this process may run on, and whether the launcher bound it to fewer than the host has. */
static size_t usable_cores(int *bound) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    size_t cores = online > 0 ? (size_t)online : 1;
    *bound = 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        size_t allowed = (size_t)CPU_COUNT(&set);
        if (allowed > 0 && allowed < cores) cores = allowed, *bound = 1;
    }
    return cores;
}

/* The job and the default rendezvous (uform.h). */
static void defaults(uform_mesh_launch_t *launch, const launcher_names_t *names) {
    const char *id = NULL;
    switch (names->launcher) {
    case UFORM_MESH_LAUNCHER_TORCHRUN: id = variable("TORCHELASTIC_RUN_ID"); break;
    case UFORM_MESH_LAUNCHER_OPEN_MPI:
        id = variable("OMPI_MCA_ess_base_jobid");
        if (!id) id = variable("PMIX_NAMESPACE");
        break;
    case UFORM_MESH_LAUNCHER_SLURM: id = variable("SLURM_JOB_ID"); break;
    default: break;
    }
    char parent[48];
    if (!id && launch->local_count == launch->count) {
        /* Every member on this host: they are children of the same launcher process. */
        snprintf(parent, sizeof parent, "parent-%ld", (long)getppid());
        id = parent;
    }
    if (id) job_name(id, launch->job, sizeof launch->job);
    const char *address = variable("MASTER_ADDR"), *port_text = variable("MASTER_PORT");
    size_t port = 0;
    if (address && port_text && parse_count(port_text, &port) == 0 && port > 0 && port < 65535) {
        int numeric6 = strchr(address, ':') != NULL;
        snprintf(launch->rendezvous, sizeof launch->rendezvous, "tcp://%s%s%s:%zu", numeric6 ? "[" : "", address,
                 numeric6 ? "]" : "", port + 1);
        snprintf(launch->rendezvous_from, sizeof launch->rendezvous_from, "MASTER_ADDR:MASTER_PORT+1");
        return;
    }
    char host[256];
    const char *slurm_job = variable("SLURM_JOB_ID");
    const char *nodes = variable("SLURM_STEP_NODELIST");
    if (!nodes) nodes = variable("SLURM_JOB_NODELIST");
    size_t job_number = 0;
    if (names->launcher == UFORM_MESH_LAUNCHER_SLURM && slurm_job && parse_count(slurm_job, &job_number) == 0 &&
        slurm_first_host(nodes, host, sizeof host) == 0) {
        snprintf(launch->rendezvous, sizeof launch->rendezvous, "tcp://%s:%zu", host, 20000 + job_number % 10000);
        snprintf(launch->rendezvous_from, sizeof launch->rendezvous_from,
                 "the first node of SLURM_STEP_NODELIST, port 20000 + SLURM_JOB_ID mod 10000");
        return;
    }
    if (launch->local_count == launch->count && launch->job[0]) {
        snprintf(launch->rendezvous, sizeof launch->rendezvous, "tcp://127.0.0.1:%u",
                 (unsigned)(20000 + uform__fnv1a64_text(launch->job, UFORM__FNV1A64_OFFSET) % 10000));
        snprintf(launch->rendezvous_from, sizeof launch->rendezvous_from,
                 "every member on this host: loopback, port 20000 + a hash of the job");
    }
}

UFORM_API uform_status_t uform_mesh_launch_read(uform_mesh_launch_t *launch, uform_outcome_t *outcome) {
    reading_t reading = {outcome, __func__, ""};
    if (!launch) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, reading.function, "launch is NULL");
    memset(launch, 0, sizeof *launch);
    const launcher_names_t *names = NULL;
    for (size_t i = 0; i < LAUNCHERS && !names; ++i)
        if (variable(launchers[i].rank)) names = &launchers[i];
    /* A launcher's size without its rank says as much as a rank without its size: something is off. */
    for (size_t i = 0; i < LAUNCHERS && !names; ++i)
        if (variable(launchers[i].size)) {
            reading.label = launchers[i].label;
            return refuse(&reading, "%s=%s is set but %s is not", launchers[i].size, variable(launchers[i].size),
                          launchers[i].rank);
        }
    if (!names) return uform__succeed(outcome, reading.function);
    reading.label = names->label;
    const char *rank = names->rank, *size = names->size, *local_rank = names->local_rank;
    const char *local_size = names->local_size ? names->local_size : "SLURM_STEP_TASKS_PER_NODE";
    int present = 0, size_present = 0, local_present = 0, local_size_present = 0;
    uform_status_t status = read_count(&reading, rank, &launch->index, &present);
    if (status == UFORM_OK) status = read_count(&reading, size, &launch->count, &size_present);
    if (status == UFORM_OK) status = read_count(&reading, local_rank, &launch->local_index, &local_present);
    if (status == UFORM_OK && names->local_size)
        status = read_count(&reading, names->local_size, &launch->local_count, &local_size_present);
    if (status == UFORM_OK && names->launcher == UFORM_MESH_LAUNCHER_SLURM) {
        const char *per_node = variable("SLURM_STEP_TASKS_PER_NODE");
        if (!per_node) per_node = variable("SLURM_TASKS_PER_NODE");
        else local_size = "SLURM_STEP_TASKS_PER_NODE";
        if (!variable("SLURM_STEP_TASKS_PER_NODE")) local_size = "SLURM_TASKS_PER_NODE";
        size_t node = 0;
        int node_present = 0;
        status = read_count(&reading, "SLURM_NODEID", &node, &node_present);
        launch->local_count = slurm_tasks_on_node(per_node, node);
        local_size_present = launch->local_count > 0;
    }
    if (status != UFORM_OK) return status;
    if (!size_present) return refuse(&reading, "%s=%s is set but %s is not", rank, variable(rank), size);
    if (launch->count == 0) return refuse(&reading, "%s=0: a run needs at least one member", size);
    if (launch->index >= launch->count)
        return refuse(&reading, "%s=%s is not below %s=%s", rank, variable(rank), size, variable(size));
    if (local_present != local_size_present && names->local_size)
        return refuse(&reading, "%s is set but %s is not", local_present ? local_rank : local_size,
                      local_present ? local_size : local_rank);
    if (!local_present && !local_size_present) {
        launch->local_index = 0, launch->local_count = 1; /* the launcher does not say */
    } else if (!local_size_present) {
        launch->local_count = launch->local_index + 1; /* Slurm without its tasks per node: at least this */
    } else if (!local_present) {
        return refuse(&reading, "%s is set but %s is not", local_size, local_rank);
    }
    if (launch->local_index >= launch->local_count)
        return refuse(&reading, "%s=%s is not below the %zu members on this host (%s)", local_rank, variable(local_rank),
                      launch->local_count, local_size);
    if (launch->local_count > launch->count)
        return refuse(&reading, "%s puts %zu members on this host, but %s=%s holds %zu in all", local_size,
                      launch->local_count, size, variable(size), launch->count);
    launch->launcher = names->launcher;
    snprintf(launch->variables, sizeof launch->variables, "%s, %s, %s, %s", rank, size, local_rank, local_size);
    int bound = 0;
    size_t cores = usable_cores(&bound);
    launch->threads = bound ? cores : cores / launch->local_count;
    if (launch->threads == 0) launch->threads = 1;
    defaults(launch, names);
    return uform__succeed(outcome, reading.function);
}
