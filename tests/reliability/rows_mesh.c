/*
 * The mesh's rows of the sweep: loading the collectives module, and a whole bootstrap of a
 * two-member run through a job folder, member 1 being a peer process (reliability_mesh_peer, beside
 * this program) started per run, so its own allocations are never failed. Each run takes a job name
 * of its own (a folder an earlier run left would be refused as stale).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mesh/gloo_load.h"
#include "rows.h"

/* Loading the collectives module, the first thing a bootstrap of more than one member does: dlopen
 * of the module and of Gloo's tree beneath it, under failing allocations (a cold row: every run is
 * its process's first load). */
void sweep_run_mesh_load(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    (void)fixture;
    const uform__gloo_api_t *api = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__gloo_load(&api, &outcome, "mesh_load");
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = api && api->connect && api->free ? 1 : 2;
}

/* Starts the peer as member 1 of `job` at `directory` (a folder, or a tcp:// rendezvous): fork and
 * exec right away (nothing between allocates). */
static pid_t start_peer(const char *directory, const char *job) {
    static char peer[PATH_MAX];
    if (!peer[0]) {
        ssize_t length = readlink("/proc/self/exe", peer, sizeof peer - 32);
        if (length <= 0) return -1;
        peer[length] = 0;
        char *slash = strrchr(peer, '/');
        if (!slash) return -1;
        strcpy(slash + 1, "reliability_mesh_peer");
    }
    pid_t pid = fork();
    if (pid == 0) {
        execl(peer, peer, directory, job, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Ends the peer: it finishes on its own after a bootstrap that worked; otherwise it is waiting for a
 * member that gave up, and is killed. */
static void stop_peer(pid_t pid, int joined) {
    if (pid <= 0) return;
    int status = 0;
    if (!joined) kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
}

/* Member 0 of `job` at `where` (a folder, or a tcp:// rendezvous member 0 hosts), the peer member 1. */
static void bootstrap_with_peer(const char *where, const char *job, sweep_answer_t *answer) {
    pid_t peer = start_peer(where, job);
    if (peer < 0) {
        sweep_answer_status(answer, UFORM_INTERNAL, NULL);
        snprintf(answer->message, sizeof answer->message, "cannot start reliability_mesh_peer");
        return;
    }
    uform_mesh_options_t options;
    memset(&options, 0, sizeof options);
    options.host_domain_index = 0, options.host_domain_count = 2;
    if (strncmp(where, "tcp://", 6) == 0) options.rendezvous = where;
    else options.directory = where;
    options.job = job, options.timeout_seconds = 5, options.address = "127.0.0.1";
    uform_mesh_t mesh = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_mesh_bootstrap(NULL, &options, &mesh, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        uform_mesh_description_t description;
        status = uform_mesh_describe(mesh, &description);
        answer->digest = sweep_digest(0, &description.members_total, sizeof description.members_total);
        answer->digest = sweep_digest(answer->digest, &description.host_domain_index, sizeof description.host_domain_index);
    }
    uform_mesh_free(mesh);
    stop_peer(peer, status == UFORM_OK);
}

void sweep_run_mesh_bootstrap(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    static unsigned runs;
    char directory[300], job[64];
    snprintf(directory, sizeof directory, "%s/mesh", fixture->scratch);
    mkdir(directory, 0755);
    snprintf(job, sizeof job, "sweep-%ld-%u", (long)getpid(), runs++);
    bootstrap_with_peer(directory, job, answer);
}

/* The same at a tcp:// store: member 0 (this process, whose allocations fail) hosts the store, its
 * server thread and its client, the peer connects to it. A port of its own per run. */
void sweep_run_mesh_bootstrap_tcp(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    (void)fixture;
    static unsigned runs;
    char rendezvous[64], job[64];
    int port = 0;
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET, address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (probe >= 0 && bind(probe, (struct sockaddr *)&address, sizeof address) == 0 &&
        getsockname(probe, (struct sockaddr *)&address, &length) == 0)
        port = ntohs(address.sin_port);
    if (probe >= 0) close(probe);
    snprintf(rendezvous, sizeof rendezvous, "tcp://127.0.0.1:%d", port);
    snprintf(job, sizeof job, "sweep-%ld-%u", (long)getpid(), runs++);
    bootstrap_with_peer(rendezvous, job, answer);
}

/* A launcher's variables read (torchrun's, set in the row's first, unarmed run and kept: setenv's
 * own allocations are not the library's): nothing is allocated. */
void sweep_run_mesh_launch(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    (void)fixture;
    static int set;
    if (!set) {
        setenv("RANK", "1", 1), setenv("WORLD_SIZE", "2", 1), setenv("LOCAL_RANK", "1", 1);
        setenv("LOCAL_WORLD_SIZE", "2", 1), setenv("MASTER_ADDR", "127.0.0.1", 1), setenv("MASTER_PORT", "29500", 1);
        set = 1;
    }
    uform_mesh_launch_t launch;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_mesh_launch_read(&launch, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = sweep_digest(0, launch.rendezvous, strlen(launch.rendezvous));
}
