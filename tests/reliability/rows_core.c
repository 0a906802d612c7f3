/* Sweep rows for executors, arenas and the safetensors reader and writer. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/arena.h"
#include "io/safetensors.h"
#include "rows.h"

void sweep_run_executor_for_ram(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_executor_t executor = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_executor_for_ram(NULL, 3, 4, &executor, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = uform_executor_threads(executor);
    uform_executor_free(executor);
}

/* Placement on NUMA node 0, which every Linux machine has: the path that asks the system which
 * CPUs a node holds (libnuma's bitmask allocation used to exit(1) here). */
void sweep_run_executor_on_node(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    size_t nodes[1] = {0};
    uform_ram_options_t options = {nodes, 1, UFORM_CPU_CLASS_UNKNOWN, UFORM_COMPUTE_F32};
    uform_executor_t executor = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_executor_for_ram(&options, 2, 0, &executor, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = uform_executor_threads(executor);
    uform_arena_t arena = NULL;
    if (status == UFORM_OK) { /* an arena bound to the node: its pages go through mbind */
        status = uform_arena_for_executor(executor, &arena, &outcome);
        sweep_answer_status(answer, status, &outcome);
    }
    uform_arena_free(arena);
    uform_executor_free(executor);
}

static size_t pool_threads(void *context) { return 2; }
static void pool_for_n(void *context, size_t n, uform_prong_t fn, void *fn_context) {
    for (size_t prong = 0; prong < n; ++prong) fn(fn_context, prong % 2, prong);
}

void sweep_run_executor_on_pool(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_pool_t pool = {NULL, pool_threads, pool_for_n};
    uform_executor_t executor = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_executor_on_pool(&pool, NULL, 0, &executor, &outcome);
    sweep_answer_status(answer, status, &outcome);
    uform_executor_free(executor);
}

void sweep_run_arena_for_host(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_arena_for_host(&arena, &outcome);
    sweep_answer_status(answer, status, &outcome);
    uform_arena_free(arena);
}

void sweep_run_arena_for_executor(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_arena_for_executor(sweep_executor(fixture), &arena, &outcome);
    sweep_answer_status(answer, status, &outcome);
    uform_arena_free(arena);
}

/* Growth: a reservation (main block), allocations past it (overflow chunks, each an mmap), and
 * the rewind that folds them into one bigger block — every mapping an arena makes. */
void sweep_run_arena_growth(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_arena_for_host(&arena, &outcome);
    for (int round = 0; round < 2 && status == UFORM_OK; ++round) {
        status = uform__arena_rewind(arena, &outcome, "arena_growth");
        if (status == UFORM_OK) status = uform__arena_reserve(arena, 1 << 16, &outcome, "arena_growth");
        uform_matrix_t views[3];
        for (int i = 0; i < 3 && status == UFORM_OK; ++i) /* 48 KiB, then past the block twice */
            status = uform__arena_matrix(arena, 96 << i, 128, UFORM_SCALAR_F32, &views[i], &outcome, "arena_growth");
        for (int i = 0; i < 3 && status == UFORM_OK; ++i) memset(views[i].data, i + 1, views[i].rows * views[i].stride_bytes);
    }
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = uform_arena_capacity(arena);
    uform_arena_free(arena);
}

void sweep_run_safetensors_open(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform__safetensors_t *file = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__safetensors_open(fixture->checkpoint, &file, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        const char *config = uform__safetensors_metadata_find(file, "uform.config");
        answer->digest = sweep_digest(uform__safetensors_count(file), config, config ? strlen(config) : 0);
    }
    uform__safetensors_close(file);
}

/* The sample the writer rows write: two tensors and two metadata entries. */
static const float sample_values[6] = {1, 2, 3, 4, 5, 6};
static const uint16_t sample_halves[4] = {0x3f80, 0x4000, 0x4040, 0x4080};
static const uint64_t sample_shape_a[2] = {2, 3}, sample_shape_b[1] = {4};

static uform__safetensors_write_t sample_request(uform__safetensors_source_t sources[2], uform__safetensors_pair_t pairs[2]) {
    sources[0] = (uform__safetensors_source_t){"a.weight", UFORM__SAFETENSORS_F32, 2, sample_shape_a, sample_values};
    sources[1] = (uform__safetensors_source_t){"b.bias", UFORM__SAFETENSORS_BF16, 1, sample_shape_b, sample_halves};
    pairs[0] = (uform__safetensors_pair_t){"uform.format", "4"};
    pairs[1] = (uform__safetensors_pair_t){"note", "written under failing allocations"};
    uform__safetensors_write_t request = {sources, 2, pairs, 2, NULL, NULL};
    return request;
}

void sweep_run_safetensors_open_memory(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    static uint8_t *bytes;
    static size_t size;
    if (!bytes) { /* encoded once, on the unarmed first run */
        uform__safetensors_source_t sources[2];
        uform__safetensors_pair_t pairs[2];
        uform__safetensors_write_t request = sample_request(sources, pairs);
        if (uform__safetensors_encode(&request, &bytes, &size, NULL) != UFORM_OK) {
            sweep_answer_status(answer, UFORM_INTERNAL, NULL);
            return;
        }
    }
    uform__safetensors_t *file = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__safetensors_open_memory(bytes, size, &file, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        const uform__safetensors_tensor_t *tensor = uform__safetensors_find(file, "a.weight");
        answer->digest = tensor ? sweep_digest(0, tensor->data, (size_t)tensor->length) : 1;
    }
    uform__safetensors_close(file);
}

void sweep_run_safetensors_encode(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform__safetensors_source_t sources[2];
    uform__safetensors_pair_t pairs[2];
    uform__safetensors_write_t request = sample_request(sources, pairs);
    uint8_t *bytes = NULL;
    size_t size = 0;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__safetensors_encode(&request, &bytes, &size, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = sweep_digest(0, bytes, size);
    free(bytes);
}

/* Writes the sample to a file (temporary file, fsync, rename), then digests what landed there. */
void sweep_run_safetensors_write(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform__safetensors_source_t sources[2];
    uform__safetensors_pair_t pairs[2];
    uform__safetensors_write_t request = sample_request(sources, pairs);
    char path[300];
    snprintf(path, sizeof path, "%s/sample.safetensors", fixture->scratch);
    unlink(path);
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__safetensors_write(path, &request, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        /* Read back with plain system calls: the digest must not depend on allocations. */
        unsigned char buffer[4096];
        int descriptor = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t got = descriptor >= 0 ? read(descriptor, buffer, sizeof buffer) : -1;
        if (descriptor >= 0) close(descriptor);
        answer->digest = got > 0 ? sweep_digest(0, buffer, (size_t)got) : 1;
    }
}

/* Draining the fixture's executor into each mood and back. */
void sweep_run_executor_drain(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_executor_t executor = sweep_executor(fixture);
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_executor_drain(executor, UFORM_MOOD_SPINNING, &outcome);
    if (status == UFORM_OK) status = uform_executor_drain(executor, UFORM_MOOD_PARKED, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = uform_executor_threads(executor);
}

/* The accessors and checks that allocate nothing by contract, in one row whose sweep shows it: a run
 * with 0 allocations has no allocation to fail. The views come from an encode in an arena of the
 * row's own, made in its first (unarmed) run. */
void sweep_run_accessors(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    static uform_arena_t arena;
    static uform_encoded_t encoded;
    static int made;
    if (!made) {
        static const char texts[] = "two texts";
        static const size_t offsets[3] = {0, 3, 9};
        uform_text_encode_t request;
        memset(&request, 0, sizeof request);
        request.model = fixture->model, request.texts = (uform_tape_t){texts, offsets, 2};
        request.outputs = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS;
        if (uform_arena_for_host(&arena, NULL) == UFORM_OK) request.arena = arena;
        uform_status_t status = uform_text_encode(&request);
        if (status != UFORM_OK) {
            sweep_answer_status(answer, status, &request.outcome);
            return;
        }
        encoded = request.encoded, made = 1;
    }
    int major = 0, minor = 0, patch = 0;
    uform_version(&major, &minor, &patch);
    uint64_t digest = sweep_digest(0, &major, sizeof major);
    const char *names[] = {uform_status_name(UFORM_OUT_OF_MEMORY), uform_session_status_name(UFORM_SESSION_OK),
                           uform_cpu_class_name(uform_cpu_class_detect()),
                           uform_mesh_launcher_name(UFORM_MESH_LAUNCHER_TORCHRUN)};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) digest = sweep_digest(digest, names[i], strlen(names[i]));
    int supported = uform_cpu_class_supported(UFORM_CPU_CLASS_SERIAL);
    uform_cpu_class_t executor_class = uform_executor_cpu_class(NULL);
    size_t bytes = uform_scalar_row_bytes(UFORM_SCALAR_B1, 13), devices = 7;
    uint64_t generation = uform_arena_generation(arena);
    digest = sweep_digest(digest, &supported, sizeof supported);
    digest = sweep_digest(digest, &executor_class, sizeof executor_class);
    digest = sweep_digest(digest, &bytes, sizeof bytes);
    digest = sweep_digest(digest, &generation, sizeof generation);
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_gpu_devices(NULL, 0, &devices);
    if (status == UFORM_OK) status = uform_matrix_check(&encoded.embeddings);
    uform_matrix_t item;
    if (status == UFORM_OK) status = uform_rows_item(&encoded.token_vectors, 1, &item);
    static const size_t offsets[3] = {0, 2, 1}; /* decreasing: the check names offsets[2] */
    uform_tape_t bad = {"abc", offsets, 2};
    if (status == UFORM_OK && uform_tape_validate(&bad, &outcome) == UFORM_INVALID_ARGUMENT) {
        char line[UFORM_OUTCOME_MESSAGE_CAPACITY + 64];
        uform_outcome_format(&outcome, line, sizeof line);
        digest = sweep_digest(digest, line, strlen(line));
        digest = sweep_digest(digest, &item.rows, sizeof item.rows);
        status = uform_outcome_status(&outcome) == UFORM_INVALID_ARGUMENT ? UFORM_OK : UFORM_INTERNAL;
    }
    sweep_answer_status(answer, status, NULL);
    if (status == UFORM_OK) answer->digest = digest;
}
