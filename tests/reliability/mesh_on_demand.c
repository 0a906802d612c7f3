/*
 * The collectives module (libuform-gloo.so.4: Gloo and libstdc++) is loaded only by a mesh of more
 * than one member. Linked against the shared libuform, like a user's program, through the public
 * header only.
 *
 *   reliability_mesh_on_demand CHECKPOINT MODE
 *
 * Every mode first loads the checkpoint, encodes a text and bootstraps a mesh of one with no
 * module, Gloo or libstdc++ mapped (checked in /proc/self/maps). Then:
 *   found     a forked member and this process bootstrap a mesh of two over loopback: the module
 *             is found next to libuform.so (dladdr) and only now are it and libgloo mapped;
 *   missing   (UFORM_MESH_MODULE names a file that is not there) a mesh of two answers
 *             UFORM_UNSUPPORTED naming the variable and the path with dlerror's words, from four
 *             threads at once and again afterwards, leaves no job folder, maps nothing; a mesh of
 *             one and a text encode still work;
 *   stale     (UFORM_MESH_MODULE names a module of another interface revision) the same, and the
 *             message says the module is stale.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/check.h"
#include "reliability/mapped.h"
#include "uform/uform.h"

static char folder[4096];

static uform_status_t bootstrap(size_t index, size_t count, uform_mesh_t *mesh, char *message) {
    uform_mesh_options_t options;
    memset(&options, 0, sizeof options);
    options.host_domain_index = index, options.host_domain_count = count;
    options.directory = folder, options.job = "on-demand";
    options.address = "127.0.0.1", options.timeout_seconds = 20;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_mesh_bootstrap(NULL, &options, mesh, &outcome);
    snprintf(message, UFORM_OUTCOME_MESSAGE_CAPACITY, "%s", outcome.message);
    return status;
}

static void encode_text(uform_model_t model, uform_arena_t arena) {
    char text[] = "a text needs no collectives";
    size_t offsets[2] = {0, sizeof text - 1};
    uform_tape_t tape = {(unsigned char *)text, offsets, 1};
    uform_text_encode_t request = {model, NULL, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena};
    uform_status_t status = uform_text_encode(&request);
    CHECK_MSG(status == UFORM_OK, "text encode: %s: %s", uform_status_name(status), request.outcome.message);
}

static void check_nothing_mapped(void) {
    CHECK_EQ_INT(mapped("libuform-gloo", 0), 0);
    CHECK_EQ_INT(mapped("libgloo", 0), 0);
#ifndef UFORM_TEST_SANITIZED /* the sanitizers' runtimes (libasan, libubsan, libtsan) map libstdc++ themselves */
    CHECK_EQ_INT(mapped("libstdc++", 0), 0);
#endif
}

/* A mesh of one needs no collectives. */
static void check_mesh_of_one(void) {
    uform_mesh_t mesh = NULL;
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    uform_status_t status = bootstrap(0, 1, &mesh, message);
    CHECK_MSG(status == UFORM_OK && mesh, "a mesh of one: %s: %s", uform_status_name(status), message);
    uform_mesh_free(mesh);
}

static void test_found(void) {
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        uform_mesh_t mesh = NULL;
        char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
        uform_status_t status = bootstrap(1, 2, &mesh, message);
        if (status != UFORM_OK) fprintf(stderr, "member 1: %s: %s\n", uform_status_name(status), message);
        uform_mesh_free(mesh);
        _exit(status == UFORM_OK ? 0 : 1);
    }
    uform_mesh_t mesh = NULL;
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    uform_status_t status = bootstrap(0, 2, &mesh, message);
    CHECK_MSG(status == UFORM_OK, "member 0: %s: %s", uform_status_name(status), message);
    CHECK_EQ_INT(mapped("libuform-gloo", 0), 1);
    CHECK_EQ_INT(mapped("libgloo", 1), 1);
    uform_mesh_free(mesh);
    int wait_status = 0;
    CHECK(waitpid(child, &wait_status, 0) == child);
    CHECK_MSG(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0, "member 1 ended with wait status %d",
              wait_status);
}

typedef struct attempt_t {
    uform_status_t status;
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
} attempt_t;

/* Every member index differs, so the attempts cannot refuse each other at the claim; the module is
 * needed before the job folder is touched, so none gets that far. */
static void *attempt(void *argument) {
    attempt_t *self = argument;
    static size_t next;
    size_t index = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % 2;
    uform_mesh_t mesh = NULL;
    self->status = bootstrap(index, 2, &mesh, self->message);
    if (mesh) uform_mesh_free(mesh);
    return NULL;
}

static void test_refused(const char *expected) {
    const char *module = getenv("UFORM_MESH_MODULE");
    CHECK_MSG(module && module[0], "run this mode with UFORM_MESH_MODULE set");
    if (!module) return;
    attempt_t attempts[5];
    pthread_t threads[4];
    for (int i = 0; i < 4; ++i) CHECK(pthread_create(&threads[i], NULL, attempt, &attempts[i]) == 0);
    for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
    attempt(&attempts[4]); /* and once more, after: the same answer */
    printf("%s\n", attempts[0].message);
    for (int i = 0; i < 5; ++i) {
        CHECK_MSG(attempts[i].status == UFORM_UNSUPPORTED, "attempt %d: got %s (%s), expected unsupported", i,
                  uform_status_name(attempts[i].status), attempts[i].message);
        CHECK_CONTAINS(attempts[i].message, "libuform-gloo.so.4");
        CHECK_CONTAINS(attempts[i].message, "UFORM_MESH_MODULE");
        CHECK_CONTAINS(attempts[i].message, module);
        CHECK_CONTAINS(attempts[i].message, expected);
        CHECK_MSG(!strcmp(attempts[i].message, attempts[0].message), "attempt %d said '%s', attempt 0 '%s'", i,
                  attempts[i].message, attempts[0].message);
    }
    char job[4200];
    struct stat info;
    snprintf(job, sizeof job, "%s/on-demand", folder);
    CHECK_MSG(stat(job, &info) != 0 && errno == ENOENT, "%s exists after a refused bootstrap", job);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: reliability_mesh_on_demand CHECKPOINT found|missing|stale\n");
        return 2;
    }
    const char *mode = argv[2];
    const char *base = getenv("TMPDIR");
    snprintf(folder, sizeof folder, "%s/uform-mesh-on-demand-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(folder)) {
        fprintf(stderr, "cannot make %s: %s\n", folder, strerror(errno));
        return 1;
    }
    uform_model_t model = NULL;
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    if (uform_model_load_ram(NULL, argv[1], NULL, &model, &outcome) != UFORM_OK ||
        uform_arena_for_host(&arena, &outcome) != UFORM_OK) {
        fprintf(stderr, "setup: %s\n", outcome.message);
        return 1;
    }
    encode_text(model, arena);
    check_mesh_of_one();
    check_nothing_mapped(); /* a text-only process, even one with a mesh of one, maps no collectives */

    if (!strcmp(mode, "found")) {
        test_found();
    } else if (!strcmp(mode, "missing")) {
        test_refused("No such file or directory");
        check_nothing_mapped();
    } else if (!strcmp(mode, "stale")) {
        test_refused("stale");
        check_nothing_mapped();
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    check_mesh_of_one();
    encode_text(model, arena);
    rmdir(folder);
    uform_arena_free(arena);
    uform_model_free(model);
    return check_finish();
}
