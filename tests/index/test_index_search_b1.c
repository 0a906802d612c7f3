/*
 * B1 search against a brute force in this file, bit for bit, on every CPU class this machine runs,
 * on 1, 2 and 3 threads: the `candidates` items nearest by Hamming distance (ties by item), rescored
 * as uform.h defines (Σ q·s / √dims in double, column order), best `top` by (score, item).
 *
 * Shapes: 256 dimensions (32-byte rows: the kernels' packed 16-rows-per-step path), 200 (25 bytes)
 * and 520 (65 bytes, past one 64-byte chunk); 5,000 items in four modalities, so each thread's
 * heaps fill in its first block and every later block goes through hamming_b1_within. Around each
 * query the index holds near copies (a few bits flipped) in every modality and exact copies, so the
 * scan marks many rows, distances tie across modalities, and items order those ties (also at the
 * heaps' worst entry, where a row scanned later wins by its smaller item). Queries in
 * batches of 1, 5 and 70 (two query groups of the kernels), `candidates` 0 (4·top) and 13, all
 * modalities and two of them.
 */
#include "common/check.h"
#include "common/skip.h"
#include "core/arena.h"
#include "index/index.h"
#include "io/safetensors.h"
#include "kernels/nn.h"
#include "uform/uform.h"

#define ITEMS 5000
#define QUERIES 70
#define TOP 10

static uint64_t seed = 0xB1B1B1;
static uint32_t next_random(void) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(seed >> 33);
}
static float uniform(void) { return (float)next_random() / 1073741824.0f - 1.0f; } /* [-1, 1) */

typedef struct corpus_t {
    size_t dims, bytes;
    float *queries;        /* [QUERIES, dims] */
    uint8_t *query_bits;   /* [QUERIES, bytes] */
    uint8_t *bits;         /* [ITEMS, bytes] item order */
    uint8_t modality[ITEMS];
} corpus_t;

/* Random rows, then near copies of queries: item 40·j + 7·m (m < 4, j < 100) is query j % QUERIES with
 * j % 23 bits flipped and modality m; every 9th of those an exact copy. */
static void make_corpus(corpus_t *corpus, size_t dims) {
    const uform__nn_kernels_t *nn = uform__nn_kernels(UFORM_CPU_CLASS_SERIAL);
    corpus->dims = dims, corpus->bytes = (dims + 7) / 8;
    corpus->queries = malloc(QUERIES * dims * sizeof(float));
    corpus->query_bits = malloc(QUERIES * corpus->bytes);
    corpus->bits = malloc(ITEMS * corpus->bytes);
    float *row = malloc(dims * sizeof(float));
    for (size_t j = 0; j < QUERIES; ++j) {
        for (size_t c = 0; c < dims; ++c) corpus->queries[j * dims + c] = uniform();
        nn->f32_to_b1(dims, corpus->queries + j * dims, corpus->query_bits + j * corpus->bytes);
    }
    for (size_t i = 0; i < ITEMS; ++i) {
        for (size_t c = 0; c < dims; ++c) row[c] = uniform();
        nn->f32_to_b1(dims, row, corpus->bits + i * corpus->bytes);
        corpus->modality[i] = (uint8_t)(next_random() % 4);
    }
    for (size_t j = 0; j < 100; ++j)
        for (size_t m = 0; m < 4; ++m) {
            size_t item = 40 * j + 7 * m;
            uint8_t *target = corpus->bits + item * corpus->bytes;
            memcpy(target, corpus->query_bits + (j % QUERIES) * corpus->bytes, corpus->bytes);
            corpus->modality[item] = (uint8_t)m;
            if ((j + m) % 9 == 0) continue;
            for (size_t f = 0; f < j % 23; ++f) {
                size_t bit = next_random() % dims;
                target[bit / 8] ^= (uint8_t)(0x80u >> (bit % 8));
            }
        }
    /* Sixty more copies of query 0 at distance 1 (one bit flipped each): text items 4950-4979, audio
     * items 200-214 and 4700-4714. Text is scanned first and fills the heaps; the audio copies tie
     * the heaps' worst entries (distance 1) and must still replace them, since they come first by
     * item. Audio items past ~4100 sit in the second audio block, which starts with heaps full of
     * distance-1 entries. */
    for (size_t k = 0; k < 60; ++k) {
        size_t item = k < 30 ? 4950 + k : k < 45 ? 200 + (k - 30) : 4700 + (k - 45), bit = (k * 37) % dims;
        uint8_t *target = corpus->bits + item * corpus->bytes;
        memcpy(target, corpus->query_bits, corpus->bytes);
        target[bit / 8] ^= (uint8_t)(0x80u >> (bit % 8));
        corpus->modality[item] = k < 30 ? UFORM_MODALITY_TEXT : UFORM_MODALITY_AUDIO;
    }
    free(row);
}

/* The index file's bytes in memory (index.h's layout), rows grouped by modality in item order. */
static unsigned char *write_index(const corpus_t *corpus, const char *path, size_t *size) {
    unsigned char *data[4];
    uint64_t shapes[7][2];
    size_t rows[4] = {0, 0, 0, 0};
    for (int m = 0; m < 4; ++m) data[m] = malloc(ITEMS * corpus->bytes);
    for (size_t i = 0; i < ITEMS; ++i) {
        int m = corpus->modality[i];
        memcpy(data[m] + rows[m]++ * corpus->bytes, corpus->bits + i * corpus->bytes, corpus->bytes);
    }
    int64_t *offsets = calloc(ITEMS + 1, sizeof(int64_t));
    uform__safetensors_source_t tensors[7];
    for (int m = 0; m < 4; ++m) {
        shapes[m][0] = rows[m], shapes[m][1] = corpus->bytes;
        tensors[m] = (uform__safetensors_source_t){uform__index_tensor_name((uform_modality_t)m), UFORM__SAFETENSORS_U8, 2,
                                                   shapes[m], data[m]};
    }
    shapes[4][0] = ITEMS, shapes[5][0] = ITEMS + 1, shapes[6][0] = 0;
    tensors[4] = (uform__safetensors_source_t){"items.modality", UFORM__SAFETENSORS_U8, 1, shapes[4], corpus->modality};
    tensors[5] = (uform__safetensors_source_t){"items.path_offsets", UFORM__SAFETENSORS_I64, 1, shapes[5], offsets};
    tensors[6] = (uform__safetensors_source_t){"items.paths", UFORM__SAFETENSORS_U8, 1, shapes[6], NULL};
    char dims_text[24], count_text[24];
    snprintf(dims_text, sizeof dims_text, "%zu", corpus->dims);
    snprintf(count_text, sizeof count_text, "%d", ITEMS);
    uform__safetensors_pair_t metadata[] = {{UFORM__INDEX_KEY_FORMAT, UFORM__INDEX_FORMAT},
                                            {UFORM__INDEX_KEY_FINGERPRINT, "0123456789abcdef0123456789abcdef"},
                                            {UFORM__INDEX_KEY_DIMS, dims_text},
                                            {UFORM__INDEX_KEY_SCALAR, "b1"},
                                            {UFORM__INDEX_KEY_COUNT, count_text}};
    uform__safetensors_write_t request = {tensors, 7, metadata, 5, NULL, NULL};
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__safetensors_write(path, &request, &outcome), UFORM_OK);
    for (int m = 0; m < 4; ++m) free(data[m]);
    free(offsets);
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    *size = (size_t)ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *bytes = malloc(*size);
    if (fread(bytes, 1, *size, file) != *size) *size = 0;
    fclose(file);
    remove(path);
    return bytes;
}

typedef struct ranked_t {
    uint64_t item;
    uint32_t distance;
    float score;
} ranked_t;

static int by_distance(const void *left, const void *right) {
    const ranked_t *a = left, *b = right;
    if (a->distance != b->distance) return a->distance < b->distance ? -1 : 1;
    return a->item < b->item ? -1 : a->item > b->item;
}

static int by_score(const void *left, const void *right) {
    const ranked_t *a = left, *b = right;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->item < b->item ? -1 : a->item > b->item;
}

/* The expected hits of query j: [TOP] items and scores. */
static void brute_force(const corpus_t *corpus, size_t j, unsigned modalities, size_t candidates, ranked_t *expected) {
    ranked_t *ranked = malloc(ITEMS * sizeof *ranked);
    size_t eligible = 0;
    const uint8_t *query = corpus->query_bits + j * corpus->bytes;
    for (size_t i = 0; i < ITEMS; ++i) {
        if (!(modalities & (1u << corpus->modality[i]))) continue;
        uint32_t distance = 0;
        for (size_t b = 0; b < corpus->bytes; ++b)
            distance += (uint32_t)__builtin_popcount((unsigned)(corpus->bits[i * corpus->bytes + b] ^ query[b]));
        ranked[eligible++] = (ranked_t){i, distance, 0.0f};
    }
    qsort(ranked, eligible, sizeof *ranked, by_distance);
    size_t keep = candidates < eligible ? candidates : eligible;
    const float *q = corpus->queries + j * corpus->dims;
    for (size_t k = 0; k < keep; ++k) {
        const uint8_t *row = corpus->bits + ranked[k].item * corpus->bytes;
        double sum = 0;
        for (size_t c = 0; c < corpus->dims; ++c) sum += (row[c / 8] >> (7 - c % 8) & 1) ? q[c] : -(double)q[c];
        ranked[k].score = (float)(sum / sqrt((double)corpus->dims));
    }
    qsort(ranked, keep, sizeof *ranked, by_score);
    memcpy(expected, ranked, TOP * sizeof *ranked);
    free(ranked);
}

int main(void) {
    const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL, UFORM_CPU_CLASS_INTEL_SKYLAKE,
                                         UFORM_CPU_CLASS_INTEL_ICELAKE, UFORM_CPU_CLASS_AMD_GENOA};
    const size_t dims_list[] = {256, 200, 520}, batches[] = {1, 5, QUERIES}, candidates_list[] = {0, 13};
    const unsigned masks[] = {0, (1u << UFORM_MODALITY_TEXT) | (1u << UFORM_MODALITY_AUDIO)};
    uform_arena_t arena = NULL;
    uform_arena_for_host(&arena, NULL);
    ranked_t *expected = malloc(QUERIES * TOP * sizeof *expected);
    for (size_t d = 0; d < sizeof dims_list / sizeof *dims_list; ++d) {
        corpus_t corpus;
        make_corpus(&corpus, dims_list[d]);
        size_t size = 0;
        unsigned char *file = write_index(&corpus, "test_index_search_b1.index", &size);
        uform_index_t index = NULL;
        uform_outcome_t outcome = {0};
        CHECK_STATUS(uform__index_open_memory(file, size, NULL, &index, &outcome), UFORM_OK);
        if (!index) return check_finish();
        for (size_t c = 0; c < sizeof candidates_list / sizeof *candidates_list; ++c)
            for (size_t m = 0; m < sizeof masks / sizeof *masks; ++m) {
                size_t candidates = candidates_list[c] ? candidates_list[c] : 4 * TOP;
                for (size_t j = 0; j < QUERIES; ++j)
                    brute_force(&corpus, j, masks[m] ? masks[m] : 0xFu, candidates, expected + j * TOP);
                for (size_t k = 0; k < sizeof classes / sizeof *classes; ++k) {
                    if (!check_class_runs(classes[k])) continue;
                    for (size_t threads = 1; threads <= 3; ++threads) {
                        uform_ram_options_t options = {NULL, 0, classes[k], UFORM_COMPUTE_F32};
                        uform_executor_t executor = NULL;
                        CHECK_STATUS(uform_executor_for_ram(&options, threads, 0, &executor, NULL), UFORM_OK);
                        for (size_t b = 0; b < sizeof batches / sizeof *batches; ++b) {
                            uform_index_search_t search = {0};
                            search.index = index, search.executor = executor, search.arena = arena;
                            search.queries = corpus.queries, search.queries_count = batches[b];
                            search.queries_columns = corpus.dims, search.top = TOP;
                            search.candidates = candidates_list[c], search.modalities = masks[m];
                            CHECK_STATUS(uform_index_search(&search), UFORM_OK);
                            size_t wrong = 0;
                            for (size_t j = 0; j < batches[b] && search.hits; ++j)
                                for (size_t i = 0; i < TOP; ++i) {
                                    const uform_index_hit_t *hit = &search.hits[j * search.hits_per_query + i];
                                    const ranked_t *want = &expected[j * TOP + i];
                                    if ((hit->item != want->item || hit->score != want->score ||
                                         hit->modality != (uform_modality_t)corpus.modality[want->item]) &&
                                        wrong++ < 3)
                                        fprintf(stderr,
                                                "%s, %zu threads, %zu dims, %zu queries, candidates %zu, modalities 0x%x: "
                                                "query %zu hit %zu is item %llu (%.9g), expected %llu (%.9g)\n",
                                                uform_cpu_class_name(classes[k]), threads, corpus.dims, batches[b], candidates,
                                                masks[m], j, i, (unsigned long long)hit->item, hit->score,
                                                (unsigned long long)want->item, want->score);
                                }
                            CHECK_MSG(search.hits && search.hits_per_query == TOP && wrong == 0, "%zu wrong hits", wrong);
                        }
                        uform_executor_free(executor);
                    }
                }
            }
        uform_index_free(index);
        free(file), free(corpus.queries), free(corpus.query_bits), free(corpus.bits);
    }
    free(expected);
    uform_arena_free(arena);
    return check_finish();
}
