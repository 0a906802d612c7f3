/*
 * The PyTorch reader's part of the replay driver (replay.h). Seeds (torch_pickle_fuzz.c's input
 * format: a mode byte, then an archive or a raw pickle) are state-dict pickles in protocols 2 and 4,
 * archives of three layouts and a legacy-format file, built in memory by tests/io/torch_sample.h.
 * The driver keeps the mode byte and writes pickle opcodes and small integers (sizes, counts, memo
 * slots) into the rest.
 */
#include <stdlib.h>
#include <string.h>

#include "io/torch_file.h"
#include "io/torch_sample.h"
#include "replay.h"

#define SEED_COUNT 7

const char *const replay_extension = ".bin";

/* A protocol 4 pickle: FRAME, MEMOIZE, STACK_GLOBAL, NEWOBJ, memo reads, a nested dict. */
static void protocol4_pickle(sample_bytes_t *pickle) {
    sample_bytes_t body = {0};
    SAMPLE_LITERAL(&body, "}\x94(\x8c\x01" "a");
    pickle_vector(&body, "0", 24, 0, 3);
    SAMPLE_LITERAL(&body, "\x94\x8c\x01" "b\x68\x01\x8c\x02od\x8c\x0b" "collections\x8c\x0bOrderedDict\x93)\x81(\x8c\x01x");
    pickle_vector(&body, "0", 24, 4, 2);
    SAMPLE_LITERAL(&body, "uu.");
    SAMPLE_LITERAL(pickle, "\x80\x04\x95");
    sample_le(pickle, body.size, 8);
    sample_put(pickle, body.data, body.size);
    free(body.data);
}

static void make_inputs(sample_bytes_t seeds[SEED_COUNT]) {
    sample_bytes_t state = {0}, modern = {0};
    sample_state_pickle(&state);
    protocol4_pickle(&modern);
    const sample_zip_options_t layouts[3] = {{0, 0, NULL}, {1, 0, NULL}, {0, 1, "comment"}};
    for (int index = 0; index < SEED_COUNT; ++index) {
        memset(&seeds[index], 0, sizeof seeds[index]);
        sample_byte(&seeds[index], (uint8_t)(index < 2 ? 1 : 0)); /* odd: a raw pickle */
        if (index < 2) {
            const sample_bytes_t *pickle = index ? &modern : &state;
            sample_put(&seeds[index], pickle->data, pickle->size);
        } else if (index == 6) {
            sample_legacy(&seeds[index], NULL, 0);
        } else {
            sample_archive(&seeds[index], index == 5 ? &modern : &state, layouts[index < 5 ? index - 2 : 0]);
        }
    }
    free(state.data);
    free(modern.data);
}

size_t replay_seeds(replay_seed_t *seeds, size_t capacity) {
    if (capacity < SEED_COUNT) return 0;
    sample_bytes_t inputs[SEED_COUNT];
    make_inputs(inputs);
    for (int index = 0; index < SEED_COUNT; ++index) seeds[index] = (replay_seed_t){inputs[index].data, inputs[index].size};
    return SEED_COUNT;
}

/* 1 when the reader accepts input `bytes` (the mode byte first). */
int replay_accepts(const uint8_t *bytes, size_t size) {
    if (!size) return 0;
    sample_bytes_t archive = {0};
    const uint8_t *data = bytes + 1;
    size_t length = size - 1;
    if (bytes[0] & 1) {
        sample_bytes_t pickle = {(uint8_t *)(uintptr_t)(bytes + 1), size - 1, size - 1};
        sample_archive(&archive, &pickle, (sample_zip_options_t){0});
        data = archive.data;
        length = archive.size;
    }
    uform__torch_file_t *file = NULL;
    int ok = uform__torch_open_memory(data, length, &file, NULL) == UFORM_OK;
    uform__torch_close(file);
    free(archive.data);
    return ok;
}

static const uint8_t interesting[] = {'(', ')', '}', ']', 't', 'u', 's', 'a', 'e', 'd', 'l', 'R', 'b', 'Q', 'h', 'q',
                                      'j', 'r', '0', '1', '2', 'N', 'K', 'J', 'M', 'X', 'C', 'G', '.', '\n', 0x80,
                                      0x81, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8c, 0x8d, 0x8f, 0x93, 0x94, 0x95,
                                      0x00, 0x01, 0x02, 0x03, 0x04, 0x7f, 0xff, 'P', 'K', 0x05, 0x06};

const replay_hooks_t replay_hooks = {interesting, sizeof interesting, 1, NULL};
