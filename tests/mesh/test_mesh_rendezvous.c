/*
 * The bootstrap without a shared folder (docs/mesh.md, "Rendezvous"), at a tcp:// store member 0
 * hosts and at a Redis server this test starts on a free loopback port: the same refusals as the
 * folder's (test_mesh_bootstrap), each with its status, a message naming what it found, and within
 * the timeout plus 2 s:
 *
 *   tcp     a member that never comes (TIMEOUT naming it); member 0, the store's host, never comes
 *           (TIMEOUT: nobody answers); members that disagree (CONFIG_MISMATCH naming the field and
 *           both values, on every member, also the one that did not find it); two processes claiming
 *           one index; the store's host SIGKILLed while the others wait for a member (PEER_LOST at
 *           once, not at the timeout); a store of another job; a good bootstrap's description
 *   redis   a member that never comes; members that disagree; what a killed member leaves is refused
 *           as an earlier run's; a good bootstrap leaves no key behind; no server (TIMEOUT)
 *
 *   test_mesh_rendezvous tcp|redis
 */
#include <signal.h>

#include "common/check.h"
#include "common/skip.h"
#include "mesh_test.h"

static char folder[256];
static char rendezvous[128];

typedef struct scenario_t {
    const char *job;
    size_t count;
    double timeout;
    size_t hidden[MESH_TEST_MAX_MEMBERS];  /* a trainer config's hidden (0: the default config) */
    size_t indices[MESH_TEST_MAX_MEMBERS]; /* index of member process i, when use_indices */
    int use_indices;
    double delay[MESH_TEST_MAX_MEMBERS];   /* seconds member process i waits before it starts */
    const char *where;                     /* another rendezvous for every member, or NULL */
    size_t slot;                           /* process i writes outcome.{slot + i} */
} scenario_t;

/* Each process bootstraps, writes "status\nmessage" to folder/outcome.{process}, and answers 0. */
static int member(size_t process, size_t processes, void *context) {
    (void)processes;
    const scenario_t *scenario = context;
    if (scenario->delay[process] > 0) mesh_test_sleep(scenario->delay[process]);
    uform_trainer_config_t config = mesh_test_config();
    if (scenario->hidden[process]) config.hidden = scenario->hidden[process];
    uform_mesh_options_t options = {0};
    options.host_domain_index = scenario->use_indices ? scenario->indices[process] : process;
    options.host_domain_count = scenario->count;
    options.rendezvous = scenario->where ? scenario->where : rendezvous;
    options.job = scenario->job, options.timeout_seconds = scenario->timeout, options.address = "127.0.0.1";
    options.trainer_config = &config;
    uform_outcome_t outcome = {0};
    uform_mesh_t mesh = NULL;
    uform_status_t status = uform_mesh_bootstrap(NULL, &options, &mesh, &outcome);
    char text[600], path[512];
    uform_mesh_description_t description;
    memset(&description, 0, sizeof description);
    if (mesh) uform_mesh_describe(mesh, &description);
    int length = snprintf(text, sizeof text, "%d %zu %zu\n%s", (int)status, description.members_total,
                          description.first_member_index, outcome.message);
    snprintf(path, sizeof path, "%s/outcome.%zu", folder, scenario->slot + process);
    mesh_test_write(path, text, (size_t)length);
    uform_mesh_free(mesh);
    return 0;
}

typedef struct outcome_t {
    int status;
    size_t members, index;
    char message[600];
    double seconds;
} outcome_t;

static void collect(const mesh_members_t *members, size_t processes, outcome_t *outcomes, const char *job,
                    size_t slot) {
    for (size_t i = 0; i < processes; ++i) {
        char path[512];
        snprintf(path, sizeof path, "%s/outcome.%zu", folder, slot + i);
        size_t length = 0;
        char *text = test_read_file(path, &length);
        outcomes[i].status = -1, outcomes[i].message[0] = 0, outcomes[i].seconds = members->ended[i];
        if (text) {
            text = realloc(text, length + 1);
            text[length] = 0;
            char *newline = strchr(text, '\n');
            sscanf(text, "%d %zu %zu", &outcomes[i].status, &outcomes[i].members, &outcomes[i].index);
            snprintf(outcomes[i].message, sizeof outcomes[i].message, "%s", newline ? newline + 1 : "");
            free(text);
            unlink(path);
        }
        fprintf(stderr, "%s: process %zu: %s after %.2f s: %s\n", job, i,
                outcomes[i].status >= 0 ? uform_status_name((uform_status_t)outcomes[i].status) : "nothing",
                outcomes[i].seconds, outcomes[i].message);
    }
}

/* Runs `processes` members of the scenario (the others never come). */
static void run(scenario_t *scenario, size_t processes, outcome_t *outcomes, double limit) {
    mesh_members_t members;
    mesh_members_start(&members, processes, member, scenario);
    CHECK_MSG(mesh_members_wait(&members, limit) == 0, "members of '%s' had to be killed", scenario->job);
    for (size_t i = 0; i < processes; ++i)
        CHECK_MSG(members.exits[i] == 0, "member %zu of '%s' exited with %d", i, scenario->job, members.exits[i]);
    collect(&members, processes, outcomes, scenario->job, scenario->slot);
}

static void test_good(void) {
    scenario_t scenario = {.job = "good", .count = 3, .timeout = 20};
    outcome_t outcomes[3];
    run(&scenario, 3, outcomes, 60);
    for (size_t i = 0; i < 3; ++i) {
        CHECK_STATUS(outcomes[i].status, UFORM_OK);
        CHECK_EQ_INT(outcomes[i].members, 3);
        CHECK_EQ_INT(outcomes[i].index, i);
    }
}

static void test_missing(size_t absent) {
    scenario_t scenario = {.job = absent == 0 ? "no-host" : "missing", .count = 3, .timeout = 2};
    outcome_t outcomes[3];
    /* The absent member's process exists but starts only after the others have given up. */
    scenario.use_indices = 1;
    size_t process = 0;
    for (size_t i = 0; i < 3; ++i)
        if (i != absent) scenario.indices[process++] = i;
    run(&scenario, 2, outcomes, 30);
    for (size_t i = 0; i < 2; ++i) {
        CHECK_STATUS(outcomes[i].status, UFORM_TIMEOUT);
        if (absent == 0) {
            CHECK_CONTAINS(outcomes[i].message, "no rendezvous store answered");
        } else {
            CHECK_CONTAINS(outcomes[i].message, "member 2 of 3 did not arrive");
        }
        CHECK_MSG(outcomes[i].seconds <= 2 + 2, "process %zu gave up after %.2f s (timeout 2 s)", i, outcomes[i].seconds);
        CHECK_MSG(outcomes[i].seconds >= 1.9, "process %zu gave up after %.2f s, before the timeout", i, outcomes[i].seconds);
    }
}

static void test_mismatch(void) {
    scenario_t scenario = {.job = "mismatch", .count = 3, .timeout = 10};
    scenario.hidden[0] = scenario.hidden[1] = 128, scenario.hidden[2] = 256; /* 0 and 1 agree with each other */
    scenario.delay[2] = 0.5;  /* so that the others are waiting when it comes */
    outcome_t outcomes[3];
    run(&scenario, 3, outcomes, 40);
    for (size_t i = 0; i < 3; ++i) {
        CHECK_STATUS(outcomes[i].status, UFORM_CONFIG_MISMATCH);
        CHECK_CONTAINS(outcomes[i].message, "trainer.hidden");
        CHECK_CONTAINS(outcomes[i].message, "'128'");
        CHECK_CONTAINS(outcomes[i].message, "'256'");
        CHECK_MSG(outcomes[i].seconds < 5, "process %zu took %.2f s to see the mismatch", i, outcomes[i].seconds);
    }
}

static void test_duplicate(void) {
    /* Members 0 and 1 wait for member 2, who never comes; meanwhile a second index 1 arrives. */
    scenario_t scenario = {.job = "duplicate", .count = 3, .timeout = 3, .use_indices = 1, .indices = {0, 1, 1}};
    scenario.delay[2] = 0.5;
    outcome_t outcomes[3];
    run(&scenario, 3, outcomes, 30);
    int claimed = 0;
    for (size_t i = 0; i < 3; ++i)
        claimed += outcomes[i].status == UFORM_INVALID_ARGUMENT && strstr(outcomes[i].message, "index 1 of job") &&
                   strstr(outcomes[i].message, "already claimed by process");
    CHECK_MSG(claimed >= 1, "no process was told that index 1 is claimed: %s | %s | %s", outcomes[0].message,
              outcomes[1].message, outcomes[2].message);
}

/* Member 0 hosts the store; it is SIGKILLed while member 1 waits for member 2, who never comes. */
static void test_host_killed(void) {
    scenario_t scenario = {.job = "host-killed", .count = 3, .timeout = 20};
    mesh_members_t members;
    mesh_members_start(&members, 2, member, &scenario);
    mesh_test_sleep(1.0); /* both are in the hello barrier by now (the timeout is 20 s) */
    double killed = mesh_test_now() - members.started;
    kill(members.pids[0], SIGKILL);
    CHECK_MSG(mesh_members_wait(&members, 15) == 0, "member 1 still waited 15 s after the store's host died");
    CHECK_EQ_INT(members.exits[0], 128 + SIGKILL);
    outcome_t outcomes[2];
    collect(&members, 2, outcomes, scenario.job, 0);
    CHECK_STATUS(outcomes[1].status, UFORM_PEER_LOST);
    CHECK_CONTAINS(outcomes[1].message, "closed the connection");
    CHECK_MSG(outcomes[1].seconds - killed < 2, "member 1 saw the store's host die %.2f s after the kill",
              outcomes[1].seconds - killed);
}

/* Member 0 hosts job "a"; a process of job "b" comes to the same store and is refused. */
static void test_other_job(void) {
    scenario_t host = {.job = "a", .count = 2, .timeout = 3};
    scenario_t guest = {.job = "b", .count = 2, .timeout = 3, .use_indices = 1, .indices = {1}, .delay = {0.5}, .slot = 1};
    mesh_members_t hosts, guests;
    mesh_members_start(&hosts, 1, member, &host);
    mesh_members_start(&guests, 1, member, &guest);
    CHECK(mesh_members_wait(&guests, 10) == 0);
    CHECK(mesh_members_wait(&hosts, 10) == 0);
    outcome_t outcomes[2];
    collect(&hosts, 1, outcomes, host.job, 0);
    collect(&guests, 1, outcomes + 1, guest.job, 1);
    CHECK_STATUS(outcomes[0].status, UFORM_TIMEOUT);
    CHECK_STATUS(outcomes[1].status, UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcomes[1].message, "serves job 'a', not 'b'");
}

/* What a Redis server holds under "uform/": one line per key (redis-cli from redis-tools). */
static size_t redis_keys(int port, const char *pattern) {
    char command[256];
    snprintf(command, sizeof command, "redis-cli -p %d --scan --pattern '%s' 2>/dev/null", port, pattern);
    FILE *pipe = popen(command, "r");
    size_t lines = 0;
    char line[512];
    while (pipe && fgets(line, sizeof line, pipe)) lines += 1;
    if (pipe) pclose(pipe);
    return lines;
}

/* A member killed in its hello barrier leaves its facts: the next run of that job is refused. */
static void test_redis_left_behind(void) {
    scenario_t scenario = {.job = "left", .count = 2, .timeout = 20};
    mesh_members_t members;
    mesh_members_start(&members, 1, member, &scenario); /* member 0 alone: it waits for member 1 */
    mesh_test_sleep(1.0);
    kill(members.pids[0], SIGKILL);
    mesh_members_wait(&members, 10);
    scenario.timeout = 3;
    outcome_t outcomes[2];
    run(&scenario, 2, outcomes, 30);
    int refused = 0;
    for (size_t i = 0; i < 2; ++i)
        refused += outcomes[i].status == UFORM_INVALID_ARGUMENT && strstr(outcomes[i].message, "left by an earlier run") &&
                   strstr(outcomes[i].message, "which has exited");
    CHECK_MSG(refused >= 1, "the facts of a killed member were not refused: %s | %s", outcomes[0].message,
              outcomes[1].message);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "tcp";
    if (strcmp(mode, "tcp") && strcmp(mode, "redis")) {
        fprintf(stderr, "usage: test_mesh_rendezvous tcp|redis\n");
        return 2;
    }
    mesh_test_folder(folder, sizeof folder, "rendezvous");
    int port = mesh_test_free_port();
    pid_t redis = 0;
    if (!strcmp(mode, "redis")) {
        redis = mesh_test_redis_start(folder, port);
        if (redis == 0) {
            mesh_test_remove(folder);
            return check_skip_missing("the Redis rendezvous needs redis-server");
        }
        CHECK_MSG(redis > 0, "redis-server did not come up on port %d", port);
        if (redis < 0) return mesh_test_remove(folder), check_finish();
    }
    snprintf(rendezvous, sizeof rendezvous, "%s://127.0.0.1:%d", mode, port);
    test_good();
    test_missing(2);
    test_mismatch();
    test_duplicate();
    if (!strcmp(mode, "tcp")) {
        test_missing(0);
        test_host_killed();
        test_other_job();
    } else {
        CHECK_EQ_INT(redis_keys(port, "uform/good/*"), 0);
        test_redis_left_behind();
        mesh_test_redis_stop(redis), redis = 0;
        /* No server at all: every member gives up within the timeout. */
        scenario_t scenario = {.job = "no-server", .count = 2, .timeout = 2};
        outcome_t outcomes[2];
        run(&scenario, 2, outcomes, 30);
        for (size_t i = 0; i < 2; ++i) {
            CHECK_STATUS(outcomes[i].status, UFORM_TIMEOUT);
            CHECK_CONTAINS(outcomes[i].message, "no Redis server answered");
            CHECK_MSG(outcomes[i].seconds <= 2 + 2, "process %zu gave up after %.2f s", i, outcomes[i].seconds);
        }
    }
    mesh_test_redis_stop(redis);
    mesh_test_remove(folder);
    return check_finish();
}
