/*
 * `uform train` over a mesh (train_mesh.h).
 */
#include "train_mesh.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int train_mesh_wanted(const train_mesh_t *mesh) { return mesh->where != NULL; }

/* --mesh-overlap none: the all-reduce after the backward. */
static int overlap_none(const train_mesh_t *mesh) { return mesh->overlap && strcmp(mesh->overlap, "none") == 0; }

int train_mesh_check(train_mesh_t *mesh, int skip_bad, char *why, size_t capacity) {
    const char *where = mesh->where;
    if (where && (strncmp(where, "tcp://", 6) == 0 || strncmp(where, "redis://", 8) == 0)) mesh->rendezvous = where;
    else if (where && strcmp(where, "auto") != 0) mesh->directory = where;
    if (mesh->overlap && strcmp(mesh->overlap, "none") != 0 && strcmp(mesh->overlap, "backward") != 0) {
        snprintf(why, capacity, "--mesh-overlap '%s' is not backward or none", mesh->overlap);
        return -1;
    }
    if (mesh->processes > 64 || mesh->count > 1000000) {
        snprintf(why, capacity, "--processes %zu / --count %zu: too many members", mesh->processes, mesh->count);
        return -1;
    }
    if (mesh->timeout > 86400) {
        snprintf(why, capacity, "--mesh-timeout %g is more than a day", mesh->timeout);
        return -1;
    }
    int any = mesh->where || mesh->job || mesh->have_index || mesh->have_count || mesh->address || mesh->timeout > 0 ||
              overlap_none(mesh);
    if (mesh->processes && any) {
        snprintf(why, capacity, "--processes starts its own mesh: it takes none of --mesh, --job, --index, --count, "
                                "--mesh-timeout, --mesh-address, --mesh-overlap");
        return -1;
    }
    if (any && !mesh->where) {
        snprintf(why, capacity, "a member of a mesh needs --mesh DIR, tcp://HOST:PORT, redis://HOST:PORT or auto");
        return -1;
    }
    if (mesh->have_index != mesh->have_count) {
        snprintf(why, capacity, "--index and --count go together (leave both out under a launcher: torchrun, mpirun, "
                                "srun)");
        return -1;
    }
    if (any && !mesh->have_index) {
        uform_outcome_t outcome = {0};
        if (uform_mesh_launch_read(&mesh->launch, &outcome) != UFORM_OK) {
            snprintf(why, capacity, "%s", outcome.message);
            return -1;
        }
        if (mesh->launch.launcher == UFORM_MESH_LAUNCHER_NONE) {
            snprintf(why, capacity, "--mesh without --index and --count reads them from a launcher's variables, and "
                                    "none is set (torchrun's RANK, mpirun's OMPI_COMM_WORLD_RANK or PMI_RANK, srun's "
                                    "SLURM_PROCID): give --index I --count K");
            return -1;
        }
        mesh->index = mesh->launch.index, mesh->count = mesh->launch.count, mesh->threads = mesh->launch.threads;
        if (!mesh->directory && !mesh->rendezvous && !mesh->launch.rendezvous[0] && mesh->count > 1) {
            snprintf(why, capacity, "--mesh auto: %s started %zu members on several hosts and nothing says where member "
                                    "0 is: export MASTER_ADDR and MASTER_PORT, or give --mesh tcp://HOST:PORT",
                     uform_mesh_launcher_name(mesh->launch.launcher), mesh->count);
            return -1;
        }
    }
    if (mesh->directory && !mesh->job && !mesh->launch.job[0]) {
        snprintf(why, capacity, "--mesh DIR needs --job NAME (the run's folder in DIR)");
        return -1;
    }
    if (any && mesh->index >= mesh->count) {
        snprintf(why, capacity, "--index %zu is not below --count %zu", mesh->index, mesh->count);
        return -1;
    }
    if ((any || mesh->processes > 1) && skip_bad) {
        snprintf(why, capacity, "--skip-bad cannot be used with a mesh (the members would disagree on the batch)");
        return -1;
    }
    return 0;
}

/* ---- --processes ---- */

typedef struct stream_t {
    int fd;               /* -1 once closed */
    FILE *to;
    char pending[4096];
    size_t used;
} stream_t;

/* Forwards complete lines (and, when `flush`, the rest) prefixed with the member's index. */
static void forward(stream_t *stream, size_t member, int flush) {
    size_t start = 0;
    for (size_t i = 0; i < stream->used; ++i)
        if (stream->pending[i] == '\n' || stream->pending[i] == '\r') {
            fprintf(stream->to, "[%zu] %.*s\n", member, (int)(i - start), stream->pending + start);
            start = i + 1;
        }
    if (flush && start < stream->used) {
        fprintf(stream->to, "[%zu] %.*s\n", member, (int)(stream->used - start), stream->pending + start);
        start = stream->used;
    }
    if (start == 0 && stream->used == sizeof stream->pending) { /* a line longer than the buffer */
        fprintf(stream->to, "[%zu] %.*s\n", member, (int)stream->used, stream->pending);
        start = stream->used;
    }
    memmove(stream->pending, stream->pending + start, stream->used - start);
    stream->used -= start;
    fflush(stream->to);
}

/* Removes the temporary folder: normally empty (the members clear the job's folder once they have
 * met), but a failed run leaves facts and perhaps a store in run/. */
static void remove_tree(const char *path) {
    DIR *folder = opendir(path);
    if (folder) {
        struct dirent *entry;
        char child[4200];
        while ((entry = readdir(folder)) != NULL) {
            if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
            if (snprintf(child, sizeof child, "%.3900s/%.255s", path, entry->d_name) >= (int)sizeof child) continue;
            struct stat info;
            if (lstat(child, &info) == 0 && S_ISDIR(info.st_mode)) remove_tree(child);
            else unlink(child);
        }
        closedir(folder);
    }
    rmdir(path);
}

int train_mesh_launch(const train_mesh_t *mesh, int argc, char **argv) {
    size_t K = mesh->processes;
    if (K > 64) {
        fprintf(stderr, "uform: --processes %zu is more than 64 local members\n", K);
        return 2;
    }
    const char *base = getenv("TMPDIR");
    char folder[1024];
    snprintf(folder, sizeof folder, "%s/uform-train-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(folder)) {
        fprintf(stderr, "uform: cannot make a folder under %s: %s\n", base && *base ? base : "/tmp", strerror(errno));
        return 1;
    }
    int have_threads = 0;
    for (int i = 1; i < argc; ++i) have_threads |= strcmp(argv[i], "--threads") == 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char threads[32], count[32], index[64][32];
    snprintf(threads, sizeof threads, "%ld", cores / (long)K > 0 ? cores / (long)K : 1L);
    snprintf(count, sizeof count, "%zu", K);
    /* Every member: this program, the command, the same flags but --processes, and its mesh flags. */
    char **arguments = calloc((size_t)argc + 20, sizeof *arguments);
    pid_t *pids = calloc(K, sizeof *pids);
    int *exits = calloc(K, sizeof *exits);
    stream_t *streams = calloc(2 * K, sizeof *streams);
    if (!arguments || !pids || !exits || !streams) {
        fprintf(stderr, "uform: out of memory\n");
        free(arguments), free(pids), free(exits), free(streams);
        rmdir(folder);
        return 1;
    }
    size_t n = 0, index_slot;
    arguments[n++] = "/proc/self/exe";
    arguments[n++] = argv[0]; /* the command: train or index */
    for (int i = 1; i < argc; ++i) {
        if (strncmp(argv[i], "--processes=", 12) == 0) continue;
        if (strcmp(argv[i], "--processes") == 0) {
            ++i;
            continue;
        }
        arguments[n++] = argv[i];
    }
    if (!have_threads) arguments[n++] = "--threads", arguments[n++] = threads;
    arguments[n++] = "--mesh", arguments[n++] = folder, arguments[n++] = "--job", arguments[n++] = "run";
    arguments[n++] = "--count", arguments[n++] = count, arguments[n++] = "--mesh-address", arguments[n++] = "127.0.0.1";
    arguments[n++] = "--index", index_slot = n++;
    arguments[n] = NULL;
    /* Ctrl-C reaches every member (one process group): they cancel, member 0 saves, all exit 130. */
    struct sigaction ignore, saved_interrupt;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ignore, &saved_interrupt);
    fflush(stdout), fflush(stderr);
    size_t started = 0;
    for (size_t i = 0; i < K; ++i) {
        int out[2], err[2];
        if (pipe(out) != 0 || pipe(err) != 0) break;
        snprintf(index[i % 64], sizeof index[0], "%zu", i);
        arguments[index_slot] = index[i % 64];
        pid_t pid = fork();
        if (pid == 0) {
            sigaction(SIGINT, &saved_interrupt, NULL);
            dup2(out[1], 1), dup2(err[1], 2);
            close(out[0]), close(out[1]), close(err[0]), close(err[1]);
            execv(arguments[0], arguments);
            fprintf(stderr, "uform: cannot run %s: %s\n", arguments[0], strerror(errno));
            _exit(127);
        }
        close(out[1]), close(err[1]);
        if (pid < 0) {
            close(out[0]), close(err[0]);
            break;
        }
        pids[i] = pid, exits[i] = -1;
        streams[2 * i] = (stream_t){.fd = out[0], .to = stdout};
        streams[2 * i + 1] = (stream_t){.fd = err[0], .to = stderr};
        started += 1;
    }
    if (started < K) fprintf(stderr, "uform: could only start %zu of %zu members: %s\n", started, K, strerror(errno));
    size_t running = started, first_failure = K;
    double stop_at = 0; /* once a member failed: when the others are stopped */
    int status = started < K ? 1 : 0;
    if (started < K) stop_at = cli_now();
    while (running > 0) {
        struct pollfd polls[128];
        size_t owners[128], count_polls = 0;
        for (size_t s = 0; s < 2 * started && count_polls < 128; ++s)
            if (streams[s].fd >= 0) polls[count_polls] = (struct pollfd){streams[s].fd, POLLIN, 0}, owners[count_polls++] = s;
        if (count_polls) poll(polls, count_polls, 100);
        else {
            struct timespec pause = {0, 50000000};
            nanosleep(&pause, NULL);
        }
        for (size_t p = 0; p < count_polls; ++p) {
            if (!(polls[p].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            stream_t *stream = &streams[owners[p]];
            ssize_t got = read(stream->fd, stream->pending + stream->used, sizeof stream->pending - stream->used);
            if (got > 0) {
                stream->used += (size_t)got;
                forward(stream, owners[p] / 2, 0);
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                forward(stream, owners[p] / 2, 1);
                close(stream->fd);
                stream->fd = -1;
            }
        }
        for (size_t i = 0; i < started; ++i) {
            int wait_status;
            if (exits[i] != -1 || waitpid(pids[i], &wait_status, WNOHANG) != pids[i]) continue;
            exits[i] = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
            running -= 1;
            /* Exit 3 is a finished run that listed bad inputs (train's --skip-bad, index's errors
             * file): not a failure to stop the others for, but the run's status unless one fails. */
            if (exits[i] == 3 && status == 0) status = 3;
            if (exits[i] != 0 && exits[i] != 3 && first_failure == K) {
                first_failure = i;
                stop_at = cli_now() + 5.0;
            }
        }
        if (stop_at > 0 && cli_now() >= stop_at)
            for (size_t i = 0; i < started; ++i)
                if (exits[i] == -1) kill(pids[i], SIGKILL);
    }
    for (size_t s = 0; s < 2 * started; ++s)
        if (streams[s].fd >= 0) forward(&streams[s], s / 2, 1), close(streams[s].fd);
    sigaction(SIGINT, &saved_interrupt, NULL);
    if (first_failure < K && exits[first_failure] == 130) {
        status = 130; /* interrupted: member 0 said where it saved */
    } else if (first_failure < K) {
        status = exits[first_failure] > 128 ? 1 : exits[first_failure];
        fprintf(stderr, "uform: member %zu of %zu failed (exit %d); the run failed\n", first_failure, K,
                exits[first_failure]);
    }
    remove_tree(folder);
    free(arguments), free(pids), free(exits), free(streams);
    return status;
}

/* ---- a member ---- */

int train_mesh_join(train_mesh_t *mesh, uform_executor_t executor, const uform_trainer_config_t *config,
                    const char *agreement, int quiet) {
    if (!mesh->where) return 0;
    uform_mesh_options_t options = {0};
    options.host_domain_index = mesh->index, options.host_domain_count = mesh->count;
    options.directory = mesh->directory, options.rendezvous = mesh->rendezvous, options.job = mesh->job;
    options.address = mesh->address, options.timeout_seconds = mesh->timeout;
    options.launcher = mesh->have_index ? UFORM_MESH_LAUNCHER_NONE : UFORM_MESH_LAUNCHER_AUTO;
    options.overlap = overlap_none(mesh) ? UFORM_MESH_OVERLAP_NONE : UFORM_MESH_OVERLAP_BACKWARD;
    options.trainer_config = config;
    options.agreement = agreement;
    uform_outcome_t outcome = {0};
    if (uform_mesh_bootstrap(executor, &options, &mesh->mesh, &outcome) != UFORM_OK) {
        char line[640];
        uform_outcome_format(&outcome, line, sizeof line);
        fprintf(stderr, "uform: %s\n", line);
        return 1;
    }
    uform_mesh_description_t description;
    uform_mesh_describe(mesh->mesh, &description);
    if (quiet) return 0;
    char launched[300] = "";
    const uform_mesh_launch_t *launch = &mesh->launch;
    if (description.launcher != UFORM_MESH_LAUNCHER_NONE)
        snprintf(launched, sizeof launched, ", %zu on this host; launched by %s (%s)", description.local_members,
                 uform_mesh_launcher_name(description.launcher), launch->variables);
    const char *where = mesh->directory ? mesh->directory : mesh->rendezvous ? mesh->rendezvous : launch->rendezvous;
    char from[140] = "";
    if (!mesh->directory && !mesh->rendezvous) snprintf(from, sizeof from, " (%s)", launch->rendezvous_from);
    const char *job = mesh->job ? mesh->job : launch->job[0] ? launch->job : "uform";
    fprintf(stderr, "uform: mesh of %zu members (%zu per host domain), this is member %zu%s; job '%s' at %s%s; "
                    "%zu threads\n",
            description.members_total, description.members_per_host_domain, description.first_member_index, launched,
            job, where, from, uform_executor_threads(executor));
    return 0;
}

/* Prints `word` quoted for a POSIX shell when it needs it. */
static void print_word(FILE *to, const char *word) {
    int plain = *word != 0;
    for (const char *c = word; *c; ++c)
        plain &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                 strchr("-_./:=,+@%", *c) != NULL;
    if (plain) {
        fputs(word, to);
        return;
    }
    fputc('\'', to);
    for (const char *c = word; *c; ++c) {
        if (*c == '\'') fputs("'\\''", to);
        else fputc(*c, to);
    }
    fputc('\'', to);
}

void train_mesh_say_resume(int argc, char **argv, const char *out, uint64_t step, size_t remaining) {
    fprintf(stderr, "uform: saved step %llu to %s (weights, optimizer, data order); resume every member with\n  uform",
            (unsigned long long)step, out);
    for (int i = 0; i < argc; ++i) {
        int resume = strcmp(argv[i], "--resume") == 0, steps = strcmp(argv[i], "--steps") == 0 && remaining;
        if ((resume || steps) && i + 1 < argc) {
            ++i; /* replaced below */
            continue;
        }
        fputc(' ', stderr);
        print_word(stderr, argv[i]);
    }
    fputs(" --resume ", stderr);
    print_word(stderr, out);
    if (remaining) fprintf(stderr, " --steps %zu", remaining);
    fputs("\n  (under a launcher: the same launch with these arguments; any number of members)\n", stderr);
}

int train_mesh_leads(const train_mesh_t *mesh) { return !mesh->mesh || mesh->index == 0; }

void train_mesh_free(train_mesh_t *mesh) {
    uform_mesh_free(mesh->mesh);
    mesh->mesh = NULL;
}
