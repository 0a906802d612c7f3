/*
 * A trainer joining its mesh (docs/mesh.md, "Data-parallel semantics"): after every member has made
 * its trainer (or failed to), the members exchange fixed-size records of their resolved configs and
 * statuses. A failure anywhere fails every member's init; a disagreement is UFORM_CONFIG_MISMATCH
 * naming the field and both values (every member compares every record with member 0's in the same
 * order, so all report the same field); and then member 0's weights, moments and step count are
 * copied to every member, so the members start identical whatever their seeds or files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "mesh/mesh.h"
#include "train/trainer.h"

#define MESSAGE_BYTES 256

/* The resolved config as numbers, named fields first so a disagreement names the cause rather than
 * its consequence (the parameter count). The names below follow this order. */
enum { COUNTS = 29, REALS = 10 };

typedef struct join_record_t {
    uint32_t status;
    uint32_t reserved;
    char message[MESSAGE_BYTES];
    char size[16];
    uint64_t counts[COUNTS];
    double reals[REALS];
} join_record_t;

static const char *const count_names[COUNTS] = {
    "hidden", "depth", "heads", "mlp", "embedding", "matryoshka_count", "matryoshka[0]", "matryoshka[1]",
    "matryoshka[2]", "matryoshka[3]", "matryoshka[4]", "matryoshka[5]", "matryoshka[6]", "matryoshka[7]",
    "temperature_groups", "modalities", "text_bytes", "image_size, image_patch", "video_size, video_patch",
    "video_frames, video_tubelet", "audio_seconds, audio_mels", "compute", "cpu_class", "seed", "warmup_steps",
    "total_steps", "steps taken", "parameter floats", "parameter tensors"};
static const char *const real_names[REALS] = {"learning_rate", "beta1", "beta2", "epsilon", "weight_decay",
                                              "clip_norm", "contrastive_weight", "choice_weight", "audio_rate",
                                              "(unused)"};

static uint64_t pair_of(size_t a, size_t b) { return ((uint64_t)a << 32) ^ (uint64_t)b; }

static void describe(uform_trainer_t trainer, join_record_t *record) {
    const uform__model_config_t *config = &trainer->config;
    const uform__optimizer_t *optimizer = &trainer->optimizer;
    snprintf(record->size, sizeof record->size, "%s", config->size);
    uint64_t counts[COUNTS] = {
        config->hidden, config->depth, config->heads, config->mlp, config->embedding, config->matryoshka_count,
        0, 0, 0, 0, 0, 0, 0, 0, config->temperature_groups, config->modalities, config->text_bytes,
        pair_of(config->image_size, config->image_patch), pair_of(config->video_size, config->video_patch),
        pair_of(config->video_frames, config->video_tubelet), pair_of(config->audio_seconds, config->audio_mels),
        (uint64_t)trainer->compute, (uint64_t)trainer->cpu_class, trainer->seed, optimizer->warmup_steps,
        optimizer->total_steps, trainer->steps, trainer->total, trainer->param_count};
    for (size_t i = 0; i < config->matryoshka_count && i < 8; ++i) counts[6 + i] = config->matryoshka[i];
    memcpy(record->counts, counts, sizeof counts);
    double reals[REALS] = {optimizer->learning_rate, optimizer->beta1,  optimizer->beta2,
                           optimizer->epsilon,       optimizer->weight_decay, optimizer->clip_norm,
                           optimizer->contrastive_weight, optimizer->choice_weight, (double)config->audio_rate, 0};
    memcpy(record->reals, reals, sizeof reals);
}

/* "hidden: member 2 has 256, member 0 has 128", or "" when the two agree. */
static int compare(const join_record_t *zero, const join_record_t *other, size_t j, char *text, size_t capacity) {
    if (strncmp(zero->size, other->size, sizeof zero->size) != 0) {
        snprintf(text, capacity, "size: member %zu has '%.16s', member 0 has '%.16s'", j, other->size, zero->size);
        return -1;
    }
    for (size_t i = 0; i < COUNTS; ++i)
        if (zero->counts[i] != other->counts[i]) {
            snprintf(text, capacity, "%s: member %zu has %llu, member 0 has %llu%s", count_names[i], j,
                     (unsigned long long)other->counts[i], (unsigned long long)zero->counts[i],
                     i == 26 ? " (resume every member from the same checkpoint)" : "");
            return -1;
        }
    for (size_t i = 0; i < REALS; ++i)
        if (memcmp(&zero->reals[i], &other->reals[i], sizeof(double)) != 0) {
            snprintf(text, capacity, "%s: member %zu has %.17g, member 0 has %.17g", real_names[i], j, other->reals[i],
                     zero->reals[i]);
            return -1;
        }
    return 0;
}

static uform_status_t broadcast_state(uform_trainer_t trainer, uform_mesh_t mesh, uform_outcome_t *outcome,
                                      const char *function) {
    float *blocks[3] = {trainer->weights, trainer->m, trainer->v};
    const char *names[3] = {"member 0's weights", "member 0's first moments", "member 0's second moments"};
    for (int i = 0; i < 3; ++i) {
        uform_status_t status =
            uform__mesh_broadcast(mesh, blocks[i], trainer->total * sizeof(float), 0, names[i], outcome, function);
        if (status != UFORM_OK) return status;
    }
    uform__train_bf16_refresh(trainer, uform__nn_kernels(trainer->cpu_class));
    return UFORM_OK;
}

uform_status_t uform__train_mesh_join(uform_trainer_t trainer, uform_mesh_t mesh, uform_status_t status,
                                      uform_outcome_t *outcome, const char *function) {
    uform_outcome_t local;
    memset(&local, 0, sizeof local);
    if (!outcome) outcome = &local;
    uform_status_t taken = uform__mesh_acquire(mesh, status == UFORM_OK ? outcome : &local, function);
    if (taken != UFORM_OK) return status != UFORM_OK ? status : taken;
    size_t K = mesh->count;
    join_record_t mine;
    memset(&mine, 0, sizeof mine);
    mine.status = (uint32_t)status;
    if (status == UFORM_OK) describe(trainer, &mine);
    else memcpy(mine.message, outcome->message, MESSAGE_BYTES - 1);
    join_record_t *records = calloc(K, sizeof *records);
    size_t *bytes = calloc(K, sizeof *bytes);
    uform_status_t result = status;
    if (!records || !bytes) {
        /* Without room we cannot take part; the others time out. */
        if (result == UFORM_OK)
            result = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu records", K);
    } else {
        for (size_t j = 0; j < K; ++j) bytes[j] = sizeof mine;
        uform_outcome_t exchange;
        memset(&exchange, 0, sizeof exchange);
        uform_status_t exchanged =
            uform__mesh_allgather(mesh, &mine, records, bytes, "the trainers' configs", &exchange, function);
        if (exchanged != UFORM_OK) {
            if (result == UFORM_OK) result = uform__fail(outcome, exchanged, function, "%s", exchange.message);
        } else if (result == UFORM_OK) {
            char text[UFORM_OUTCOME_MESSAGE_CAPACITY];
            for (size_t j = 0; j < K && result == UFORM_OK; ++j)
                if (records[j].status != UFORM_OK) {
                    records[j].message[MESSAGE_BYTES - 1] = 0;
                    result = uform__fail(outcome, (uform_status_t)records[j].status, function,
                                         "member %zu of %zu could not make its trainer: %s", j, K, records[j].message);
                }
            for (size_t j = 1; j < K && result == UFORM_OK; ++j)
                if (compare(&records[0], &records[j], j, text, sizeof text) != 0)
                    result = uform__fail(outcome, UFORM_CONFIG_MISMATCH, function,
                                         "the members' trainers disagree: %s", text);
            if (result == UFORM_OK) result = broadcast_state(trainer, mesh, outcome, function);
        }
    }
    free(records);
    free(bytes);
    uform__mesh_release(mesh);
    if (result == UFORM_OK) trainer->mesh = mesh;
    return result;
}
