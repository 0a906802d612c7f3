/*
 * libFuzzer target for JSON-lines manifests (src/data/manifest.c, dataset.c): any bytes are a
 * manifest file opened as a MANIFEST dataset, once failing at the first bad line and once with
 * skip_bad (bad lines counted and left out). Either answers a status; a refusal fills the error's
 * line and message. The media files lines name are not read (a fuzzed path may name any file).
 * Seeds (replay.h): pairs of every medium, choice examples, items and texts to index, blank lines.
 */
#include <stdlib.h>
#include <string.h>

#include "data_fuzz_file.h"
#include "replay.h"
#include "uform/uform.h"

const char *const replay_extension = ".jsonl";

static const char *const seed_texts[] = {
    "{\"text\": \"a red square\", \"image\": \"media/1.jpg\"}\n"
    "{\"text\": \"rain on a roof\", \"audio\": \"media/2.wav\"}\n"
    "\n"
    "{\"text\": \"a bird flies\", \"video\": \"media/3.mp4\", \"extra\": [1, 2.5e3, null, {\"x\": true}]}\n",
    "{\"text\": \"Is it red? A: yes B: no\", \"choices\": \"AB\", \"target\": \"A\"}\n"
    "{\"text\": \"pick \\u00e9 or \\\"q\\\"\", \"choices\": \"xyz\", \"target\": \"z\"}\n",
    "{\"path\": \"media/1.jpg\"}\n{\"path\": \"media/2.wav\", \"modality\": \"audio\"}\n"
    "{\"text\": \"to index\", \"id\": \"doc-7\"}\n{\"text\": \"no id\"}\r\n",
    "{\"text\": \"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x90\xa6\", \"image\": \"./a b/c.png\"}",
};

/* Opens the manifest; answers 1 when it opened with every line good, 0 when refused or some were bad. */
static int open_manifest(const char *path, int skip_bad) {
    uform_dataset_options_t options = {0};
    options.source = UFORM_DATASET_MANIFEST;
    options.path = path;
    options.skip_bad = skip_bad;
    uform_dataset_t dataset = NULL;
    uform_data_error_t error;
    uform_outcome_t outcome = {0};
    memset(&error, 0x5A, sizeof error);
    uform_status_t status = uform_dataset_open(&options, &dataset, &error, &outcome);
    if (status != UFORM_OK) {
        if (dataset || !outcome.message[0]) __builtin_trap();
        if (status == UFORM_FORMAT && (error.status != UFORM_FORMAT || error.line == 0 || !memchr(error.message, 0, sizeof error.message)))
            __builtin_trap(); /* a malformed line is named */
        return 0;
    }
    uform_dataset_description_t description;
    uform_dataset_describe(dataset, &description);
    if (description.fingerprint[16] != 0) __builtin_trap();
    if (!skip_bad && description.bad) __builtin_trap();
    uform_dataset_free(dataset);
    return description.bad == 0 && description.samples + description.items > 0;
}

static int run(const uint8_t *data, size_t size) {
    const char *path = data_fuzz_write(data, size);
    if (!path) return 0;
    int strict = open_manifest(path, 0), lenient = open_manifest(path, 1);
    return strict && lenient;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    run(data, size);
    return 0;
}

int replay_accepts(const uint8_t *data, size_t size) { return run(data, size); }

size_t replay_seeds(replay_seed_t *seeds, size_t capacity) {
    size_t count = sizeof seed_texts / sizeof seed_texts[0];
    if (capacity < count) return 0;
    for (size_t i = 0; i < count; ++i) {
        seeds[i].size = strlen(seed_texts[i]);
        seeds[i].bytes = malloc(seeds[i].size);
        if (!seeds[i].bytes) return 0;
        memcpy(seeds[i].bytes, seed_texts[i], seeds[i].size);
    }
    return count;
}
