/*
 * Members started by a launcher (uform_mesh_launch_read, the launcher AUTO; docs/mesh.md,
 * "Launchers"): each launcher's variables as torchrun, Open MPI, MPICH / Intel MPI and Slurm set them
 * (set here, no real Slurm needed), which launcher wins when several are set, the job, the threads
 * and the default rendezvous each gives, and variables that contradict each other refused with a
 * message naming them. Then bootstraps with the launcher AUTO: two forked members with torchrun's
 * variables meeting at MASTER_ADDR:MASTER_PORT+1, options that conflict with the variables, and one
 * real launch by Debian's Open MPI (`mpirun -np 2` of this program's "mpi-member" mode).
 *
 *   test_mesh_launcher                 everything above but the real launch
 *   test_mesh_launcher mpirun          the real launch (needs openmpi-bin, which the install script
 *                                      installs: skipped without it, failed under CI=true)
 *   test_mesh_launcher mpi-member DIR  (under mpirun) bootstrap with AUTO, write DIR/mpi.{index}
 */
#include <sched.h>

#include "common/check.h"
#include "common/skip.h"
#include "mesh_test.h"

#define CHECK_STRING(actual, expected) \
    CHECK_MSG(strcmp((actual), (expected)) == 0, "got '%s', expected '%s'", (actual), (expected))

static const char *const every_variable[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE", "SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"};

static void clear_all(void) {
    for (size_t i = 0; i < sizeof every_variable / sizeof every_variable[0]; ++i) unsetenv(every_variable[i]);
}

/* Sets "NAME=value" pairs (NULL-terminated), after clearing every launcher variable. */
static void set_only(const char *const *pairs) {
    clear_all();
    for (size_t i = 0; pairs[i]; ++i) {
        char name[64];
        const char *equals = strchr(pairs[i], '=');
        snprintf(name, sizeof name, "%.*s", (int)(equals - pairs[i]), pairs[i]);
        setenv(name, equals + 1, 1);
    }
}

static size_t cores_here(int *bound) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    size_t allowed = sched_getaffinity(0, sizeof set, &set) == 0 ? (size_t)CPU_COUNT(&set) : (size_t)online;
    *bound = allowed < (size_t)online;
    return allowed;
}

static size_t threads_for(size_t local_count) {
    int bound = 0;
    size_t cores = cores_here(&bound);
    size_t threads = bound ? cores : cores / local_count;
    return threads ? threads : 1;
}

static void read_ok(const char *const *pairs, uform_mesh_launch_t *launch) {
    set_only(pairs);
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_mesh_launch_read(launch, &outcome);
    CHECK_MSG(status == UFORM_OK, "%s=... gave %s: %s", pairs[0], uform_status_name(status), outcome.message);
}

static void read_refused(const char *const *pairs, const char *first, const char *second) {
    set_only(pairs);
    uform_outcome_t outcome = {0};
    uform_mesh_launch_t launch;
    CHECK_STATUS(uform_mesh_launch_read(&launch, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, first);
    if (second) CHECK_CONTAINS(outcome.message, second);
    fprintf(stderr, "refused: %s\n", outcome.message);
}

static void test_each_launcher(void) {
    uform_mesh_launch_t launch;
    set_only((const char *const[]){NULL});
    CHECK_STATUS(uform_mesh_launch_read(&launch, NULL), UFORM_OK);
    CHECK_EQ_INT(launch.launcher, UFORM_MESH_LAUNCHER_NONE);

    read_ok((const char *const[]){"RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=10.0.0.1",
                                  "MASTER_PORT=29500", "TORCHELASTIC_RUN_ID=run-7", NULL},
            &launch);
    CHECK_EQ_INT(launch.launcher, UFORM_MESH_LAUNCHER_TORCHRUN);
    CHECK_EQ_INT(launch.index, 2);
    CHECK_EQ_INT(launch.count, 4);
    CHECK_EQ_INT(launch.local_index, 0);
    CHECK_EQ_INT(launch.local_count, 2);
    CHECK_EQ_INT(launch.threads, threads_for(2));
    CHECK_STRING(launch.job, "run-7");
    CHECK_STRING(launch.rendezvous, "tcp://10.0.0.1:29501");
    CHECK_STRING(uform_mesh_launcher_name(launch.launcher), "torchrun");

    /* An IPv6 master is bracketed. */
    read_ok((const char *const[]){"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1", "MASTER_ADDR=fd00::1",
                                  "MASTER_PORT=29500", NULL},
            &launch);
    CHECK_STRING(launch.rendezvous, "tcp://[fd00::1]:29501");

    /* Open MPI on one host: no master, so the loopback and a port from the job. */
    read_ok((const char *const[]){"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=3", "OMPI_COMM_WORLD_LOCAL_RANK=1",
                                  "OMPI_COMM_WORLD_LOCAL_SIZE=3", "OMPI_MCA_ess_base_jobid=19988481", NULL},
            &launch);
    CHECK_EQ_INT(launch.launcher, UFORM_MESH_LAUNCHER_OPEN_MPI);
    CHECK_EQ_INT(launch.index, 1);
    CHECK_EQ_INT(launch.count, 3);
    CHECK_EQ_INT(launch.local_count, 3);
    CHECK_EQ_INT(launch.threads, threads_for(3));
    CHECK_STRING(launch.job, "19988481");
    CHECK(strncmp(launch.rendezvous, "tcp://127.0.0.1:", 16) == 0);
    int port = atoi(launch.rendezvous + 16);
    CHECK_MSG(port >= 20000 && port < 30000, "port %d", port);

    /* MPICH / Intel MPI on two hosts, no master: no default rendezvous. */
    read_ok((const char *const[]){"PMI_RANK=3", "PMI_SIZE=4", "MPI_LOCALRANKID=1", "MPI_LOCALNRANKS=2", NULL}, &launch);
    CHECK_EQ_INT(launch.launcher, UFORM_MESH_LAUNCHER_MPICH);
    CHECK_EQ_INT(launch.index, 3);
    CHECK_EQ_INT(launch.count, 4);
    CHECK_EQ_INT(launch.local_index, 1);
    CHECK_EQ_INT(launch.local_count, 2);
    CHECK_STRING(launch.rendezvous, "");

    /* Slurm: the node's share of "2(x4)", its first node and a port from the job id. */
    read_ok((const char *const[]){"SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_NODEID=2",
                                  "SLURM_STEP_TASKS_PER_NODE=2(x4)", "SLURM_JOB_ID=12345",
                                  "SLURM_STEP_NODELIST=gpu[07-10]", NULL},
            &launch);
    CHECK_EQ_INT(launch.launcher, UFORM_MESH_LAUNCHER_SLURM);
    CHECK_EQ_INT(launch.index, 5);
    CHECK_EQ_INT(launch.count, 8);
    CHECK_EQ_INT(launch.local_index, 1);
    CHECK_EQ_INT(launch.local_count, 2);
    CHECK_STRING(launch.job, "12345");
    CHECK_STRING(launch.rendezvous, "tcp://gpu07:22345");
    read_ok((const char *const[]){"SLURM_PROCID=4", "SLURM_NTASKS=5", "SLURM_LOCALID=0", "SLURM_NODEID=2",
                                  "SLURM_TASKS_PER_NODE=3,1(x2)", "SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=a1,b2", NULL},
            &launch);
    CHECK_EQ_INT(launch.local_count, 1);
    CHECK_STRING(launch.rendezvous, "tcp://a1:20007");
    /* MASTER_ADDR and MASTER_PORT, exported in the batch script, win over the node list. */
    read_ok((const char *const[]){"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_NODEID=0",
                                  "SLURM_TASKS_PER_NODE=1(x2)", "SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=n[1-2]",
                                  "MASTER_ADDR=n1", "MASTER_PORT=40000", NULL},
            &launch);
    CHECK_STRING(launch.rendezvous, "tcp://n1:40001");

    /* The innermost launcher wins: torchrun under srun sees Slurm's variables of its own task. */
    read_ok((const char *const[]){"RANK=6", "WORLD_SIZE=8", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=4", "SLURM_PROCID=1",
                                  "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_JOB_ID=99", "MASTER_ADDR=n1",
                                  "MASTER_PORT=29500", NULL},
            &launch);
    CHECK_EQ_INT(launch.launcher, UFORM_MESH_LAUNCHER_TORCHRUN);
    CHECK_EQ_INT(launch.index, 6);
    CHECK_EQ_INT(launch.count, 8);
    read_ok((const char *const[]){"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=1",
                                  "OMPI_COMM_WORLD_LOCAL_SIZE=2", "SLURM_PROCID=0", "SLURM_NTASKS=2", NULL},
            &launch);
    CHECK_EQ_INT(launch.launcher, UFORM_MESH_LAUNCHER_OPEN_MPI);
    CHECK_EQ_INT(launch.index, 3);
}

static void test_conflicts(void) {
    read_refused((const char *const[]){"RANK=1", NULL}, "RANK=1 is set but WORLD_SIZE is not", "torchrun");
    read_refused((const char *const[]){"WORLD_SIZE=4", NULL}, "WORLD_SIZE=4 is set but RANK is not", NULL);
    read_refused((const char *const[]){"RANK=5", "WORLD_SIZE=4", NULL}, "RANK=5 is not below WORLD_SIZE=4", NULL);
    read_refused((const char *const[]){"RANK=one", "WORLD_SIZE=4", NULL}, "RANK=one is not a count", NULL);
    read_refused((const char *const[]){"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0", NULL},
                 "LOCAL_RANK is set but LOCAL_WORLD_SIZE is not", NULL);
    read_refused((const char *const[]){"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=8", NULL},
                 "LOCAL_WORLD_SIZE puts 8 members on this host", "WORLD_SIZE=4 holds 4");
    read_refused((const char *const[]){"RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=2", NULL},
                 "LOCAL_RANK=3 is not below the 2 members on this host", NULL);
    read_refused((const char *const[]){"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2", NULL},
                 "OMPI_COMM_WORLD_RANK=2 is not below OMPI_COMM_WORLD_SIZE=2", "Open MPI");
    read_refused((const char *const[]){"PMI_RANK=0", "PMI_SIZE=0", NULL}, "PMI_SIZE=0", "MPICH");
    read_refused((const char *const[]){"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=3", "SLURM_NODEID=0",
                                       "SLURM_TASKS_PER_NODE=2", NULL},
                 "SLURM_LOCALID=3 is not below the 2 members on this host", "Slurm");
    /* A stale torchrun set in a shell under srun is not hidden by Slurm's good one: torchrun's wins
     * and is refused. */
    read_refused((const char *const[]){"RANK=0", "SLURM_PROCID=1", "SLURM_NTASKS=2", NULL},
                 "RANK=0 is set but WORLD_SIZE is not", NULL);
    clear_all();
}

/* ---- bootstraps with the launcher AUTO ---- */

static char folder[256];

typedef struct auto_scenario_t {
    int port;                 /* MASTER_PORT */
    size_t conflicting_count; /* options.host_domain_count given as well (0: none) */
} auto_scenario_t;

static int auto_member(size_t index, size_t count, void *context) {
    const auto_scenario_t *scenario = context;
    char value[32];
    set_only((const char *const[]){"MASTER_ADDR=127.0.0.1", "TORCHELASTIC_RUN_ID=auto", NULL});
    snprintf(value, sizeof value, "%zu", index), setenv("RANK", value, 1), setenv("LOCAL_RANK", value, 1);
    snprintf(value, sizeof value, "%zu", count), setenv("WORLD_SIZE", value, 1), setenv("LOCAL_WORLD_SIZE", value, 1);
    snprintf(value, sizeof value, "%d", scenario->port), setenv("MASTER_PORT", value, 1);
    uform_mesh_options_t options = {0};
    options.launcher = UFORM_MESH_LAUNCHER_AUTO, options.timeout_seconds = 20, options.address = "127.0.0.1";
    options.host_domain_count = scenario->conflicting_count;
    uform_outcome_t outcome = {0};
    uform_mesh_t mesh = NULL;
    uform_status_t status = uform_mesh_bootstrap(NULL, &options, &mesh, &outcome);
    uform_mesh_description_t description;
    memset(&description, 0, sizeof description);
    if (mesh) uform_mesh_describe(mesh, &description);
    char text[700], path[512];
    int length = snprintf(text, sizeof text, "%d %d %zu %zu %zu %zu\n%s", (int)status, (int)description.launcher,
                          description.first_member_index, description.members_total, description.local_member_index,
                          description.local_members, outcome.message);
    snprintf(path, sizeof path, "%s/auto.%zu", folder, index);
    mesh_test_write(path, text, (size_t)length);
    uform_mesh_free(mesh);
    return 0;
}

typedef struct auto_result_t {
    int status, launcher;
    size_t index, count, local_index, local_count;
    char message[600];
} auto_result_t;

static int read_result(const char *name, auto_result_t *result) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    size_t length = 0;
    char *text = test_read_file(path, &length);
    memset(result, 0, sizeof *result);
    result->status = -1;
    if (!text) return -1;
    text = realloc(text, length + 1);
    text[length] = 0;
    sscanf(text, "%d %d %zu %zu %zu %zu", &result->status, &result->launcher, &result->index, &result->count,
           &result->local_index, &result->local_count);
    char *newline = strchr(text, '\n');
    snprintf(result->message, sizeof result->message, "%s", newline ? newline + 1 : "");
    free(text);
    unlink(path);
    return 0;
}

static void test_auto_bootstrap(void) {
    auto_scenario_t scenario = {mesh_test_free_port() - 1, 0};
    mesh_members_t members;
    mesh_members_start(&members, 2, auto_member, &scenario);
    CHECK(mesh_members_wait(&members, 60) == 0);
    for (size_t i = 0; i < 2; ++i) {
        char name[32];
        snprintf(name, sizeof name, "auto.%zu", i);
        auto_result_t result;
        CHECK(read_result(name, &result) == 0);
        CHECK_MSG(result.status == UFORM_OK, "member %zu: %s", i, result.message);
        CHECK_EQ_INT(result.launcher, UFORM_MESH_LAUNCHER_TORCHRUN);
        CHECK_EQ_INT(result.index, i);
    CHECK_EQ_INT(result.count, 2);
        CHECK_EQ_INT(result.local_index, i);
    CHECK_EQ_INT(result.local_count, 2);
    }
    /* A count given beside the launcher's must agree with it. */
    scenario.conflicting_count = 3;
    mesh_members_start(&members, 1, auto_member, &scenario);
    CHECK(mesh_members_wait(&members, 30) == 0);
    auto_result_t result;
    CHECK(read_result("auto.0", &result) == 0);
    CHECK_STATUS(result.status, UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(result.message, "options.host_domain_count 3 conflicts with the 1 members torchrun started");
    /* No launcher's variables at all. */
    clear_all();
    uform_mesh_options_t options = {0};
    options.launcher = UFORM_MESH_LAUNCHER_AUTO;
    uform_outcome_t outcome = {0};
    uform_mesh_t mesh = NULL;
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "no launcher's variables are set");
    /* Members on several hosts, and nothing says where member 0 is. */
    set_only((const char *const[]){"PMI_RANK=0", "PMI_SIZE=4", "MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=2", NULL});
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "export MASTER_ADDR and MASTER_PORT");
    clear_all();
}

/* One real launch: Debian's mpirun starts two copies of this program. */
static void test_real_mpirun(const char *self) {
    char command[1600];
    snprintf(command, sizeof command,
             "timeout 60 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 %s mpi-member %s "
             "> %s/mpirun.log 2>&1",
             self, folder, folder);
    int status = system(command);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code != 0) {
        snprintf(command, sizeof command, "cat %s/mpirun.log >&2", folder);
        if (system(command)) {
        }
    }
    CHECK_MSG(code == 0, "mpirun exited with %d", code);
    for (size_t i = 0; i < 2; ++i) {
        char name[32];
        snprintf(name, sizeof name, "mpi.%zu", i);
        auto_result_t result;
        CHECK_MSG(read_result(name, &result) == 0, "rank %zu wrote nothing", i);
        CHECK_MSG(result.status == UFORM_OK, "rank %zu: %s", i, result.message);
        CHECK_EQ_INT(result.launcher, UFORM_MESH_LAUNCHER_OPEN_MPI);
        CHECK_EQ_INT(result.index, i);
    CHECK_EQ_INT(result.count, 2);
        CHECK_EQ_INT(result.local_count, 2);
    }
}

/* Under mpirun: the launcher AUTO and nothing else (the rendezvous from Open MPI's job id). */
static int mpi_member(const char *directory) {
    uform_mesh_options_t options = {0};
    options.launcher = UFORM_MESH_LAUNCHER_AUTO, options.timeout_seconds = 30, options.address = "127.0.0.1";
    uform_outcome_t outcome = {0};
    uform_mesh_t mesh = NULL;
    uform_status_t status = uform_mesh_bootstrap(NULL, &options, &mesh, &outcome);
    uform_mesh_description_t description;
    memset(&description, 0, sizeof description);
    if (mesh) uform_mesh_describe(mesh, &description);
    uform_mesh_launch_t launch;
    uform_mesh_launch_read(&launch, NULL);
    char text[700], path[512];
    int length = snprintf(text, sizeof text, "%d %d %zu %zu %zu %zu\n%s", (int)status, (int)description.launcher,
                          description.first_member_index, description.members_total, description.local_member_index,
                          description.local_members, outcome.message);
    snprintf(path, sizeof path, "%s/mpi.%zu", directory, launch.index);
    mesh_test_write(path, text, (size_t)length);
    uform_mesh_free(mesh);
    return status == UFORM_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "mpi-member")) return mpi_member(argv[2]);
    int real = argc == 2 && !strcmp(argv[1], "mpirun");
    if (real && access("/usr/bin/mpirun", X_OK) != 0) return check_skip_missing("the real launch needs openmpi-bin's mpirun");
    mesh_test_folder(folder, sizeof folder, "launcher");
    clear_all(); /* whatever launched the test suite is not what these cases are about */
    if (real) {
        char *self = realpath(argv[0], NULL);
        test_real_mpirun(self ? self : argv[0]);
        free(self);
    } else {
        test_each_launcher();
        test_conflicts();
        test_auto_bootstrap();
    }
    mesh_test_remove(folder);
    return check_finish();
}
