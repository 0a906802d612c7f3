/*
 * uform_index_build (uform.h, "Data"): the index pipeline over any datasets. Three stages overlap:
 * the reader thread reads items into batches of one modality (index_reader.c), the decode stage
 * prepares media batches (uform_media_prepare: on `decoder`, one batch ahead, when given; else on
 * the compute executor right before each encode), and the compute stage encodes them
 * (uform_prepared_encode, uform_text_encode) into a builder. Bad items go to the errors file as JSON
 * lines; every `checkpoint` items the index is written atomically with the items consumed and the
 * error lines so far in its metadata; a resume reopens it, keeps those error lines, passes over
 * the consumed items and cuts the same batches an uninterrupted build cuts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "core/fnv.h"
#include "core/outcome.h"
#include "data/index_build.h"
#include "index/index.h"
#include "io/json.h"
#include "mesh/mesh.h"

#define CONSUMED_KEY "uform.build.consumed"
#define ERRORS_KEY "uform.build.errors"

typedef struct build_t {
    uform_index_build_t *request;
    const char *function;
    uform_arena_t prepared[2], encoded;
    uform_index_builder_t builder;
    char *errors_path;
    int errors;                  /* the errors file, appended with write(2) (libuform prints nothing) */
    int errors_failed;           /* a line could not be written: the next checkpoint fails */
    size_t error_lines;          /* lines in the errors file (resumed ones included) */
    size_t total, done;
    volatile int cancelled;
    /* Over a mesh (index_build_mesh.c): this member's block (low, high] of the positions at which
     * batches are handed over, its error lines kept in memory for member 0 to write, and the items
     * the reader consumed in all. */
    uform_mesh_t mesh;
    size_t low, high, consumed;
    char *error_text;
    size_t error_length, error_capacity;
} build_t;

/* Whether this member decodes and encodes `unit` (and lists its errors): always, without a mesh. */
static int owns(const build_t *build, const uform__unit_t *unit) {
    return !build->mesh || (unit->position > build->low && unit->position <= build->high);
}

static uform_continuation_t check_cancel(size_t completed, size_t total, void *state) {
    (void)completed, (void)total;
    build_t *build = state;
    return build->cancelled ? UFORM_CANCEL : UFORM_CONTINUE;
}

/* Reports progress; a cancel from the caller's handler is remembered for every stage. */
static void report(build_t *build) {
    const uform_progress_t *progress = &build->request->progress;
    if (progress->callback && !build->cancelled &&
        progress->callback(build->done, build->total, progress->state) == UFORM_CANCEL)
        __atomic_store_n(&build->cancelled, 1, __ATOMIC_RELEASE);
}

/* `bytes` as a quoted JSON string (cJSON's escaping), malloc'ed; NULL without memory. */
static char *json_string(const char *bytes, size_t length) {
    cJSON *string = cJSON_CreateString("");
    char *copy = strndup(bytes, length), *printed = NULL;
    if (string && copy && cJSON_SetValuestring(string, copy)) printed = cJSON_PrintUnformatted(string);
    free(copy);
    cJSON_Delete(string);
    return printed;
}

/* Appends {"path", "status", "message"} to the errors file and counts the item as failed. */
static void write_error(build_t *build, const char *path, size_t length, uform_status_t status, const char *message,
                        const uform_data_error_t *where) {
    char *quoted_path = json_string(path, length), *quoted_message = json_string(message, strlen(message));
    size_t capacity = (quoted_path ? strlen(quoted_path) : 0) + (quoted_message ? strlen(quoted_message) : 0) + 96;
    char *line = quoted_path && quoted_message ? malloc(capacity) : NULL;
    if (line) {
        int used = snprintf(line, capacity, "{\"path\": %s, \"status\": \"%s\", \"message\": %s}\n", quoted_path,
                            uform_status_name(status), quoted_message);
        if (build->mesh && used > 0) {
            /* Over a mesh the lines stay in memory until member 0 writes every member's. */
            size_t needed = build->error_length + (size_t)used, wanted = build->error_capacity ? build->error_capacity : 4096;
            while (wanted < needed) wanted *= 2;
            char *grown = wanted > build->error_capacity ? realloc(build->error_text, wanted) : build->error_text;
            if (grown) {
                build->error_text = grown, build->error_capacity = wanted;
                memcpy(build->error_text + build->error_length, line, (size_t)used);
                build->error_length = needed;
            } else {
                build->errors_failed = ENOMEM;
            }
            used = 0;
        }
        for (size_t done = 0; used > 0 && done < (size_t)used;) {
            ssize_t wrote = write(build->errors, line + done, (size_t)used - done);
            if (wrote < 0 && errno == EINTR) continue;
            if (wrote <= 0) {
                build->errors_failed = errno ? errno : EIO;
                break;
            }
            done += (size_t)wrote;
        }
    } else {
        build->errors_failed = ENOMEM;
    }
    free(line), free(quoted_path), free(quoted_message);
    build->error_lines += 1, build->request->failed += 1;
    if (where) build->request->error = *where;
    else uform__data_error_set(&build->request->error, status, 0, SIZE_MAX, NULL, path, "%s", message);
}

static uform_status_t failed(build_t *build, const uform_outcome_t *outcome);

/* Checks that the errors file is whole and durable, before the index that counts its lines. */
static uform_status_t errors_durable(build_t *build) {
    uform_index_build_t *request = build->request;
    if (build->errors_failed == ENOMEM)
        return uform__fail(&request->outcome, UFORM_OUT_OF_MEMORY, build->function, "cannot allocate a line of '%s'", build->errors_path);
    if (build->errors_failed || fsync(build->errors) != 0)
        return uform__fail(&request->outcome, UFORM_IO, build->function, "cannot write '%s': %s", build->errors_path,
                           strerror(build->errors_failed ? build->errors_failed : errno));
    return UFORM_OK;
}

/* Writes the index (and makes the errors it mentions durable first). Over a mesh every member
 * calls it (collective), member 0 after its errors file is written, and `status` is this member's
 * own so far: a member that failed takes part with nothing, so the others stop at once. */
static uform_status_t write_index(build_t *build, size_t consumed, uform_status_t status) {
    uform_index_build_t *request = build->request;
    int writes = !build->mesh || build->mesh->index == 0;
    if (status == UFORM_OK && writes) status = errors_durable(build);
    char consumed_text[24], errors_text[24];
    snprintf(consumed_text, sizeof consumed_text, "%zu", consumed);
    snprintf(errors_text, sizeof errors_text, "%zu", build->error_lines);
    const char *metadata[] = {CONSUMED_KEY, consumed_text, ERRORS_KEY, errors_text};
    uform_outcome_t outcome = {0};
    uform_status_t written =
        build->mesh ? uform_index_builder_write_members(status == UFORM_OK ? build->builder : NULL, build->mesh, request->out,
                                                        metadata, 2, &outcome)
        : status == UFORM_OK ? uform_index_builder_write(build->builder, request->out, metadata, 2, &outcome)
                             : status;
    if (status == UFORM_OK && written != UFORM_OK) status = failed(build, &outcome);
    return status;
}

/* Starts decoding a media batch: deferred on the decoder, or blocking on the compute executor. */
static uform_status_t prepare_start(build_t *build, uform__unit_t *unit, int slot) {
    if (unit->kind != UFORM__UNIT_BATCH || unit->modality == UFORM_MODALITY_TEXT || unit->preparing || !owns(build, unit))
        return UFORM_OK;
    uform_index_build_t *request = build->request;
    uform_media_prepare_t *prepare = &unit->prepare;
    memset(prepare, 0, sizeof *prepare);
    prepare->model = request->model;
    prepare->executor = request->decoder ? request->decoder : request->executor;
    prepare->completion = request->decoder ? UFORM_COMPLETION_DEFERRED : UFORM_COMPLETION_BLOCKING;
    prepare->modality = unit->modality;
    prepare->files = (uform_tape_t){unit->data, unit->offsets, unit->count};
    prepare->arena = build->prepared[slot];
    prepare->progress = (uform_progress_t){check_cancel, build, 0};
    unit->preparing = 1;
    uform_status_t status = uform_media_prepare(prepare);
    return status == UFORM_DEFERRED ? UFORM_OK : status;
}

static uform_status_t failed(build_t *build, const uform_outcome_t *outcome) {
    uform__outcome_copy_text(&build->request->outcome, outcome);
    return uform__fail(&build->request->outcome, uform_outcome_status(outcome), build->function, "%s", outcome->message);
}

/* Encodes one batch and adds its good items. */
static uform_status_t encode_batch(build_t *build, uform__unit_t *unit) {
    uform_index_build_t *request = build->request;
    uform_encode_config_t config = {request->scalar, {check_cancel, build, 0}, NULL, request->dimensions};
    const uform_matrix_t *embeddings;
    const uform_outcome_t *outcome;
    uform_status_t status;
    uform_text_encode_t text = {0};
    uform_prepared_encode_t media = {0};
    const uform_prepared_t *prepared = NULL;
    if (unit->modality == UFORM_MODALITY_TEXT) {
        text.model = request->model, text.executor = request->executor, text.arena = build->encoded, text.config = config;
        text.texts = (uform_tape_t){unit->data, unit->offsets, unit->count};
        status = uform_text_encode(&text), outcome = &text.outcome, embeddings = &text.encoded.embeddings;
    } else {
        status = unit->preparing ? uform_outcome_wait(&unit->prepare.outcome) : prepare_start(build, unit, 0);
        if (status != UFORM_OK) return failed(build, &unit->prepare.outcome);
        prepared = &unit->prepare.prepared;
        for (size_t i = 0; i < unit->count; ++i) /* memory is the build's failure, not the item's */
            if (prepared->item_outcomes[i].status == UFORM_OUT_OF_MEMORY) return failed(build, &prepared->item_outcomes[i]);
        for (size_t i = 0; i < unit->count; ++i)
            if (prepared->item_outcomes[i].status != UFORM_OK) {
                uform_data_error_t where;
                uform__data_error_set(&where, prepared->item_outcomes[i].status, 0, SIZE_MAX, NULL, unit->paths[i], "%s",
                                      prepared->item_outcomes[i].message);
                write_error(build, unit->paths[i], strlen(unit->paths[i]), prepared->item_outcomes[i].status,
                            prepared->item_outcomes[i].message, &where);
            }
        if (prepared->failed == prepared->count) return UFORM_OK;
        media.model = request->model, media.executor = request->executor, media.prepared = prepared;
        media.arena = build->encoded, media.config = config;
        status = uform_prepared_encode(&media), outcome = &media.outcome, embeddings = &media.encoded.embeddings;
    }
    if (status != UFORM_OK) return failed(build, outcome);
    for (size_t i = 0, row = 0; i < unit->count; ++i) {
        if (prepared && prepared->item_outcomes[i].status != UFORM_OK) continue;
        uform_matrix_t one = *embeddings;
        one.data = (unsigned char *)one.data + row++ * one.stride_bytes, one.rows = 1;
        size_t offsets[2] = {0, strlen(unit->paths[i])};
        uform_tape_t path = {unit->paths[i], offsets, 1};
        uform_outcome_t added = {0};
        if (uform_index_builder_add(build->builder, unit->modality, &one, &path, &added) != UFORM_OK) return failed(build, &added);
        request->indexed += 1;
    }
    return UFORM_OK;
}

static uform_status_t process(build_t *build, uform__unit_t *unit) {
    uform_status_t status = UFORM_OK;
    if (owns(build, unit)) {
        for (size_t i = 0; i < unit->error_count; ++i)
            write_error(build, unit->errors[i].path, strlen(unit->errors[i].path), unit->errors[i].status,
                        unit->errors[i].message, &unit->errors[i].where);
        if (unit->kind == UFORM__UNIT_BATCH) status = encode_batch(build, unit);
    }
    /* Over a mesh nothing is written before the end: member 0 writes once every member's items are
     * gathered (a checkpoint of one member's share could not be resumed by anyone). */
    if (status == UFORM_OK && unit->kind != UFORM__UNIT_BATCH && !build->mesh) status = write_index(build, unit->consumed, UFORM_OK);
    if (unit->kind == UFORM__UNIT_END) build->consumed = unit->consumed;
    /* Progress over a mesh counts this member's share of the positions (items, or shards for
     * shards): (low, high] becomes 0 ... high - low. */
    size_t at = build->mesh ? unit->position : unit->consumed;
    size_t position = at < build->low ? build->low : at > build->high ? build->high : at;
    if (position - build->low > build->done) build->done = position - build->low;
    if (build->mesh && build->done > build->total) build->done = build->total; /* the last member's tail past W */
    if (status == UFORM_OK) report(build);
    return status;
}

static uform_status_t cancelled(build_t *build) {
    return uform__fail(&build->request->outcome, UFORM_CANCELLED, build->function,
                       "cancelled by the progress handler after %zu items; '%s' keeps the last checkpoint", build->done,
                       build->request->out);
}

/* The three stages: the reader thread, decoding (one batch ahead with a decoder) and compute. */
static uform_status_t pipeline(build_t *build, uform__reader_t *reader) {
    uform_status_t status = UFORM_OK;
    int slot = 0;
    uform__unit_t *current = uform__reader_next(reader);
    if (current && build->request->decoder && prepare_start(build, current, slot) != UFORM_OK)
        status = failed(build, &current->prepare.outcome);
    int ended = 0;
    while (current && status == UFORM_OK) {
        uform__unit_t *next = current->kind == UFORM__UNIT_END ? NULL : uform__reader_next(reader);
        if (next && build->request->decoder) {
            /* Batch n+1 decodes into the other arena while batch n computes. */
            if (prepare_start(build, next, slot ^ 1) != UFORM_OK) status = failed(build, &next->prepare.outcome);
            slot ^= 1;
        }
        if (status == UFORM_OK) status = build->cancelled ? cancelled(build) : process(build, current);
        ended = current->kind == UFORM__UNIT_END;
        uform__unit_free(current);
        current = next;
        if (ended) break;
        if (!current && status == UFORM_OK) {
            status = build->cancelled ? cancelled(build)
                     : reader->failure ? uform__fail(&build->request->outcome, reader->failure, build->function, "%s", reader->message)
                                       : uform__fail(&build->request->outcome, UFORM_INTERNAL, build->function, "the reader stopped early");
        }
    }
    if (current) {
        if (current->preparing) uform_outcome_wait(&current->prepare.outcome);
        uform__unit_free(current);
    }
    if (status == UFORM_OK && !ended) /* the reader stopped before handing over anything */
        status = build->cancelled ? cancelled(build)
                 : reader->failure ? uform__fail(&build->request->outcome, reader->failure, build->function, "%s", reader->message)
                                   : uform__fail(&build->request->outcome, UFORM_INTERNAL, build->function, "the reader stopped early");
    if (status == UFORM_CANCELLED || uform_outcome_status(&build->request->outcome) == UFORM_CANCELLED) return cancelled(build);
    return status;
}

/* ---- resume ---- */

/* Keeps the first `lines` lines of the errors file, their paths in `seen`; reopens it for appending. */
static uform_status_t resume_errors(build_t *build, size_t lines, uform__key_set_t *seen) {
    FILE *file = fopen(build->errors_path, "r");
    size_t kept = 0;
    long keep_bytes = 0;
    if (file) {
        char *line = NULL;
        size_t capacity = 0;
        ssize_t length;
        while (kept < lines && (length = getline(&line, &capacity, file)) > 0) {
            cJSON *object = NULL;
            uform__json_parse(line, (size_t)length, &object, NULL, NULL);
            const cJSON *path = cJSON_GetObjectItemCaseSensitive(object, "path");
            if (cJSON_IsString(path) && uform__key_set_insert(seen, path->valuestring, strlen(path->valuestring)) < 0) {
                cJSON_Delete(object);
                free(line);
                fclose(file);
                return uform__fail(&build->request->outcome, UFORM_OUT_OF_MEMORY, build->function, "cannot allocate the set of listed errors");
            }
            cJSON_Delete(object);
            kept += 1;
            keep_bytes = ftell(file);
        }
        free(line);
        fclose(file);
    }
    if (truncate(build->errors_path, keep_bytes) != 0 && errno != ENOENT)
        return uform__fail(&build->request->outcome, UFORM_IO, build->function, "cannot truncate '%s': %s", build->errors_path,
                           strerror(errno));
    build->errors = open(build->errors_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    build->error_lines = kept;
    if (build->errors < 0)
        return uform__fail(&build->request->outcome, UFORM_IO, build->function, "cannot open '%s': %s", build->errors_path,
                           strerror(errno));
    return UFORM_OK;
}

/* Opens `out` to continue it: the builder takes its items, `seen` their keys; *consumed is how many
 * items it recorded. UFORM_IO with *missing set when there is nothing to continue. */
static uform_status_t resume(build_t *build, uform__key_set_t *seen, size_t *consumed, int *missing) {
    uform_index_build_t *request = build->request;
    uform_index_t index = NULL;
    uform_outcome_t outcome = {0};
    *missing = 0, *consumed = 0;
    uform_status_t status = uform_index_open(request->out, request->model, &index, &outcome);
    if (status == UFORM_IO && access(request->out, F_OK) != 0) {
        *missing = 1;
        return UFORM_OK;
    }
    if (status != UFORM_OK) return failed(build, &outcome);
    uform_index_description_t description;
    uform_index_describe(index, &description);
    if ((request->dimensions && request->dimensions != description.dimensions) || request->scalar != description.scalar) {
        uform_index_free(index);
        return uform__fail(&request->outcome, UFORM_CONFIG_MISMATCH, build->function,
                           "'%s' holds %zu dims of %s; a resume continues it as it is (give its dims and scalar, or start over)",
                           request->out, description.dimensions, uform__index_scalar_name(description.scalar));
    }
    const char *errors = uform_index_metadata(index, ERRORS_KEY);
    const char *done = uform_index_metadata(index, CONSUMED_KEY);
    if (!errors) errors = uform_index_metadata(index, "uform.cli.errors"); /* indexes of the earlier command */
    if (!done) done = uform_index_metadata(index, "uform.cli.consumed");
    size_t lines = errors ? (size_t)strtoull(errors, NULL, 10) : 0;
    *consumed = done ? (size_t)strtoull(done, NULL, 10) : 0;
    status = uform_index_builder_from(index, &build->builder, &outcome);
    uform_index_free(index);
    if (status != UFORM_OK) return failed(build, &outcome);
    for (size_t i = 0; i < description.count; ++i) {
        const char *path;
        size_t length;
        uform_index_builder_item(build->builder, i, NULL, &path, &length);
        if (uform__key_set_insert(seen, path, length) < 0)
            return uform__fail(&request->outcome, UFORM_OUT_OF_MEMORY, build->function, "cannot allocate the set of the index's keys");
    }
    request->resumed = *consumed;
    return resume_errors(build, lines, seen);
}

/* ---- the approximate structure (`ann`) ---- */

/* What members must agree on about `ann` (uform__index_build_agree): 0 for none, else a hash of the
 * recipe and the training rows. Threads are left out: each member's apply to its own adds. */
static uint64_t ann_settings(const uform_index_ann_options_t *ann) {
    if (!ann) return 0;
    uint64_t hash = uform__fnv1a64_text(ann->recipe ? ann->recipe : "", UFORM__DATA_HASH_SEED);
    uint64_t rows = ann->train_rows;
    hash = uform__fnv1a64(&rows, sizeof rows, hash);
    return hash ? hash : 1;
}

/* `ann_path`, or `out` with ".index" replaced by ".faiss" (else ".faiss" appended); malloc'ed. */
static char *ann_target(const uform_index_build_t *request) {
    if (request->ann_path) return strdup(request->ann_path);
    size_t length = strlen(request->out);
    char *path = malloc(length + 7);
    if (!path) return NULL;
    if (length > 6 && strcmp(request->out + length - 6, ".index") == 0) length -= 6;
    snprintf(path, length + 7, "%.*s.faiss", (int)length, request->out);
    return path;
}

/* One process: the structure over the index just written, as uform_index_ann_build makes it. */
static uform_status_t ann_alone(build_t *build) {
    uform_index_build_t *request = build->request;
    char *path = ann_target(request);
    if (!path) return uform__fail(&request->outcome, UFORM_OUT_OF_MEMORY, build->function, "cannot allocate a path");
    uform_index_t index = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_index_open(request->out, NULL, &index, &outcome);
    if (status == UFORM_OK) status = uform_index_ann_build(index, path, request->ann, &outcome);
    if (status != UFORM_OK) status = failed(build, &outcome);
    uform_index_free(index);
    free(path);
    return status;
}

/* Over a mesh, once member 0 has written `out` (`status`: this member's so far): every member takes
 * part in uform_index_ann_build_members with its own rows (NULL when it failed, so the others stop
 * at once), member 0 with the whole index reopened from `out` (mapped). */
static uform_status_t ann_members(build_t *build, uform_status_t status) {
    uform_index_build_t *request = build->request;
    uform_index_builder_t own = build->builder;
    char *path = ann_target(request);
    if (status == UFORM_OK && !path)
        status = uform__fail(&request->outcome, UFORM_OUT_OF_MEMORY, build->function, "cannot allocate a path");
    uform_index_t whole = NULL;
    uform_outcome_t outcome = {0};
    if (status == UFORM_OK && build->mesh->index == 0 && uform_index_open(request->out, NULL, &whole, &outcome) != UFORM_OK)
        status = failed(build, &outcome);
    uform_status_t made = uform_index_ann_build_members(whole, status == UFORM_OK ? own : NULL, build->mesh, path, request->ann,
                                                        &outcome);
    if (status == UFORM_OK && made != UFORM_OK) status = failed(build, &outcome);
    uform_index_free(whole);
    free(path);
    return status;
}

/* ---- over a mesh ---- */

/* The pipeline on a thread of its own, so the calling thread can answer the members' rounds. */
typedef struct share_t {
    build_t *build;
    uform__reader_t *reader;
    uform_status_t status;
    uint32_t done; /* atomic */
} share_t;

static void *share_thread(void *raw) {
    share_t *share = raw;
    share->status = pipeline(share->build, share->reader);
    __atomic_store_n(&share->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Encodes this member's share while answering the rounds (uform__index_build_rounds); a failed
 * round (a member died) fails the build once the share's work has ended. */
static uform_status_t encode_share(build_t *build, uform__reader_t *reader) {
    share_t share = {build, reader, UFORM_OK, 0};
    pthread_t thread;
    int threaded = pthread_create(&thread, NULL, share_thread, &share) == 0;
    if (!threaded) share_thread(&share); /* no thread: the work first, the rounds after */
    uform_outcome_t rounds = {0};
    uform_status_t met = uform__index_build_rounds(build->mesh, &share.done, &rounds, build->function);
    if (met != UFORM_OK) __atomic_store_n(&build->cancelled, 1, __ATOMIC_RELEASE); /* no one will take the rows */
    if (threaded) pthread_join(thread, NULL);
    if (share.status != UFORM_OK && met == UFORM_OK) return share.status;
    return met == UFORM_OK ? UFORM_OK : failed(build, &rounds);
}

/* A member that fails before its share is done still takes part in the gather, with nothing, so
 * the others fail at once naming it instead of waiting out the mesh's timeout. */
static uform_status_t leave_mesh(uform_index_build_t *request, uform_status_t status) {
    if (request->mesh) {
        char *lines = NULL;
        size_t length = 0, items = 0;
        uform_outcome_t ignored = {0};
        uform__index_build_agree(request->mesh, 0, NULL, 0, 0, 0, &ignored, __func__);
        uform__index_build_gather(request->mesh, 0, 0, NULL, 0, &items, &lines, &length, &ignored, __func__);
        free(lines);
    }
    return status;
}

/* The end over a mesh: gathers every member's item count and error lines (this member's marked
 * failed when it did), member 0 writes the errors file, and the members' items stream to member 0,
 * which writes the index: the files one process writes. */
static uform_status_t finish_mesh(build_t *build, uform_status_t status) {
    uform_index_build_t *request = build->request;
    uform_outcome_t gathered_outcome = {0};
    char *lines = NULL;
    size_t length = 0, items = 0;
    if (status == UFORM_OK && build->errors_failed == ENOMEM)
        status = uform__fail(&request->outcome, UFORM_OUT_OF_MEMORY, build->function, "cannot allocate the error lines");
    uform__index_builder_view_t view = {0};
    if (build->builder) uform__index_builder_view(build->builder, &view);
    uform_status_t met = uform__index_build_gather(build->mesh, status == UFORM_OK && build->builder, view.count, build->error_text,
                                                   build->error_length, &items, &lines, &length, &gathered_outcome,
                                                   build->function);
    if (status != UFORM_OK) { /* this member's own failure says more than the gather's echo of it */
        free(lines);
        return status;
    }
    if (met != UFORM_OK) return failed(build, &gathered_outcome);
    /* This member's own rows stay for the approximate structure: they are the member's contiguous
     * block of the index (its batches are a contiguous run of one process's). */
    size_t count = 0;
    for (size_t i = 0; i < length; ++i) count += lines[i] == '\n';
    request->indexed = items, request->failed = count;
    if (build->mesh->index == 0) {
        status = uform__index_build_write_errors(build->errors_path, lines, length, &request->outcome, build->function);
        build->error_lines = count;
        /* write_index checks and syncs the errors descriptor; here the file is already durable. */
        if (status == UFORM_OK) build->errors = open(build->errors_path, O_RDONLY | O_CLOEXEC);
        if (status == UFORM_OK && build->errors < 0)
            status = uform__fail(&request->outcome, UFORM_IO, build->function, "cannot reopen '%s': %s", build->errors_path,
                                 strerror(errno));
    }
    free(lines);
    status = write_index(build, build->consumed, status);
    if (request->ann) status = ann_members(build, status);
    return status;
}

/* ---- the verb ---- */

UFORM_API uform_status_t uform_index_build(uform_index_build_t *request) {
    const char *function = __func__;
    if (!request) return UFORM_INVALID_ARGUMENT;
    request->indexed = request->failed = request->skipped = request->duplicates = request->resumed = 0;
    uform__data_error_clear(&request->error);
    uform_outcome_t *outcome = &request->outcome;
    if (!request->model || !request->out || !request->dataset_count || !request->datasets)
        return leave_mesh(request, uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s",
                                               !request->model ? "model is NULL" : !request->out ? "out is NULL" : "no datasets"));
    for (size_t d = 0; d < request->dataset_count; ++d) {
        if (!request->datasets[d])
            return leave_mesh(request, uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "datasets[%zu] is NULL", d));
        if (request->datasets[d]->busy)
            return leave_mesh(request, uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                                   "datasets[%zu] is read by a loader or another build", d));
    }
    if (request->mesh && request->resume)
        return leave_mesh(request, uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                               "resume over a mesh is not supported: nothing is written before the end"));
    uform_model_describe_t describe = {request->model};
    uform_model_describe(&describe);
    unsigned present = describe.description.modalities;
    unsigned modalities = request->modalities ? request->modalities : present;
    if (modalities & ~present)
        return leave_mesh(request, uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                               "modalities 0x%x asks for a modality the model lacks (it has 0x%x)", modalities,
                                               present));
    build_t build;
    memset(&build, 0, sizeof build);
    build.request = request, build.function = function, build.errors = -1;
    build.mesh = request->mesh, build.high = SIZE_MAX;
    size_t errors_length = request->errors_path ? strlen(request->errors_path) : strlen(request->out) + 14;
    build.errors_path = malloc(errors_length + 1);
    uform_status_t status = build.errors_path ? UFORM_OK : uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a path");
    if (status == UFORM_OK)
        snprintf(build.errors_path, errors_length + 1, "%s%s", request->errors_path ? request->errors_path : request->out,
                 request->errors_path ? "" : ".errors.jsonl");
    for (int i = 0; status == UFORM_OK && i < 2; ++i)
        status = uform_arena_for_executor(request->decoder ? request->decoder : request->executor, &build.prepared[i], outcome);
    if (status == UFORM_OK) status = uform_arena_for_executor(request->executor, &build.encoded, outcome);
    uform__key_set_t seen = {0};
    size_t consumed = 0;
    if (status == UFORM_OK && request->resume) {
        int missing = 0;
        status = resume(&build, &seen, &consumed, &missing);
    }
    if (status == UFORM_OK && !build.builder) {
        status = uform_index_builder_create(request->model, request->dimensions, request->scalar, &build.builder, outcome);
        /* Over a mesh the errors file is written by member 0 at the end (finish_mesh). */
        if (status == UFORM_OK && !build.mesh &&
            (build.errors = open(build.errors_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
            status = uform__fail(outcome, errno == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO, function, "cannot write '%s': %s",
                                 build.errors_path, strerror(errno));
    }
    for (size_t d = 0; d < request->dataset_count; ++d) {
        uform_dataset_description_t description;
        uform_dataset_describe(request->datasets[d], &description);
        build.total += description.items;
    }
    if (build.mesh) {
        size_t items = 0; /* the positions' total: items, or shards for shards */
        for (size_t d = 0; d < request->dataset_count; ++d) items += uform__index_build_weight(request->datasets[d]);
        uform__index_build_share(build.mesh, items, &build.low, &build.high);
        build.total = build.high - build.low;
        /* The last member also takes any batch handed over past the count the datasets declared,
         * so every batch has exactly one owner whatever the count. */
        if (build.mesh->index + 1 == build.mesh->count) build.high = SIZE_MAX;
        /* Members given other inputs would each contribute a share of another corpus. */
        uform_outcome_t agreed = {0};
        uform_status_t agreement = uform__index_build_agree(build.mesh, status == UFORM_OK, request->datasets,
                                                            request->dataset_count, items, ann_settings(request->ann), &agreed,
                                                            function);
        if (status == UFORM_OK && agreement != UFORM_OK) status = failed(&build, &agreed);
    }
    build.done = consumed;
    uform__reader_t reader;
    memset(&reader, 0, sizeof reader);
    char *own[2] = {NULL, NULL};
    if (status == UFORM_OK) {
        for (size_t d = 0; d < request->dataset_count; ++d) request->datasets[d]->busy = 2;
        own[0] = realpath(request->out, NULL), own[1] = realpath(build.errors_path, NULL);
        reader.datasets = request->datasets, reader.dataset_count = request->dataset_count;
        reader.skip = consumed, reader.seen = &seen, reader.own[0] = own[0], reader.own[1] = own[1];
        reader.modalities = modalities, reader.batch = request->batch ? request->batch : 32;
        reader.batch_bytes = (size_t)256 << 20, reader.checkpoint = request->checkpoint;
        reader.cancelled = &build.cancelled;
        report(&build);
        if (uform__reader_start(&reader, 3) != 0) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the reader thread");
        else {
            status = build.mesh ? encode_share(&build, &reader) : pipeline(&build, &reader);
            uform__reader_stop(&reader);
            request->skipped = reader.skipped, request->duplicates = reader.duplicates;
        }
        for (size_t d = 0; d < request->dataset_count; ++d) request->datasets[d]->busy = 0, uform__dataset_rewind(request->datasets[d]);
    }
    free(own[0]), free(own[1]);
    if (build.mesh) status = finish_mesh(&build, status);
    else if (status == UFORM_OK && request->ann) status = ann_alone(&build);
    free(build.error_text);
    uform__key_set_free(&seen);
    if (build.errors >= 0) close(build.errors);
    free(build.errors_path);
    uform_index_builder_free(build.builder);
    for (int i = 0; i < 2; ++i) uform_arena_free(build.prepared[i]);
    uform_arena_free(build.encoded);
    return status == UFORM_OK ? uform__succeed(outcome, function) : status;
}
