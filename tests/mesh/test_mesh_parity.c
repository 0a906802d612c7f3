/*
 * k processes equal one (docs/mesh.md, "Data-parallel semantics"): 2 and 3 members, each stepping
 * with its contiguous share of every batch, end with the weights of one process that stepped with the
 * whole batch — to 1e-5 relative in F32 compute after 3 steps (see relative_difference) — with the same global
 * losses and gradient norms, and the members' weights bit-identical to each other. A mesh of one is
 * bit-identical to no mesh. Members are forked children meeting over loopback:
 *
 *   test_mesh_parity [folder]   in a scratch folder; and 3 members again with the gradients' all-reduce
 *                               after the backward instead of beside it (UFORM_MESH_OVERLAP_NONE): the
 *                               weights must be bit-identical to the overlapped run's
 *   test_mesh_parity tcp        at a tcp:// store that member 0 hosts on a free loopback port
 *   test_mesh_parity redis      at a Redis server (Debian's redis-server, started here on a free
 *                               loopback port and stopped at the end)
 */
#include <math.h>
#include <stdint.h>

#include "common/check.h"
#include "common/skip.h"
#include "mesh_test.h"
#include "train/trainer.h"

#define STEPS 3

static char folder[256];
static char rendezvous[128]; /* "" meets in the folder */
static uform_mesh_overlap_t overlap = UFORM_MESH_OVERLAP_BACKWARD;

typedef struct result_t {
    int status;
    int alone_identical;              /* reference only: a mesh of one matched no mesh bit for bit */
    double losses[STEPS][4];          /* loss, contrastive, choice, grad_norm */
    uint64_t total, params;
} result_t;

typedef struct param_entry_t {
    uint64_t offset, count;
    char name[64];
} param_entry_t;

/* Three steps over lines [first, end) with or without a mesh; fills the result and the weights. */
static int train(uform_mesh_t mesh, size_t first, size_t end, result_t *result, uform_trainer_t *out,
                 uform_executor_t executor) {
    return mesh_test_steps(mesh, executor, first, end, 0, STEPS, result->losses, NULL, out);
}

static int save_result(const char *name, const result_t *result, uform_trainer_t trainer) {
    size_t bytes = sizeof *result + trainer->total * sizeof(float) + trainer->param_count * sizeof(param_entry_t);
    unsigned char *buffer = calloc(1, bytes);
    if (!buffer) return 1;
    memcpy(buffer, result, sizeof *result);
    memcpy(buffer + sizeof *result, trainer->weights, trainer->total * sizeof(float));
    param_entry_t *entries = (param_entry_t *)(buffer + sizeof *result + trainer->total * sizeof(float));
    for (size_t i = 0; i < trainer->param_count; ++i) {
        entries[i].offset = trainer->params[i].offset, entries[i].count = trainer->params[i].count;
        snprintf(entries[i].name, sizeof entries[i].name, "%s", trainer->params[i].spec.name);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    int status = mesh_test_write(path, buffer, bytes);
    free(buffer);
    return status;
}

static int reference(size_t index, size_t count, void *context) {
    (void)index, (void)count, (void)context;
    uform_executor_t executor = NULL;
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, 1, 0, &executor, &outcome) != UFORM_OK) return 1;
    result_t result;
    memset(&result, 0, sizeof result);
    uform_trainer_t plain = NULL, alone = NULL;
    int failed = train(NULL, 0, MESH_TEST_LINES, &result, &plain, executor);
    /* A mesh of one: no directory, no peers, the same arithmetic. */
    uform_mesh_t mesh = NULL;
    result_t again;
    memset(&again, 0, sizeof again);
    if (!failed && uform_mesh_bootstrap(executor, NULL, &mesh, &outcome) != UFORM_OK) {
        mesh_test_print("bootstrap of one", &outcome);
        failed = 1;
    }
    if (!failed) failed = train(mesh, 0, MESH_TEST_LINES, &again, &alone, executor);
    if (!failed) {
        result.alone_identical = memcmp(plain->weights, alone->weights, plain->total * sizeof(float)) == 0 &&
                                 memcmp(plain->m, alone->m, plain->total * sizeof(float)) == 0 &&
                                 memcmp(plain->v, alone->v, plain->total * sizeof(float)) == 0 &&
                                 memcmp(result.losses, again.losses, sizeof result.losses) == 0;
        result.total = plain->total, result.params = plain->param_count;
        failed = save_result("reference", &result, plain);
    }
    uform_trainer_free(alone);
    uform_trainer_free(plain);
    uform_mesh_free(mesh);
    uform_executor_free(executor);
    return failed;
}

static int member(size_t index, size_t count, void *context) {
    (void)context;
    uform_executor_t executor = NULL;
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, 1, 0, &executor, &outcome) != UFORM_OK) return 1;
    char job[32];
    snprintf(job, sizeof job, "parity-%zu-%d", count, (int)overlap);
    uform_trainer_config_t config = mesh_test_config();
    uform_mesh_options_t options = {0};
    options.host_domain_index = index, options.host_domain_count = count;
    options.job = job, options.timeout_seconds = 60, options.address = "127.0.0.1";
    if (rendezvous[0]) options.rendezvous = rendezvous;
    else options.directory = folder;
    options.overlap = overlap;
    options.trainer_config = &config;
    uform_mesh_t mesh = NULL;
    if (uform_mesh_bootstrap(executor, &options, &mesh, &outcome) != UFORM_OK) {
        mesh_test_print("bootstrap", &outcome);
        uform_executor_free(executor);
        return 1;
    }
    size_t first, end;
    mesh_share(MESH_TEST_LINES, index, count, &first, &end);
    result_t result;
    memset(&result, 0, sizeof result);
    uform_trainer_t trainer = NULL;
    int failed = train(mesh, first, end, &result, &trainer, executor);
    if (!failed) {
        char name[64];
        snprintf(name, sizeof name, "member-%zu-of-%zu-%d", index, count, (int)overlap);
        result.total = trainer->total, result.params = trainer->param_count;
        failed = save_result(name, &result, trainer);
    }
    uform_trainer_free(trainer);
    uform_mesh_free(mesh);
    uform_executor_free(executor);
    return failed;
}

/*
 * How far k members' weights are from one process's: ‖a − b‖ / ‖b‖ over every weight (the issue's
 * 1e-5), and the worst of the same per tensor, held to 1e-4. The two differ for a reason: AdamW
 * divides by √v + ε, so a gradient element that is (nearly) zero — exactly so for the attention keys'
 * bias, as softmax ignores a shift shared by every key; by chance for elements of other biases — is
 * dominated by float32 rounding in both runs, and rounding summed in another order (k partial sums
 * instead of one) becomes a visibly different update of that element. Per tensor this reaches ~3e-5
 * of a bias (the CLI test's data); a tensor whose gradients were not summed over the members would be
 * off by ~1e-1.
 */
static double relative_difference(const float *a, const float *b, const param_entry_t *entries, size_t params,
                                  double *worst_tensor, const char **where) {
    double total_difference = 0, total_norm = 0;
    *worst_tensor = 0;
    for (size_t p = 0; p < params; ++p) {
        double norm = 0, difference = 0;
        for (size_t i = entries[p].offset; i < entries[p].offset + entries[p].count; ++i) {
            double d = (double)a[i] - (double)b[i];
            norm += (double)b[i] * b[i], difference += d * d;
        }
        total_difference += difference, total_norm += norm;
        double relative = norm > 0 ? sqrt(difference / norm) : sqrt(difference);
        if (relative > *worst_tensor) *worst_tensor = relative, *where = entries[p].name;
    }
    return total_norm > 0 ? sqrt(total_difference / total_norm) : sqrt(total_difference);
}

/* Runs `count` members and checks them against one process (`want`); keeps member 0's weights in
 * *kept (malloc'ed) for the caller. */
static void run_members(size_t count, const result_t *want, const unsigned char *expected, unsigned char **kept) {
    const float *want_weights = (const float *)(expected + sizeof *want);
    const param_entry_t *entries = (const param_entry_t *)(want_weights + want->total);
    char path[512];
    size_t length = 0;
    mesh_members_t members;
    double start = mesh_test_now();
    mesh_members_start(&members, count, member, NULL);
    CHECK(mesh_members_wait(&members, 180) == 0);
    unsigned char *first_member = NULL;
    for (size_t i = 0; i < count; ++i) {
        CHECK_MSG(members.exits[i] == 0, "member %zu of %zu exited with %d", i, count, members.exits[i]);
        snprintf(path, sizeof path, "%s/member-%zu-of-%zu-%d", folder, i, count, (int)overlap);
        unsigned char *got = test_read_file(path, &length);
        CHECK_MSG(got != NULL, "member %zu of %zu wrote no result", i, count);
        if (!got) continue;
        result_t have;
        memcpy(&have, got, sizeof have);
        CHECK_EQ_INT(have.total, want->total);
        if (have.total != want->total) {
            free(got);
            continue;
        }
        const float *weights = (const float *)(got + sizeof have);
        const char *where = "";
        double worst = 0, overall = relative_difference(weights, want_weights, entries, want->params, &worst, &where);
        CHECK_MSG(overall <= 1e-5, "%zu members: member %zu's weights differ from one process's by %.3g relative",
                  count, i, overall);
        CHECK_MSG(worst <= 1e-4, "%zu members: member %zu's %s differs from one process's by %.3g relative", count,
                  i, where, worst);
        if (i == 0)
            fprintf(stderr, "%zu members (%s, overlap %s): %.1f s; weights %.3g relative to one process's (worst "
                    "tensor %.3g, %s)\n",
                    count, rendezvous[0] ? rendezvous : "folder", overlap == UFORM_MESH_OVERLAP_NONE ? "none" : "backward",
                    mesh_test_now() - start, overall, worst, where);
        for (int s = 0; s < STEPS; ++s)
            for (int q = 0; q < 4; ++q)
                CHECK_NEAR(have.losses[s][q], want->losses[s][q], 1e-7, 1e-5);
        if (i == 0) first_member = got;
        else {
            CHECK_MSG(memcmp(got + sizeof have, first_member + sizeof have, have.total * sizeof(float)) == 0,
                      "member %zu's weights differ from member 0's", i);
            free(got);
        }
    }
    *kept = first_member;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "folder";
    if (strcmp(mode, "folder") && strcmp(mode, "tcp") && strcmp(mode, "redis")) {
        fprintf(stderr, "usage: test_mesh_parity [folder|tcp|redis]\n");
        return 2;
    }
    mesh_test_folder(folder, sizeof folder, "parity");
    pid_t redis = 0;
    if (!strcmp(mode, "tcp")) snprintf(rendezvous, sizeof rendezvous, "tcp://127.0.0.1:%d", mesh_test_free_port());
    if (!strcmp(mode, "redis")) {
        int port = mesh_test_free_port();
        redis = mesh_test_redis_start(folder, port);
        if (redis == 0) {
            mesh_test_remove(folder);
            return check_skip_missing("the Redis rendezvous needs redis-server");
        }
        CHECK_MSG(redis > 0, "redis-server did not come up on port %d", port);
        if (redis < 0) {
            mesh_test_remove(folder);
            return check_finish();
        }
        snprintf(rendezvous, sizeof rendezvous, "redis://127.0.0.1:%d", port);
    }
    mesh_members_t members;
    double start = mesh_test_now();
    mesh_members_start(&members, 1, reference, NULL);
    CHECK(mesh_members_wait(&members, 120) == 0);
    CHECK_EQ_INT(members.exits[0], 0);
    char path[512];
    snprintf(path, sizeof path, "%s/reference", folder);
    size_t length = 0;
    unsigned char *expected = test_read_file(path, &length);
    CHECK(expected != NULL);
    if (!expected) {
        mesh_test_redis_stop(redis);
        return check_finish();
    }
    result_t want;
    memcpy(&want, expected, sizeof want);
    CHECK_MSG(want.alone_identical, "a mesh of one differs from no mesh");
    fprintf(stderr, "one process: %.1f s; losses %.6f %.6f %.6f\n", mesh_test_now() - start, want.losses[0][0],
            want.losses[1][0], want.losses[2][0]);
    unsigned char *overlapped = NULL, *after = NULL;
    for (size_t count = 2; count <= 3; ++count) {
        unsigned char *kept = NULL;
        run_members(count, &want, expected, &kept);
        if (count == 3) overlapped = kept;
        else free(kept);
    }
    if (!strcmp(mode, "folder")) {
        /* The same buckets all-reduced after the backward: the same sums, bit for bit. */
        overlap = UFORM_MESH_OVERLAP_NONE;
        run_members(3, &want, expected, &after);
        CHECK_MSG(overlapped && after && memcmp(overlapped + sizeof want, after + sizeof want, want.total * sizeof(float)) == 0,
                  "3 members' weights with the all-reduce beside the backward differ from those with it after");
    }
    free(overlapped), free(after);
    free(expected);
    mesh_test_redis_stop(redis);
    mesh_test_remove(folder);
    return check_finish();
}
