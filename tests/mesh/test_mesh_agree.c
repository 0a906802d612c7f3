/*
 * Members that disagree or fail while the mesh itself is healthy: a trainer config that differs
 * (CONFIG_MISMATCH on every member, naming the field and both values, even without the config in
 * the bootstrap's facts), a member whose init fails (every init fails, naming it), a member whose
 * batch is refused or whose step is cancelled (every member's step fails with that status and the
 * trainers stay unchanged, and the next step succeeds on all, identically), members disagreeing on
 * sides, and member 0's learning-rate override used by all.
 */
#include "common/check.h"
#include "mesh_test.h"
#include "train/trainer.h"

static char folder[256];

typedef enum scenario_t { HIDDEN, BAD_RESUME, REFUSED_BATCH, CANCELLED, SIDES, OVERRIDE } scenario_t;

typedef struct report_t {
    int init_status;
    int step_status;                       /* the step that one member spoils */
    int unchanged;                         /* its trainer after that step */
    int next_status;                       /* the step after it */
    double learning_rate;                  /* the good step's */
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    uint32_t checksum;                     /* of the weights after the good step */
} report_t;

static uform_continuation_t cancel_now(size_t completed, size_t total, void *state) {
    (void)completed, (void)total, (void)state;
    return UFORM_CANCEL;
}

static uint32_t checksum(const float *values, size_t count) {
    uint32_t hash = 2166136261u;
    const unsigned char *bytes = (const unsigned char *)values;
    for (size_t i = 0; i < count * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 16777619u;
    return hash;
}

static int member(size_t index, size_t count, void *context) {
    scenario_t scenario = *(const scenario_t *)context;
    uform_executor_t executor = NULL;
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, 1, 0, &executor, &outcome) != UFORM_OK) return 1;
    char job[32];
    snprintf(job, sizeof job, "agree-%d", (int)scenario);
    uform_mesh_options_t options = {0};
    options.host_domain_index = index, options.host_domain_count = count;
    options.directory = folder, options.job = job, options.timeout_seconds = 20, options.address = "127.0.0.1";
    uform_mesh_t mesh = NULL;
    if (uform_mesh_bootstrap(executor, &options, &mesh, &outcome) != UFORM_OK) {
        mesh_test_print("bootstrap", &outcome);
        uform_executor_free(executor);
        return 1;
    }
    report_t report;
    memset(&report, 0, sizeof report);
    uform_trainer_config_t config = mesh_test_config();
    config.mesh = mesh;
    if (scenario == HIDDEN && index == 1) config.hidden = 64;
    if (scenario == BAD_RESUME && index == 1) config.resume = "/nonexistent/resume.safetensors";
    uform_trainer_t trainer = NULL;
    report.init_status = (int)uform_trainer_init_ram(executor, &config, &trainer, &outcome);
    if (report.init_status != UFORM_OK) snprintf(report.message, sizeof report.message, "%s", outcome.message);
    if (trainer) {
        uform_arena_t arena = NULL;
        uform_arena_for_executor(executor, &arena, &outcome);
        size_t first, end;
        mesh_share(MESH_TEST_LINES, index, count, &first, &end);
        mesh_batch_t batch;
        mesh_batch_build(&batch, first, end);
        size_t bytes = trainer->total * sizeof(float);
        float *before = malloc(bytes);
        memcpy(before, trainer->weights, bytes);
        uint64_t steps = trainer->steps;
        uform_trainer_step_t step;
        mesh_batch_request(&batch, trainer, arena, &step);
        size_t bad_lefts[1] = {0}, bad_rights[1] = {0};
        if (scenario == REFUSED_BATCH && index == 1)
            step.relations.lefts = bad_lefts, step.relations.rights = bad_rights, step.relations.count = 1;
        if (scenario == CANCELLED && index == 1) step.progress.callback = cancel_now;
        if (scenario == SIDES && index == 1) step.sides = NULL;
        if (scenario == OVERRIDE) step.learning_rate_override = index == 0 ? 0.004 : 0.5;
        report.step_status = (int)uform_trainer_step(&step);
        if (report.step_status != UFORM_OK) snprintf(report.message, sizeof report.message, "%s", step.outcome.message);
        report.learning_rate = step.learning_rate;
        report.unchanged = trainer->steps == steps && memcmp(before, trainer->weights, bytes) == 0;
        mesh_batch_request(&batch, trainer, arena, &step);
        report.next_status = (int)uform_trainer_step(&step);
        if (scenario != OVERRIDE) report.learning_rate = step.learning_rate;
        report.checksum = checksum(trainer->weights, trainer->total);
        free(before);
        free(batch.data);
        uform_arena_free(arena);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/report.%zu", folder, index);
    mesh_test_write(path, &report, sizeof report);
    uform_trainer_free(trainer);
    uform_mesh_free(mesh);
    uform_executor_free(executor);
    return 0;
}

static void run(scenario_t scenario, report_t *reports) {
    mesh_members_t members;
    mesh_members_start(&members, 2, member, &scenario);
    CHECK_MSG(mesh_members_wait(&members, 60) == 0, "scenario %d: members had to be killed", (int)scenario);
    for (size_t i = 0; i < 2; ++i) {
        CHECK_MSG(members.exits[i] == 0, "scenario %d: member %zu exited with %d", (int)scenario, i, members.exits[i]);
        char path[512];
        snprintf(path, sizeof path, "%s/report.%zu", folder, i);
        size_t length = 0;
        report_t *report = test_read_file(path, &length);
        memset(&reports[i], 0, sizeof reports[i]);
        reports[i].init_status = -1;
        if (report && length == sizeof *report) reports[i] = *report;
        free(report);
        unlink(path);
    }
}

int main(void) {
    mesh_test_folder(folder, sizeof folder, "agree");
    report_t reports[2];

    run(HIDDEN, reports);
    for (int i = 0; i < 2; ++i) {
        CHECK_STATUS(reports[i].init_status, UFORM_CONFIG_MISMATCH);
        CHECK_CONTAINS(reports[i].message, "hidden: member 1 has 64, member 0 has 128");
    }

    run(BAD_RESUME, reports);
    CHECK_STATUS(reports[1].init_status, UFORM_IO);
    CHECK_CONTAINS(reports[1].message, "/nonexistent/resume.safetensors");
    CHECK_STATUS(reports[0].init_status, UFORM_IO);
    CHECK_CONTAINS(reports[0].message, "member 1 of 2 could not make its trainer");
    CHECK_CONTAINS(reports[0].message, "/nonexistent/resume.safetensors");

    run(REFUSED_BATCH, reports);
    for (int i = 0; i < 2; ++i) {
        CHECK_STATUS(reports[i].init_status, UFORM_OK);
        CHECK_STATUS(reports[i].step_status, UFORM_INVALID_ARGUMENT);
        CHECK_CONTAINS(reports[i].message, "relates bag 0 with itself");
        CHECK(reports[i].unchanged);
        CHECK_STATUS(reports[i].next_status, UFORM_OK);
    }
    CHECK_CONTAINS(reports[0].message, "member 1 of 2");
    CHECK(reports[0].checksum == reports[1].checksum);

    run(CANCELLED, reports);
    for (int i = 0; i < 2; ++i) {
        CHECK_STATUS(reports[i].step_status, UFORM_CANCELLED);
        CHECK(reports[i].unchanged);
        CHECK_STATUS(reports[i].next_status, UFORM_OK);
    }
    CHECK_CONTAINS(reports[0].message, "member 1 of 2");
    CHECK(reports[0].checksum == reports[1].checksum);

    run(SIDES, reports);
    for (int i = 0; i < 2; ++i) {
        CHECK_STATUS(reports[i].step_status, UFORM_INVALID_ARGUMENT);
        CHECK_CONTAINS(reports[i].message, "every member with bags passes sides, or none does");
        CHECK(reports[i].unchanged);
        CHECK_STATUS(reports[i].next_status, UFORM_OK);
    }
    CHECK(reports[0].checksum == reports[1].checksum);

    run(OVERRIDE, reports);
    for (int i = 0; i < 2; ++i) {
        CHECK_STATUS(reports[i].step_status, UFORM_OK);
        CHECK_NEAR(reports[i].learning_rate, 0.004, 0, 1e-12);
    }
    CHECK(reports[0].checksum == reports[1].checksum);

    mesh_test_remove(folder);
    return check_finish();
}
