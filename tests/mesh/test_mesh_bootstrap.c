/*
 * uform_mesh_bootstrap's refusals, each with its status and a message naming what it found: a member
 * that never comes (TIMEOUT naming it, within the timeout + 2 s), members that disagree
 * (CONFIG_MISMATCH naming the field and both values: the count, a trainer field, an agreement line),
 * two processes claiming one index, a job folder left by an earlier run (facts of an exited process,
 * facts older than the timeout, a store), bad options, an address that cannot be bound; and what a
 * good bootstrap leaves: the right description and an empty directory.
 */
#include <fcntl.h>
#include <sys/time.h>

#include "common/check.h"
#include "mesh_test.h"

static char folder[256];

typedef struct scenario_t {
    const char *job;
    size_t count;               /* what each member passes, unless counts[i] */
    size_t counts[MESH_TEST_MAX_MEMBERS];
    size_t indices[MESH_TEST_MAX_MEMBERS];  /* index of member process i (default i) */
    int use_indices;
    double timeout;
    size_t hidden[MESH_TEST_MAX_MEMBERS];   /* a trainer config's hidden (0: no trainer config) */
    const char *agreement[MESH_TEST_MAX_MEMBERS];
    const char *address[MESH_TEST_MAX_MEMBERS];
    double hold;                /* seconds a member keeps its mesh before freeing it */
    double delay[MESH_TEST_MAX_MEMBERS];    /* seconds a member waits before it starts */
} scenario_t;

/* Each process bootstraps, writes "status\nmessage" to folder/outcome.{process}, and answers 0. */
static int member(size_t process, size_t processes, void *context) {
    (void)processes;
    const scenario_t *scenario = context;
    if (scenario->delay[process] > 0) mesh_test_sleep(scenario->delay[process]);
    uform_trainer_config_t config = mesh_test_config();
    uform_mesh_options_t options = {0};
    options.host_domain_index = scenario->use_indices ? scenario->indices[process] : process;
    options.host_domain_count = scenario->counts[process] ? scenario->counts[process] : scenario->count;
    options.directory = folder, options.job = scenario->job, options.timeout_seconds = scenario->timeout;
    options.address = scenario->address[process] ? scenario->address[process] : "127.0.0.1";
    if (scenario->hidden[process]) {
        config.hidden = scenario->hidden[process];
        options.trainer_config = &config;
    }
    options.agreement = scenario->agreement[process];
    uform_outcome_t outcome = {0};
    uform_mesh_t mesh = NULL;
    uform_status_t status = uform_mesh_bootstrap(NULL, &options, &mesh, &outcome);
    char text[600], path[512];
    int length = snprintf(text, sizeof text, "%d\n%s", (int)status, outcome.message);
    snprintf(path, sizeof path, "%s/outcome.%zu", folder, process);
    mesh_test_write(path, text, (size_t)length);
    if (mesh && scenario->hold > 0) mesh_test_sleep(scenario->hold);
    uform_mesh_free(mesh);
    return 0;
}

typedef struct outcome_t {
    int status;
    char message[600];
    double seconds;
} outcome_t;

/* Runs `processes` members of the scenario; fills outcomes (status -1 when a member wrote none). */
static void run(scenario_t *scenario, size_t processes, outcome_t *outcomes, double limit) {
    mesh_members_t members;
    mesh_members_start(&members, processes, member, scenario);
    CHECK_MSG(mesh_members_wait(&members, limit) == 0, "members of '%s' had to be killed", scenario->job);
    for (size_t i = 0; i < processes; ++i) {
        CHECK_MSG(members.exits[i] == 0, "member %zu of '%s' exited with %d", i, scenario->job, members.exits[i]);
        char path[512];
        snprintf(path, sizeof path, "%s/outcome.%zu", folder, i);
        size_t length = 0;
        char *text = test_read_file(path, &length);
        outcomes[i].status = -1, outcomes[i].message[0] = 0, outcomes[i].seconds = members.ended[i];
        if (text) {
            text = realloc(text, length + 1);
            text[length] = 0;
            char *newline = strchr(text, '\n');
            outcomes[i].status = atoi(text);
            snprintf(outcomes[i].message, sizeof outcomes[i].message, "%s", newline ? newline + 1 : "");
            free(text);
            unlink(path);
        }
    }
}

static int job_folder_exists(const char *job) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, job);
    struct stat info;
    return stat(path, &info) == 0;
}

static void test_good(void) {
    scenario_t scenario = {.job = "good", .count = 3, .timeout = 20};
    outcome_t outcomes[3];
    run(&scenario, 3, outcomes, 60);
    for (int i = 0; i < 3; ++i) CHECK_STATUS(outcomes[i].status, UFORM_OK);
    CHECK_MSG(!job_folder_exists("good"), "a finished bootstrap left %s/good behind", folder);
    /* The description, in this process: a mesh of one. */
    uform_mesh_t mesh = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_mesh_bootstrap(NULL, NULL, &mesh, &outcome), UFORM_OK);
    uform_mesh_description_t description;
    CHECK_STATUS(uform_mesh_describe(mesh, &description), UFORM_OK);
    CHECK_EQ_INT(description.members_total, 1);
    CHECK_EQ_INT(description.members_per_host_domain, 1);
    CHECK_EQ_INT(description.gpus_per_host_domain, 0);
    CHECK_STATUS(uform_mesh_describe(NULL, &description), UFORM_INVALID_ARGUMENT);
    uform_mesh_free(mesh);
    uform_mesh_free(NULL);
}

static void test_missing_member(void) {
    scenario_t scenario = {.job = "missing", .count = 4, .timeout = 2};
    outcome_t outcomes[2];
    run(&scenario, 2, outcomes, 30);
    for (int i = 0; i < 2; ++i) {
        CHECK_STATUS(outcomes[i].status, UFORM_TIMEOUT);
        CHECK_CONTAINS(outcomes[i].message, "members 2 and 3 of 4 did not arrive");
        CHECK_MSG(outcomes[i].seconds <= 2 + 2, "member %d gave up after %.2f s (timeout 2 s)", i, outcomes[i].seconds);
        CHECK_MSG(outcomes[i].seconds >= 1.9, "member %d gave up after %.2f s, before the timeout", i, outcomes[i].seconds);
    }
    /* A timed-out bootstrap takes its facts away again, so the job can simply be started again. */
    char path[512];
    snprintf(path, sizeof path, "%s/missing/facts.0", folder);
    CHECK_MSG(access(path, F_OK) != 0, "%s is still there", path);
}

static void test_mismatches(void) {
    scenario_t count = {.job = "count", .count = 2, .timeout = 10};
    count.counts[1] = 3;
    outcome_t outcomes[2];
    run(&count, 2, outcomes, 30);
    for (int i = 0; i < 2; ++i) {
        CHECK_STATUS(outcomes[i].status, UFORM_CONFIG_MISMATCH);
        CHECK_CONTAINS(outcomes[i].message, "count: member");
        CHECK_CONTAINS(outcomes[i].message, "'2'");
        CHECK_CONTAINS(outcomes[i].message, "'3'");
        CHECK_MSG(outcomes[i].seconds < 5, "member %d took %.2f s to see the mismatch", i, outcomes[i].seconds);
    }
    scenario_t trainer = {.job = "trainer", .count = 2, .timeout = 10, .hidden = {128, 256}};
    run(&trainer, 2, outcomes, 30);
    for (int i = 0; i < 2; ++i) {
        CHECK_STATUS(outcomes[i].status, UFORM_CONFIG_MISMATCH);
        CHECK_CONTAINS(outcomes[i].message, "trainer.hidden");
        CHECK_CONTAINS(outcomes[i].message, "'128'");
        CHECK_CONTAINS(outcomes[i].message, "'256'");
    }
    scenario_t agreement = {.job = "agreement", .count = 2, .timeout = 10,
                            .agreement = {"batch=32\nlines=400", "batch=16\nlines=400"}};
    run(&agreement, 2, outcomes, 30);
    for (int i = 0; i < 2; ++i) {
        CHECK_STATUS(outcomes[i].status, UFORM_CONFIG_MISMATCH);
        CHECK_CONTAINS(outcomes[i].message, "agreement.batch");
    }
    /* A mismatch leaves the facts for the peers to read: the folder is then refused until removed. */
    scenario_t again = {.job = "agreement", .count = 2, .timeout = 10};
    run(&again, 1, outcomes, 30);
    CHECK_STATUS(outcomes[0].status, UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcomes[0].message, "left by an earlier run");
}

static void test_duplicate_index(void) {
    /* Both claims of index 1 come before member 0, so neither can find the run already met. */
    scenario_t scenario = {.job = "duplicate", .count = 2, .timeout = 10, .use_indices = 1, .indices = {0, 1, 1},
                           .delay = {0.5, 0, 0}};
    outcome_t outcomes[3];
    run(&scenario, 3, outcomes, 30);
    int ok = 0, refused = 0;
    for (int i = 0; i < 3; ++i) {
        if (outcomes[i].status == UFORM_OK) ok += 1;
        if (outcomes[i].status == UFORM_INVALID_ARGUMENT && strstr(outcomes[i].message, "index 1 of job") &&
            strstr(outcomes[i].message, "already claimed by process") &&
            strstr(outcomes[i].message, "give every member its own index"))
            refused += 1;
    }
    CHECK_MSG(ok == 2 && refused == 1, "%d bootstraps succeeded and %d were refused (want 2 and 1): %s | %s | %s", ok,
              refused, outcomes[0].message, outcomes[1].message, outcomes[2].message);
}

/* Makes folder/job/facts.0 as an earlier run would have left it. */
static void leave_facts(const char *job, long pid, const char *host, double age_seconds) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, job);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/facts.0", folder, job);
    char text[512];
    int length = snprintf(text, sizeof text, "protocol=1\nindex=0\ncount=2\nhost=%s\npid=%ld\n", host, pid);
    mesh_test_write(path, text, (size_t)length);
    if (age_seconds > 0) {
        struct timeval times[2];
        gettimeofday(&times[0], NULL);
        times[0].tv_sec -= (time_t)age_seconds, times[1] = times[0];
        utimes(path, times);
    }
}

static void test_stale(void) {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    /* Facts of a process on this host that has exited. */
    pid_t gone = fork();
    if (gone == 0) _exit(0);
    waitpid(gone, NULL, 0);
    leave_facts("exited", (long)gone, host, 0);
    scenario_t exited = {.job = "exited", .count = 2, .timeout = 5};
    outcome_t outcomes[1];
    run(&exited, 1, outcomes, 30);
    CHECK_STATUS(outcomes[0].status, UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcomes[0].message, "left by an earlier run");
    CHECK_CONTAINS(outcomes[0].message, "which has exited");
    CHECK_CONTAINS(outcomes[0].message, "remove it, or choose another job name");
    /* Facts of another host, written long ago. */
    leave_facts("old", 1, "elsewhere", 3600);
    scenario_t old = {.job = "old", .count = 2, .timeout = 5};
    run(&old, 1, outcomes, 30);
    CHECK_STATUS(outcomes[0].status, UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcomes[0].message, "longer than the timeout");
    /* A store: an earlier run got past its bootstrap. */
    char path[512];
    snprintf(path, sizeof path, "%s/stored", folder);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/stored/store", folder);
    mkdir(path, 0755);
    scenario_t stored = {.job = "stored", .count = 2, .timeout = 5};
    run(&stored, 1, outcomes, 30);
    CHECK_STATUS(outcomes[0].status, UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcomes[0].message, "store");
    /* Facts of a live process on another host, fresh: a member of a run that is still bootstrapping —
     * our index is free, so we join and wait for it (and time out, as it never finishes). */
    leave_facts("fresh", 1, "elsewhere", 0);
    scenario_t fresh = {.job = "fresh", .count = 2, .timeout = 1};
    fresh.use_indices = 1, fresh.indices[0] = 1;
    run(&fresh, 1, outcomes, 30);
    CHECK_STATUS(outcomes[0].status, UFORM_CONFIG_MISMATCH); /* its facts lack what ours hold */
}

static void test_bad_options(void) {
    uform_outcome_t outcome = {0};
    uform_mesh_t mesh = (uform_mesh_t)(void *)&outcome;
    uform_mesh_options_t options = {0};
    options.host_domain_count = 2, options.host_domain_index = 2, options.directory = folder, options.job = "x";
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK(mesh == NULL);
    CHECK_CONTAINS(outcome.message, "host_domain_index 2 is out of range");
    options.host_domain_index = 0, options.directory = NULL;
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "options.directory is missing");
    options.directory = folder, options.job = "a/b";
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "options.job 'a/b'");
    /* Only letters, digits, '.', '_' and '-', at most 128 of them, and not "." or "..". */
    static const char *const bad_jobs[] = {"..", "a b", "caf\xc3\xa9", "x:y", ""};
    for (size_t i = 0; i < sizeof bad_jobs / sizeof bad_jobs[0]; ++i) {
        options.job = bad_jobs[i];
        CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_INVALID_ARGUMENT);
        CHECK_CONTAINS(outcome.message, "options.job '");
    }
    char long_job[130];
    memset(long_job, 'j', 129);
    long_job[129] = 0;
    options.job = long_job;
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "options.job '");
    options.job = "x", options.address = "localhost";
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "options.address 'localhost'");
    options.address = "127.0.0.1", options.timeout_seconds = -1;
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "timeout_seconds");
    options.timeout_seconds = 1, options.agreement = "no equals sign";
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "options.agreement line 1");
    options.agreement = NULL, options.gpus_per_multimem_domain = 4;
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_UNSUPPORTED);
    CHECK_CONTAINS(outcome.message, "no GPU support");
    options.gpus_per_multimem_domain = 0, options.directory = "/nonexistent/uform";
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_IO);
    CHECK_CONTAINS(outcome.message, "/nonexistent/uform");
    CHECK_STATUS(uform_mesh_bootstrap(NULL, NULL, NULL, &outcome), UFORM_INVALID_ARGUMENT);
}

static void test_unbindable_address(void) {
    /* 192.0.2.1 (TEST-NET-1) is no address of this host: binding fails with UFORM_IO before the
     * member shows itself, and the peer, waiting for it, fails within its timeout. */
    scenario_t scenario = {.job = "unbound", .count = 2, .timeout = 2, .address = {"127.0.0.1", "192.0.2.1"}};
    outcome_t outcomes[2];
    run(&scenario, 2, outcomes, 30);
    CHECK_STATUS(outcomes[1].status, UFORM_IO);
    CHECK_CONTAINS(outcomes[1].message, "cannot bind the collectives to 192.0.2.1");
    CHECK_STATUS(outcomes[0].status, UFORM_TIMEOUT);
    CHECK_CONTAINS(outcomes[0].message, "member 1 of 2 did not arrive");
    CHECK_MSG(outcomes[0].seconds <= 2 + 2 + 1, "the peer gave up after %.2f s", outcomes[0].seconds);
}

int main(void) {
    mesh_test_folder(folder, sizeof folder, "bootstrap");
    test_good();
    test_missing_member();
    test_mismatches();
    test_duplicate_index();
    test_stale();
    test_bad_options();
    test_unbindable_address();
    mesh_test_remove(folder);
    return check_finish();
}
