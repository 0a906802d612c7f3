/*
 * uform search INDEX CKPT (--text T | --image F | --audio F | --video F) [--top K] [--json] ...
 *
 * Encodes one query with the checkpoint that built the index (another checkpoint is refused with
 * UFORM_CONFIG_MISMATCH), at the index's width, and prints the K best items of every modality the
 * index holds, best first, ties by item number: through INDEX's approximate structure when its
 * .faiss exists beside it (X.index → X.faiss; uform_index_ann_search, knobs --nprobe, --ef,
 * --rerank), else — or with --exact — by exact search (uform_index_search). The output is the same.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ann_choice.h"
#include "cli.h"
#include "search_queries.h"

typedef struct search_options_t {
    const char *query[4]; /* by modality */
    size_t top, threads, candidates, nprobe, ef, rerank;
    unsigned modalities;
    int json, compute, exact;
    const char *queries; /* --queries Q.npy: batched query vectors (search_queries.c) */
    int normalize;
} search_options_t;

static void defaults(void *raw) { ((search_options_t *)raw)->top = 10; }

static const cli_flag_t flags[] = {
    CLI_FLAG("--text", CLI_TEXT, search_options_t, query[UFORM_MODALITY_TEXT], "T", "a text query"),
    CLI_FLAG("--image", CLI_TEXT, search_options_t, query[UFORM_MODALITY_IMAGE], "F", "an image file as the query"),
    CLI_FLAG("--video", CLI_TEXT, search_options_t, query[UFORM_MODALITY_VIDEO], "F", "a video file as the query"),
    CLI_FLAG("--audio", CLI_TEXT, search_options_t, query[UFORM_MODALITY_AUDIO], "F", "an audio file as the query"),
    CLI_FLAG("--top", CLI_POSITIVE, search_options_t, top, "K", "how many items (default 10)"),
    CLI_FLAG("--modalities", CLI_MODALITIES, search_options_t, modalities, "LIST",
             "only items of these modalities (text,image,video,audio; default: all)"),
    CLI_FLAG("--candidates", CLI_SIZE, search_options_t, candidates, "N",
             "b1 indexes: items rescored exactly after the Hamming pass (default 4 K)"),
    CLI_FLAG("--queries", CLI_TEXT, search_options_t, queries, "Q.npy",
             "query vectors: the rows of a 2-D float32 or float16 .npy matrix, searched as one\n"
             "batch (CKPT optional; --json: one line per query, {\"query\": i, \"hits\": [...]})"),
    CLI_SWITCH_FLAG("--normalize", search_options_t, normalize, "with --queries: L2-normalise each query first"),
    CLI_FLAG("--nprobe", CLI_POSITIVE, search_options_t, nprobe, "N",
             "approximate (IVF): inverted lists visited per query (default: lists / 32, at least 1)"),
    CLI_FLAG("--ef", CLI_POSITIVE, search_options_t, ef, "N",
             "approximate (HNSW): the graph search's candidate list, efSearch (default max(64, candidates))"),
    CLI_FLAG("--rerank", CLI_SIZE, search_options_t, rerank, "N",
             "approximate: rescore N candidates exactly from the index's rows, answer the best K;\n"
             "0: FAISS's own scores (default, for codes that approximate the rows such as PQ and SQ:\n"
             "max(10 K, min(1000, codes scanned / 4)); none for full rows)"),
    CLI_SWITCH_FLAG("--exact", search_options_t, exact, "scan every row even when INDEX has a .faiss beside it"),
    CLI_JSON(search_options_t, json),
    CLI_THREADS(search_options_t, threads),
    CLI_INFERENCE_COMPUTE_FLAGS(search_options_t, compute),
    CLI_FLAGS_END,
};

/* Encodes the query into `query` (F32, `dims` columns); answers 0 or the exit status. */
static int encode_query(uform_model_t model, uform_executor_t executor, uform_arena_t arena, uform_modality_t modality,
                        const char *argument, size_t dims, float *query) {
    size_t size = 0;
    unsigned char *bytes = NULL;
    if (modality == UFORM_MODALITY_TEXT) size = strlen(argument);
    else if (!(bytes = cli_read_file(argument, &size))) return 1;
    size_t offsets[2] = {0, size};
    uform_tape_t tape = {modality == UFORM_MODALITY_TEXT ? (const void *)argument : bytes, offsets, 1};
    uform_encode_config_t config = {UFORM_SCALAR_F32, {0}, NULL, dims};
    uform_encoded_t encoded;
    uform_outcome_t outcome = {0};
    uform_status_t status = cli_encode(model, executor, arena, modality, &tape, UFORM_OUTPUTS_EMBEDDINGS, &config, &encoded, &outcome);
    free(bytes);
    if (status != UFORM_OK) return cli_fail(&outcome, modality == UFORM_MODALITY_TEXT ? NULL : argument);
    const void *row = NULL;
    uform_matrix_row(&encoded.embeddings, 0, &row);
    memcpy(query, row, dims * sizeof(float));
    return 0;
}

static int run(void *raw, const cli_parsed_t *parsed) {
    search_options_t *options = raw;
    const char *index_path = parsed->positional[0], *checkpoint = parsed->positional_count > 1 ? parsed->positional[1] : NULL;
    if (options->queries) {
        for (int m = 0; m < 4; ++m)
            if (options->query[m])
                return cli_usage_error(parsed->command, "--queries takes the place of --text, --image, --audio and --video");
        if (cli_given(parsed, "--nprobe") || cli_given(parsed, "--ef") || cli_given(parsed, "--rerank"))
            return cli_usage_error(parsed->command, "--queries batches are searched exactly: --nprobe, --ef and --rerank do not apply");
        search_queries_options_t batch = {index_path, checkpoint, options->queries, options->top, options->threads,
                                          options->candidates, options->modalities, options->json, options->compute,
                                          options->normalize};
        return search_queries_run(&batch);
    }
    if (options->normalize) return cli_usage_error(parsed->command, "--normalize goes with --queries");
    if (!checkpoint) return cli_usage_error(parsed->command, "missing CKPT: a query to encode needs the index's checkpoint");
    int modality = -1;
    for (int m = 0; m < 4; ++m)
        if (options->query[m]) {
            if (modality >= 0) return cli_usage_error(parsed->command, "one query per run: give one of --text, --image, --audio, --video");
            modality = m;
        }
    if (modality < 0) return cli_usage_error(parsed->command, "missing the query: --text, --image, --audio or --video");

    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    uform_model_t model = NULL;
    uform_index_t index = NULL;
    uform_arena_t arena = NULL, hits_arena = NULL;
    uform_index_ann_t ann = NULL;
    float *query = NULL;
    char *ann_path = ann_choice_path(index_path);
    if (!ann_path) return cli_fail_errno(ENOMEM, "cannot start");
    int approximate = ann_choice_approximate(ann_path, options->exact);
    unsigned knobs = (cli_given(parsed, "--nprobe") ? ANN_KNOB_NPROBE : 0u) | (cli_given(parsed, "--ef") ? ANN_KNOB_EF : 0u) |
                     (cli_given(parsed, "--rerank") ? ANN_KNOB_RERANK : 0u);
    char why[1024];
    if (ann_choice_check_path(knobs, approximate, options->exact, ann_path, index_path, "--", why, sizeof why)) {
        free(ann_path);
        return cli_usage_error(parsed->command, "%s", why);
    }
    int status = cli_executor(options->threads, &executor);
    if (status == 0 && !(model = cli_load(checkpoint, executor, cli_compute(options->compute)))) status = 1;
    if (status == 0 && uform_index_open(index_path, model, &index, &outcome) != UFORM_OK) status = cli_fail(&outcome, index_path);
    if (status == 0 && approximate && uform_index_ann_open(index, ann_path, &ann, &outcome) != UFORM_OK)
        status = cli_fail(&outcome, NULL);
    if (status == 0 && ann) {
        uform_index_ann_description_t kind;
        uform_index_ann_describe(ann, &kind);
        if (ann_choice_check_kind(knobs, &kind, "--", why, sizeof why)) status = cli_usage_error(parsed->command, "%s", why);
    }
    uform_index_description_t description;
    uform_index_describe(index, &description);
    if (status == 0 && (uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK ||
                        uform_arena_for_executor(executor, &hits_arena, &outcome) != UFORM_OK))
        status = cli_fail(&outcome, NULL);
    if (status == 0 && !(query = malloc(description.dimensions * sizeof(float))))
        status = cli_fail_errno(ENOMEM, "cannot hold the query");
    if (status == 0)
        status = encode_query(model, executor, arena, (uform_modality_t)modality, options->query[modality], description.dimensions, query);
    if (status == 0) {
        const uform_index_hit_t *hits = NULL;
        size_t count = 0;
        if (ann) {
            uform_index_ann_search_t search = {0};
            search.ann = ann, search.executor = executor, search.arena = hits_arena;
            search.queries = query, search.queries_count = 1, search.queries_columns = description.dimensions;
            search.top = options->top, search.modalities = options->modalities;
            search.nprobe = options->nprobe, search.ef = options->ef;
            search.rerank = ann_choice_rerank(knobs, options->rerank);
            if (uform_index_ann_search(&search) != UFORM_OK) status = cli_fail(&search.outcome, NULL);
            hits = search.hits, count = search.hits_per_query;
        } else {
            uform_index_search_t search = {0};
            search.index = index, search.executor = executor, search.arena = hits_arena;
            search.queries = query, search.queries_count = 1, search.queries_columns = description.dimensions;
            search.top = options->top, search.modalities = options->modalities, search.candidates = options->candidates;
            if (uform_index_search(&search) != UFORM_OK) status = cli_fail(&search.outcome, NULL);
            hits = search.hits, count = search.hits_per_query;
        }
        for (size_t i = 0; status == 0 && i < count && hits[i].item != UINT64_MAX; ++i) {
            const uform_index_hit_t *hit = &hits[i];
            const char *path = NULL;
            size_t length = 0;
            uform_index_item(index, (size_t)hit->item, NULL, &path, &length);
            if (options->json) {
                printf("{\"rank\": %zu, \"item\": %llu, \"score\": %.9g, \"modality\": \"%s\", \"path\": ", i + 1,
                       (unsigned long long)hit->item, hit->score, cli_modality_name(hit->modality));
                cli_json_string(stdout, path, length);
                printf("}\n");
            } else {
                printf("%3zu  %8.5f  %-5s  %.*s\n", i + 1, hit->score, cli_modality_name(hit->modality), (int)length, path);
            }
        }
    }
    free(query);
    free(ann_path);
    uform_index_ann_free(ann);
    uform_arena_free(arena), uform_arena_free(hits_arena);
    uform_index_free(index);
    uform_model_free(model);
    uform_executor_free(executor);
    return status;
}

const cli_command_t cli_search = {
    .name = "search",
    .summary = "the items of an index closest to a text, image, video or recording",
    .usage = "INDEX CKPT (--text T | --image F | --audio F | --video F) [options]\n"
             "       uform search INDEX [CKPT] --queries Q.npy [--top K] [--json] [options]",
    .description = "Prints the items of INDEX closest to the query, best first: rank, score, modality and path.\n"
                   "When INDEX's approximate structure (X.index: X.faiss, from uform index --ann) lies beside it,\n"
                   "a single query goes through it (--exact scans every row instead); --queries batches are exact.\n",
    .statuses = "0 results printed; 1 failed (a missing file, an index built by another checkpoint:\n"
                "the reason is printed); 2 usage error.",
    .flags = flags,
    .options_size = sizeof(search_options_t),
    .defaults = defaults,
    .positional_min = 1, /* CKPT is checked in run: --queries may go without */
    .positional_max = 2,
    .run = run,
};
