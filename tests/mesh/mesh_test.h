/*
 * Helpers for the mesh's tests: members as forked children with a deadline (every child is waited
 * for or killed, so a test never leaves processes behind), scratch folders, small result files, and
 * the training lines the members share out. Header-only; each test includes it once.
 */
#ifndef UFORM_TESTS_MESH_TEST_H
#define UFORM_TESTS_MESH_TEST_H

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/read_file.h"
#include "demo_media.h"
#include "uform/uform.h"

#define MESH_TEST_MAX_MEMBERS 8

static inline double mesh_test_now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

static inline void mesh_test_sleep(double seconds) {
    struct timespec pause = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&pause, &pause) == -1 && errno == EINTR) {
    }
}

/* A fresh folder under $TMPDIR (or /tmp); exits the test when it cannot be made. */
static inline void mesh_test_folder(char *path, size_t capacity, const char *name) {
    const char *base = getenv("TMPDIR");
    snprintf(path, capacity, "%s/uform-%s-XXXXXX", base && *base ? base : "/tmp", name);
    if (!mkdtemp(path)) {
        fprintf(stderr, "cannot make a folder under %s: %s\n", base ? base : "/tmp", strerror(errno));
        exit(1);
    }
}

/* Removes a folder tree (two levels are all the tests make). */
static inline void mesh_test_remove(const char *path) {
    DIR *folder = opendir(path);
    if (folder) {
        struct dirent *entry;
        char child[4096];
        while ((entry = readdir(folder)) != NULL) {
            if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
            if (snprintf(child, sizeof child, "%.3800s/%.255s", path, entry->d_name) >= (int)sizeof child) continue;
            struct stat info;
            if (lstat(child, &info) == 0 && S_ISDIR(info.st_mode)) mesh_test_remove(child);
            else unlink(child);
        }
        closedir(folder);
    }
    rmdir(path);
}

typedef int (*mesh_member_fn)(size_t index, size_t count, void *context);

typedef struct mesh_members_t {
    pid_t pids[MESH_TEST_MAX_MEMBERS];
    int exits[MESH_TEST_MAX_MEMBERS];   /* exit status, or 128 + signal, or -1 while running */
    double ended[MESH_TEST_MAX_MEMBERS]; /* seconds after the start */
    double started;
    size_t count;
} mesh_members_t;

/* Forks `count` children; child i runs member(i, count, context) and exits with its answer. */
static inline void mesh_members_start(mesh_members_t *members, size_t count, mesh_member_fn member, void *context) {
    memset(members, 0, sizeof *members);
    members->count = count, members->started = mesh_test_now();
    fflush(stdout), fflush(stderr);
    for (size_t i = 0; i < count; ++i) {
        members->exits[i] = -1;
        pid_t pid = fork();
        if (pid == 0) {
            /* exit, not _exit: under LeakSanitizer the child's leaks are checked too. */
            exit(member(i, count, context));
        }
        if (pid < 0) {
            fprintf(stderr, "fork: %s\n", strerror(errno));
            members->exits[i] = 255;
        }
        members->pids[i] = pid;
    }
}

/* Waits until every child has exited or `seconds` have passed; kills (SIGKILL) and reaps the rest.
 * Answers how many had to be killed. */
static inline int mesh_members_wait(mesh_members_t *members, double seconds) {
    double deadline = mesh_test_now() + seconds;
    size_t running = 0;
    for (size_t i = 0; i < members->count; ++i) running += members->exits[i] == -1;
    while (running > 0 && mesh_test_now() < deadline) {
        for (size_t i = 0; i < members->count; ++i) {
            if (members->exits[i] != -1) continue;
            int status;
            pid_t done = waitpid(members->pids[i], &status, WNOHANG);
            if (done == members->pids[i]) {
                members->exits[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                members->ended[i] = mesh_test_now() - members->started;
                running -= 1;
            }
        }
        if (running) mesh_test_sleep(0.01);
    }
    int killed = 0;
    for (size_t i = 0; i < members->count; ++i) {
        if (members->exits[i] != -1) continue;
        kill(members->pids[i], SIGKILL);
        kill(members->pids[i], SIGCONT);
        int status;
        waitpid(members->pids[i], &status, 0);
        members->exits[i] = 128 + SIGKILL, members->ended[i] = mesh_test_now() - members->started;
        killed += 1;
    }
    return killed;
}

/* Writes / reads a whole small file; 0 on success. */
static inline int mesh_test_write(const char *path, const void *bytes, size_t length) {
    FILE *file = fopen(path, "wb");
    if (!file) return -1;
    int ok = fwrite(bytes, 1, length, file) == length;
    return (fclose(file) == 0 && ok) ? 0 : -1;
}

/* ---- rendezvous without a folder ---- */

/* A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, let go). */
static inline int mesh_test_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET, address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&address, sizeof address) == 0 &&
        getsockname(fd, (struct sockaddr *)&address, &length) == 0)
        port = ntohs(address.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* Whether something accepts connections on 127.0.0.1:port. */
static inline int mesh_test_listening(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET, address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons((uint16_t)port);
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

/* Starts Debian's redis-server on 127.0.0.1:port (no persistence, its files in `folder`) and waits
 * until it answers (at most 10 s). Answers its process id; 0 when redis-server is not installed;
 * -1 when it did not come up. */
static inline pid_t mesh_test_redis_start(const char *folder, int port) {
    if (access("/usr/bin/redis-server", X_OK) != 0) return 0;
    char port_text[16];
    snprintf(port_text, sizeof port_text, "%d", port);
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 1), dup2(null, 2);
        execl("/usr/bin/redis-server", "redis-server", "--port", port_text, "--bind", "127.0.0.1", "--save", "",
              "--appendonly", "no", "--daemonize", "no", "--dir", folder, "--loglevel", "warning", (char *)NULL);
        _exit(127);
    }
    if (pid < 0) return -1;
    for (int i = 0; i < 1000; ++i) {
        if (mesh_test_listening(port)) return pid;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) return -1;
        mesh_test_sleep(0.01);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static inline void mesh_test_redis_stop(pid_t pid) {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 500; ++i) {
        if (waitpid(pid, NULL, WNOHANG) == pid) return;
        mesh_test_sleep(0.01);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* ---- training lines, shared out like `uform train` does ---- */

typedef struct mesh_line_t {
    const char *text;
    int modality;            /* 0: a choice example; else the media of a pair */
    int shape, colour;       /* images */
    double where;            /* an image's centre, or a tone's frequency */
    const char *legal;       /* choices on the text (pairs may have them too) */
    char target;
} mesh_line_t;

static const mesh_line_t mesh_test_lines[] = {
    {"a red disc", UFORM_MODALITY_IMAGE, 0, 0, 14, NULL, 0},
    {"a blue square", UFORM_MODALITY_IMAGE, 1, 1, 30, "yn", 'n'},
    {"a hum", UFORM_MODALITY_AUDIO, 0, 0, 220, NULL, 0},
    {"is the sky blue? ", 0, 0, 0, 0, "yn", 'y'},
    {"a green disc", UFORM_MODALITY_IMAGE, 0, 2, 20, NULL, 0},
    {"a low tone", UFORM_MODALITY_AUDIO, 0, 0, 110, NULL, 0},
    {"a red square", UFORM_MODALITY_IMAGE, 1, 0, 24, NULL, 0},
    {"pick a vowel: ", 0, 0, 0, 0, "aeiou", 'e'},
    /* The last third holds only choice examples: with 3 members, member 2's share has no bags. */
    {"yes or no? ", 0, 0, 0, 0, "yn", 'n'},
    {"pick a digit: ", 0, 0, 0, 0, "0123456789", '7'},
    {"true or false? ", 0, 0, 0, 0, "tf", 't'},
    {"a or b? ", 0, 0, 0, 0, "ab", 'b'},
};
#define MESH_TEST_LINES (sizeof mesh_test_lines / sizeof mesh_test_lines[0])

typedef struct mesh_batch_t {
    unsigned char *data;
    size_t used;
    size_t offsets[2 * MESH_TEST_LINES + 1];
    uform_modality_t modalities[2 * MESH_TEST_LINES];
    char choices[256];
    size_t choice_offsets[2 * MESH_TEST_LINES + 1], choice_used;
    uint8_t targets[2 * MESH_TEST_LINES];
    size_t bags[2 * MESH_TEST_LINES + 1], bag_count;
    uint8_t sides[2 * MESH_TEST_LINES];
    size_t lefts[MESH_TEST_LINES], rights[MESH_TEST_LINES], groups[MESH_TEST_LINES], relations;
    size_t count;
} mesh_batch_t;

static inline void mesh_batch_add(mesh_batch_t *batch, uform_modality_t modality, const void *bytes, size_t length,
                                  const char *legal, char target) {
    batch->data = realloc(batch->data, batch->used + length + 1);
    memcpy(batch->data + batch->used, bytes, length);
    batch->used += length;
    size_t i = batch->count++;
    batch->offsets[i + 1] = batch->used;
    batch->modalities[i] = modality;
    size_t legal_length = legal ? strlen(legal) : 0;
    memcpy(batch->choices + batch->choice_used, legal ? legal : "", legal_length);
    batch->choice_used += legal_length;
    batch->choice_offsets[i + 1] = batch->choice_used;
    batch->targets[i] = (uint8_t)target;
}

/* The batch of lines [first, end), as `uform train` builds it: each pair's text and media are two
 * bags (sides 0 and 1) with a relation in temperature group (audio ? 1 : 0); the choice examples'
 * texts follow the bags. An empty share of pairs has no bags at all (bags = {0}). */
static inline void mesh_batch_build(mesh_batch_t *batch, size_t first, size_t end) {
    memset(batch, 0, sizeof *batch);
    static const uint8_t colours[3][3] = {{220, 30, 30}, {30, 40, 210}, {40, 200, 60}};
    for (int pass = 0; pass < 2; ++pass)
        for (size_t l = first; l < end; ++l) {
            const mesh_line_t *line = &mesh_test_lines[l];
            if ((line->modality != 0) != (pass == 0)) continue;
            size_t c = batch->count;
            mesh_batch_add(batch, UFORM_MODALITY_TEXT, line->text, strlen(line->text), line->legal, line->target);
            if (pass == 1) continue;
            size_t size = 0;
            unsigned char *media;
            if (line->modality == UFORM_MODALITY_IMAGE) {
                uint8_t pixels[48 * 40 * 3];
                demo_draw(pixels, 48, 40, line->shape, colours[line->colour], line->where, 20, 12);
                media = demo_jpeg(pixels, 48, 40, &size);
            } else {
                media = demo_wav(line->where, 16000, 1, 1.0, &size);
            }
            if (!media) {
                fprintf(stderr, "a media encoder failed\n");
                exit(1);
            }
            mesh_batch_add(batch, (uform_modality_t)line->modality, media, size, NULL, 0);
            free(media);
            size_t r = batch->relations++;
            batch->lefts[r] = c, batch->rights[r] = c + 1;
            batch->groups[r] = line->modality == UFORM_MODALITY_AUDIO;
        }
    batch->bag_count = 2 * batch->relations;
    for (size_t j = 0; j <= batch->bag_count; ++j) batch->bags[j] = j;
    for (size_t j = 0; j < batch->bag_count; ++j) batch->sides[j] = (uint8_t)(j % 2);
}

static inline void mesh_batch_request(const mesh_batch_t *batch, uform_trainer_t trainer, uform_arena_t arena,
                                      uform_trainer_step_t *step) {
    memset(step, 0, sizeof *step);
    step->trainer = trainer, step->arena = arena;
    step->modalities = batch->modalities;
    step->contents.data = batch->data, step->contents.offsets = batch->offsets, step->contents.count = batch->count;
    step->bags = batch->bags, step->bag_count = batch->bag_count, step->sides = batch->sides;
    step->relations.lefts = batch->lefts, step->relations.rights = batch->rights;
    step->relations.groups = batch->groups, step->relations.count = batch->relations;
    step->choices.data = batch->choices, step->choices.offsets = batch->choice_offsets;
    step->choices.count = batch->count;
    step->choice_targets = batch->targets;
}

/* Member i's contiguous share of `lines` lines among `count`: [first, end). */
static inline void mesh_share(size_t lines, size_t i, size_t count, size_t *first, size_t *end) {
    *first = lines * i / count, *end = lines * (i + 1) / count;
}

/* The tiny trainer every mesh test uses (F32, two temperature groups). */
static inline uform_trainer_config_t mesh_test_config(void) {
    uform_trainer_config_t config;
    memset(&config, 0, sizeof config);
    config.seed = 5, config.temperature_groups = 2, config.warmup_steps = 1, config.total_steps = 10;
    config.compute = UFORM_COMPUTE_F32;
    return config;
}

static inline void mesh_test_print(const char *what, const uform_outcome_t *outcome) {
    char line[640];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "%s: %s\n", what, line);
}

/* `steps` steps of mesh_test_config's trainer (over `mesh`, or alone when NULL) on lines [first,
 * end), each in `accumulate` chunks: losses[s] = {loss, contrastive, choice, grad_norm}, *chunks the
 * stats' chunks, *out the trainer (the caller frees it). Answers 0, or 1 after printing a failure. */
static inline int mesh_test_steps(uform_mesh_t mesh, uform_executor_t executor, size_t first, size_t end,
                                  size_t accumulate, int steps, double (*losses)[4], size_t *chunks,
                                  uform_trainer_t *out) {
    uform_trainer_config_t config = mesh_test_config();
    config.mesh = mesh;
    uform_outcome_t outcome = {0};
    uform_trainer_t trainer = NULL;
    *out = NULL;
    if (uform_trainer_init_ram(executor, &config, &trainer, &outcome) != UFORM_OK) {
        mesh_test_print("init", &outcome);
        return 1;
    }
    uform_arena_t arena = NULL;
    uform_arena_for_executor(executor, &arena, &outcome);
    mesh_batch_t batch;
    mesh_batch_build(&batch, first, end);
    int failed = 0;
    for (int s = 0; s < steps && !failed; ++s) {
        uform_trainer_step_t step;
        uform_trainer_stats_t stats;
        memset(&stats, 0, sizeof stats);
        mesh_batch_request(&batch, trainer, arena, &step);
        step.accumulate = accumulate, step.stats = &stats;
        if (uform_trainer_step(&step) != UFORM_OK) {
            mesh_test_print("step", &step.outcome);
            failed = 1;
            break;
        }
        losses[s][0] = step.loss, losses[s][1] = step.contrastive, losses[s][2] = step.choice;
        losses[s][3] = step.grad_norm;
        if (chunks) *chunks = stats.chunks;
    }
    free(batch.data);
    uform_arena_free(arena);
    *out = trainer;
    return failed;
}

#endif
