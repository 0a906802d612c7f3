/* The model side of `uform serve`: executors, the checkpoint and the index (serve.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../ann_choice.h"
#include "serve.h"

static int fail(char *error, size_t capacity, const uform_outcome_t *outcome, const char *context) {
    char line[640];
    uform_outcome_format(outcome, line, sizeof line);
    if (context) snprintf(error, capacity, "%s (%s)", line, context);
    else snprintf(error, capacity, "%s", line);
    return -1;
}

int serve_model_open(const serve_model_options_t *options, const char *index_path, serve_model_t *model, char *error,
                     size_t capacity) {
    memset(model, 0, sizeof *model);
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, options->threads, 0, &model->compute, &outcome) != UFORM_OK)
        return fail(error, capacity, &outcome, "the compute executor");
    if (uform_executor_for_ram(NULL, options->decode_threads ? options->decode_threads : 1, 0, &model->decode, &outcome) !=
        UFORM_OK)
        return serve_model_close(model), fail(error, capacity, &outcome, "the decode executor");
    uform_ram_options_t ram = {0};
    ram.compute = options->compute >= 0 ? (uform_compute_t)options->compute : uform_compute_best(UFORM_CPU_CLASS_UNKNOWN);
    if (uform_model_load_ram(model->compute, options->checkpoint, &ram, &model->model, &outcome) != UFORM_OK)
        return serve_model_close(model), fail(error, capacity, &outcome, NULL);
    uform_model_describe_t describe = {model->model};
    if (uform_model_describe(&describe) != UFORM_OK) return serve_model_close(model), fail(error, capacity, &describe.outcome, NULL);
    model->description = describe.description;
    if (index_path) {
        if (uform_index_open(index_path, model->model, &model->index, &outcome) != UFORM_OK)
            return serve_model_close(model), fail(error, capacity, &outcome, index_path);
        uform_index_describe(model->index, &model->index_description);
        /* The structure beside the index, by the CLI's rule; one that does not belong to this
         * index is the library's refusal here, before the server listens. */
        model->exact = options->exact;
        if (!(model->index_path = strdup(index_path)) || !(model->ann_path = ann_choice_path(index_path))) {
            serve_model_close(model);
            snprintf(error, capacity, "out of memory opening %s", index_path);
            return -1;
        }
        if (ann_choice_approximate(model->ann_path, options->exact)) {
            if (uform_index_ann_open(model->index, model->ann_path, &model->ann, &outcome) != UFORM_OK)
                return serve_model_close(model), fail(error, capacity, &outcome, NULL);
            uform_index_ann_describe(model->ann, &model->ann_description);
        }
    }
    /* The model's name, as /v1/models lists it and requests name it: the file's base name, or a
     * published folder's own name ("clip-vit-base-patch32" for ~/models/clip-vit-base-patch32/). */
    size_t full = strlen(options->checkpoint);
    while (full > 1 && options->checkpoint[full - 1] == '/') --full;
    const char *base = options->checkpoint + full;
    while (base > options->checkpoint && base[-1] != '/') --base;
    size_t length = (size_t)(options->checkpoint + full - base);
    if (length > 12 && memcmp(base + length - 12, ".safetensors", 12) == 0) length -= 12;
    if (length == 0) base = "model", length = 5;
    if (length >= sizeof model->name) length = sizeof model->name - 1;
    memcpy(model->name, base, length);
    model->name[length] = 0;
    struct stat info;
    model->created = stat(options->checkpoint, &info) == 0 ? (int64_t)info.st_mtime : 0;
    return 0;
}

void serve_model_close(serve_model_t *model) {
    uform_index_ann_free(model->ann);
    free(model->index_path);
    free(model->ann_path);
    uform_index_free(model->index);
    uform_model_free(model->model);
    uform_executor_free(model->decode);
    uform_executor_free(model->compute);
    memset(model, 0, sizeof *model);
}

size_t serve_model_tokens(const serve_model_t *model, int modality, const unsigned char *bytes, size_t size) {
    /* The library's count of what the tower runs for this item (uform_model_tokens): the text
     * tower's tokens, or a media item's class, register and patch rows. It fails only for memory
     * (the modality was checked when the request was read), and then the usage counts nothing
     * rather than a guess. */
    size_t count = 0;
    if (uform_model_tokens(model->model, (uform_modality_t)modality, bytes, size, &count, NULL) != UFORM_OK) count = 0;
    return count;
}
