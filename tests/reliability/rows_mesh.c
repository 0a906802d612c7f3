/*
 * The mesh's rows of the sweep: loading the collectives module, and a whole bootstrap of a
 * two-member run through a job folder, member 1 being a peer process (reliability_mesh_peer, beside
 * this program) started per run, so its own allocations are never failed. Each run takes a job name
 * of its own (a folder an earlier run left would be refused as stale).
 */
#include <errno.h>
#include <limits.h>
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

/* Starts the peer as member 1 of `job`: fork and exec right away (nothing between allocates). */
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

void sweep_run_mesh_bootstrap(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    static unsigned runs;
    char directory[300], job[64];
    snprintf(directory, sizeof directory, "%s/mesh", fixture->scratch);
    mkdir(directory, 0755);
    snprintf(job, sizeof job, "sweep-%ld-%u", (long)getpid(), runs++);
    pid_t peer = start_peer(directory, job);
    if (peer < 0) {
        sweep_answer_status(answer, UFORM_INTERNAL, NULL);
        snprintf(answer->message, sizeof answer->message, "cannot start reliability_mesh_peer");
        return;
    }
    uform_mesh_options_t options;
    memset(&options, 0, sizeof options);
    options.host_domain_index = 0, options.host_domain_count = 2;
    options.directory = directory, options.job = job;
    options.timeout_seconds = 5, options.address = "127.0.0.1";
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
