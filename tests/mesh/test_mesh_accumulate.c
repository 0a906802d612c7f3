/*
 * Exact large batches by accumulation (uform.h, uform_trainer_step_t.accumulate; src/train/
 * accumulate.c): a batch run in K chunks gives the step of the whole batch at once — three F32 steps
 * end with weights within 1e-5 relative of the whole batch's (per tensor 1e-4, test_mesh_parity.c
 * says why), with the same losses and gradient norms — for K = 1 (bit for bit: the same path), 2, 4
 * and 7 (chunks of uneven size, some without bags, some with choice examples only), and K above the
 * number of contents. Over a mesh too: member 0 in 3 chunks and member 1 in 2 against one process
 * with the whole batch at once. The stats say how many chunks ran. A content that cannot be decoded
 * in a later chunk is named by its index in the batch, as the batch at once names it.
 */
#include <math.h>
#include <stdint.h>

#include "common/check.h"
#include "mesh_test.h"
#include "train/trainer.h"

#define STEPS 3

static char folder[256];

typedef struct run_t {
    double losses[STEPS][4];   /* loss, contrastive, choice, grad_norm */
    size_t chunks;
    float *weights;            /* [total] */
} run_t;

/* Three steps over lines [first, end) in `accumulate` chunks, on an executor of one thread. */
static int train(uform_mesh_t mesh, size_t first, size_t end, size_t accumulate, run_t *run, uform_trainer_t *out) {
    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    *out = NULL;
    if (uform_executor_for_ram(NULL, 1, 0, &executor, &outcome) != UFORM_OK) {
        mesh_test_print("executor", &outcome);
        return 1;
    }
    int failed = mesh_test_steps(mesh, executor, first, end, accumulate, STEPS, run->losses, &run->chunks, out);
    uform_executor_free(executor); /* the trainer keeps its own reference */
    return failed;
}

/* ‖a − b‖ / ‖b‖ over every weight, and the worst tensor's. */
static double difference(uform_trainer_t trainer, const float *a, const float *b, double *worst, const char **where) {
    double total_difference = 0, total_norm = 0;
    *worst = 0;
    for (size_t p = 0; p < trainer->param_count; ++p) {
        const uform__param_t *param = &trainer->params[p];
        double norm = 0, d2 = 0;
        for (size_t i = param->offset; i < param->offset + param->count; ++i) {
            double d = (double)a[i] - (double)b[i];
            norm += (double)b[i] * b[i], d2 += d * d;
        }
        total_difference += d2, total_norm += norm;
        double relative = norm > 0 ? sqrt(d2 / norm) : sqrt(d2);
        if (relative > *worst) *worst = relative, *where = param->spec.name;
    }
    return sqrt(total_difference / total_norm);
}

static void compare(const char *what, uform_trainer_t reference, const run_t *want, const run_t *have) {
    const char *where = "";
    double worst = 0, overall = difference(reference, have->weights, want->weights, &worst, &where);
    fprintf(stderr, "%s: weights %.3g relative to the whole batch's (worst tensor %.3g, %s)\n", what, overall, worst,
            where);
    CHECK_MSG(overall <= 1e-5, "%s: weights differ by %.3g relative", what, overall);
    CHECK_MSG(worst <= 1e-4, "%s: %s differs by %.3g relative", what, where, worst);
    for (int s = 0; s < STEPS; ++s)
        for (int q = 0; q < 4; ++q) CHECK_NEAR(have->losses[s][q], want->losses[s][q], 1e-7, 1e-5);
}

static void test_alone(void) {
    run_t whole;
    memset(&whole, 0, sizeof whole);
    uform_trainer_t reference = NULL;
    CHECK(train(NULL, 0, MESH_TEST_LINES, 0, &whole, &reference) == 0);
    if (!reference) return;
    whole.weights = reference->weights;
    CHECK_EQ_INT(whole.chunks, 1);
    static const size_t ks[] = {1, 2, 4, 7, 1000};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; ++i) {
        run_t run;
        memset(&run, 0, sizeof run);
        uform_trainer_t trainer = NULL;
        CHECK(train(NULL, 0, MESH_TEST_LINES, ks[i], &run, &trainer) == 0);
        if (!trainer) continue;
        run.weights = trainer->weights;
        char what[64];
        snprintf(what, sizeof what, "accumulate %zu (%zu chunks)", ks[i], run.chunks);
        compare(what, reference, &whole, &run);
        if (ks[i] == 1)
            CHECK_MSG(memcmp(trainer->weights, reference->weights, trainer->total * sizeof(float)) == 0,
                      "accumulate 1 differs from the whole batch at once");
        else
            CHECK_MSG(run.chunks >= 2 && run.chunks <= ks[i], "accumulate %zu ran %zu chunks", ks[i], run.chunks);
        uform_trainer_free(trainer);
    }
    uform_trainer_free(reference);
}

/* ---- over a mesh ---- */

static int member(size_t index, size_t count, void *context) {
    (void)context;
    uform_trainer_config_t config = mesh_test_config();
    uform_mesh_options_t options = {0};
    options.host_domain_index = index, options.host_domain_count = count;
    options.directory = folder, options.job = "accumulate", options.timeout_seconds = 60, options.address = "127.0.0.1";
    options.trainer_config = &config;
    uform_outcome_t outcome = {0};
    uform_mesh_t mesh = NULL;
    if (uform_mesh_bootstrap(NULL, &options, &mesh, &outcome) != UFORM_OK) {
        mesh_test_print("bootstrap", &outcome);
        return 1;
    }
    size_t first, end;
    mesh_share(MESH_TEST_LINES, index, count, &first, &end);
    run_t run;
    memset(&run, 0, sizeof run);
    uform_trainer_t trainer = NULL;
    int failed = train(mesh, first, end, index == 0 ? 3 : 2, &run, &trainer);
    if (!failed) {
        char path[512];
        snprintf(path, sizeof path, "%s/member.%zu", folder, index);
        size_t bytes = sizeof run + trainer->total * sizeof(float);
        unsigned char *buffer = malloc(bytes);
        memcpy(buffer, &run, sizeof run);
        memcpy(buffer + sizeof run, trainer->weights, trainer->total * sizeof(float));
        failed = mesh_test_write(path, buffer, bytes);
        free(buffer);
    }
    uform_trainer_free(trainer);
    uform_mesh_free(mesh);
    return failed;
}

static void test_mesh(void) {
    run_t whole;
    memset(&whole, 0, sizeof whole);
    uform_trainer_t reference = NULL;
    CHECK(train(NULL, 0, MESH_TEST_LINES, 0, &whole, &reference) == 0);
    if (!reference) return;
    whole.weights = reference->weights;
    mesh_members_t members;
    mesh_members_start(&members, 2, member, NULL);
    CHECK(mesh_members_wait(&members, 120) == 0);
    for (size_t i = 0; i < 2; ++i) {
        CHECK_MSG(members.exits[i] == 0, "member %zu exited with %d", i, members.exits[i]);
        char path[512];
        snprintf(path, sizeof path, "%s/member.%zu", folder, i);
        size_t length = 0;
        unsigned char *got = test_read_file(path, &length);
        CHECK_MSG(got && length == sizeof(run_t) + reference->total * sizeof(float), "member %zu wrote no result", i);
        if (!got || length != sizeof(run_t) + reference->total * sizeof(float)) {
            free(got);
            continue;
        }
        run_t run;
        memcpy(&run, got, sizeof run);
        run.weights = (float *)(got + sizeof run);
        char what[64];
        snprintf(what, sizeof what, "2 members, member %zu in %zu chunks", i, run.chunks);
        compare(what, reference, &whole, &run);
        CHECK_EQ_INT(run.chunks, i == 0 ? 3 : 2);
        free(got);
    }
    uform_trainer_free(reference);
}

static void test_bad_content(void) {
    uform_trainer_config_t config = mesh_test_config();
    uform_outcome_t outcome = {0};
    uform_trainer_t trainer = NULL;
    uform_arena_t arena = NULL;
    CHECK_STATUS(uform_trainer_init_ram(NULL, &config, &trainer, &outcome), UFORM_OK);
    CHECK_STATUS(uform_arena_for_host(&arena, &outcome), UFORM_OK);
    if (!trainer || !arena) return;
    mesh_batch_t batch;
    mesh_batch_build(&batch, 0, MESH_TEST_LINES);
    size_t last = batch.count;
    for (size_t i = 0; i < batch.count; ++i)
        if (batch.modalities[i] == UFORM_MODALITY_IMAGE) last = i;
    CHECK(last < batch.count);
    memset(batch.data + batch.offsets[last], 0, batch.offsets[last + 1] - batch.offsets[last]); /* not a JPEG */
    char expected[32];
    snprintf(expected, sizeof expected, "contents[%zu]", last);
    for (size_t k = 1; k <= 4; k += 3) {
        uform_trainer_step_t step;
        mesh_batch_request(&batch, trainer, arena, &step);
        step.accumulate = k;
        CHECK_STATUS(uform_trainer_step(&step), UFORM_FORMAT);
        CHECK_CONTAINS(step.outcome.message, expected);
    }
    CHECK_EQ_INT(trainer->steps, 0);
    free(batch.data);
    uform_arena_free(arena);
    uform_trainer_free(trainer);
}

int main(void) {
    mesh_test_folder(folder, sizeof folder, "accumulate");
    test_alone();
    test_bad_content();
    test_mesh();
    mesh_test_remove(folder);
    return check_finish();
}
