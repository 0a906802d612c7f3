/*
 * uform search INDEX CKPT (--text T | --image F | --audio F | --video F) [--top K] [--json] ...
 *
 * Encodes one query with the checkpoint that built the index (another checkpoint is refused with
 * UFORM_CONFIG_MISMATCH), at the index's width, and prints the K best items of every modality the
 * index holds: exact search (uform_index_search), best first, ties by item number.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uform_tool.h"

static const char usage_text[] =
    "usage: uform search INDEX CKPT (--text T | --image F | --audio F | --video F) [options]\n"
    "\n"
    "Prints the items of INDEX closest to the query, best first: rank, score, modality and path.\n"
    "\n"
    "options:\n"
    "  --top K            how many items (default 10)\n"
    "  --modalities LIST  only items of these modalities (text,image,video,audio; default: all)\n"
    "  --candidates N     b1 indexes: items rescored exactly after the Hamming pass (default 4 K)\n"
    "  --json             one JSON object per result: rank, item, score, modality, path\n"
    "  --threads N        threads (default 0: the library's choice)\n"
    "  --bf16             BF16 compute for the query\n"
    "  --int8             I8 compute for the query (the trunk in int8; docs/int8.md)\n"
    "\n"
    "exit status: 0 results printed; 1 failed (a missing file, an index built by another checkpoint:\n"
    "the reason is printed); 2 usage error.\n";

static int usage_error(const char *why) {
    fprintf(stderr, "usage: uform search INDEX CKPT (--text T | --image F | --audio F | --video F) [options]\n"
                    "uform search: %s (see uform search --help)\n", why);
    return 2;
}

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "uform: cannot open '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    unsigned char *bytes = NULL;
    size_t used = 0, capacity = 0;
    for (;;) {
        if (used == capacity) {
            capacity = capacity ? capacity * 2 : 1 << 16;
            unsigned char *grown = realloc(bytes, capacity);
            if (!grown) break;
            bytes = grown;
        }
        size_t got = fread(bytes + used, 1, capacity - used, file);
        used += got;
        if (got == 0) break;
    }
    fclose(file);
    *size = used;
    return bytes;
}

/* Encodes the query into `query` (F32, `dims` columns); answers 0 or the exit status. */
static int encode_query(uform_model_t model, uform_executor_t executor, uform_arena_t arena, int modality,
                        const char *argument, size_t dims, float *query) {
    size_t size = 0;
    unsigned char *bytes = NULL;
    if (modality == UFORM_MODALITY_TEXT) size = strlen(argument);
    else if (!(bytes = read_file(argument, &size))) return 1;
    size_t offsets[2] = {0, size};
    uform_tape_t tape = {modality == UFORM_MODALITY_TEXT ? (const void *)argument : bytes, offsets, 1};
    uform_encode_config_t config = {UFORM_SCALAR_F32, {0}, NULL, dims};
    uform_text_encode_t text = {model, executor, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena, config};
    uform_image_encode_t image = {model, executor, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena, config};
    uform_video_encode_t video = {model, executor, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena, config};
    uform_audio_encode_t audio = {model, executor, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena, config};
    uform_status_t status;
    const uform_outcome_t *outcome;
    const uform_encoded_t *encoded;
    switch (modality) {
    case UFORM_MODALITY_TEXT: status = uform_text_encode(&text), outcome = &text.outcome, encoded = &text.encoded; break;
    case UFORM_MODALITY_IMAGE: status = uform_image_encode(&image), outcome = &image.outcome, encoded = &image.encoded; break;
    case UFORM_MODALITY_VIDEO: status = uform_video_encode(&video), outcome = &video.outcome, encoded = &video.encoded; break;
    default: status = uform_audio_encode(&audio), outcome = &audio.outcome, encoded = &audio.encoded; break;
    }
    free(bytes);
    if (status != UFORM_OK) return uform_tool_fail(outcome, modality == UFORM_MODALITY_TEXT ? NULL : argument);
    const void *row = NULL;
    uform_matrix_row(&encoded->embeddings, 0, &row);
    memcpy(query, row, dims * sizeof(float));
    return 0;
}

int uform_tool_search(int argc, char **argv) {
    const char *index_path = NULL, *checkpoint = NULL, *argument = NULL;
    int modality = -1, json = 0, used = 0;
    uform_compute_t compute = UFORM_COMPUTE_F32;
    size_t top = 10, threads = 0, candidates = 0;
    unsigned modalities = 0;
    for (int i = 2; i < argc; ++i) {
        const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        int kind = strcmp(flag, "--text") == 0 ? 0 : strcmp(flag, "--image") == 0 ? 1 : strcmp(flag, "--video") == 0 ? 2
                   : strcmp(flag, "--audio") == 0 ? 3 : -1;
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else if (kind >= 0 && value) {
            if (modality >= 0) return usage_error("one query per run: give one of --text, --image, --audio, --video");
            modality = kind, argument = argv[++i];
        } else if (strcmp(flag, "--top") == 0 && value) {
            if (uform_tool_parse_size(argv[++i], &top) || !top) return usage_error("--top takes a positive integer");
        } else if (strcmp(flag, "--threads") == 0 && value) {
            if (uform_tool_parse_size(argv[++i], &threads)) return usage_error("--threads takes an integer");
        } else if (strcmp(flag, "--candidates") == 0 && value) {
            if (uform_tool_parse_size(argv[++i], &candidates)) return usage_error("--candidates takes an integer");
        } else if (strcmp(flag, "--modalities") == 0 && value) {
            if (uform_tool_parse_modalities(argv[++i], &modalities)) return usage_error("--modalities takes a list of text, image, video, audio");
        } else if (strcmp(flag, "--json") == 0) json = 1;
        else if ((used = uform_tool_compute_flag(flag, &compute)) != 0) {
            if (used < 0) return 2;
        } else if (flag[0] == '-' && flag[1] == '-') {
            char why[256];
            snprintf(why, sizeof why, "unknown flag or missing value: %s", flag);
            return usage_error(why);
        } else if (!index_path) index_path = flag;
        else if (!checkpoint) checkpoint = flag;
        else return usage_error("too many arguments");
    }
    if (!index_path || !checkpoint) return usage_error("missing INDEX or CKPT");
    if (modality < 0) return usage_error("missing the query: --text, --image, --audio or --video");

    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    uform_model_t model = NULL;
    uform_index_t index = NULL;
    uform_arena_t arena = NULL, hits_arena = NULL;
    float *query = NULL;
    int status = 0;
    if (uform_executor_for_ram(NULL, threads, 0, &executor, &outcome) != UFORM_OK) status = uform_tool_fail(&outcome, NULL);
    if (status == 0 && !(model = uform_tool_load(checkpoint, executor, compute))) status = 1;
    if (status == 0 && uform_index_open(index_path, model, &index, &outcome) != UFORM_OK)
        status = uform_tool_fail(&outcome, index_path);
    uform_index_description_t description;
    uform_index_describe(index, &description);
    if (status == 0 && (uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK ||
                        uform_arena_for_executor(executor, &hits_arena, &outcome) != UFORM_OK))
        status = uform_tool_fail(&outcome, NULL);
    if (status == 0 && !(query = malloc(description.dimensions * sizeof(float)))) status = (fprintf(stderr, "uform: out of memory\n"), 1);
    if (status == 0) status = encode_query(model, executor, arena, modality, argument, description.dimensions, query);
    if (status == 0) {
        uform_index_search_t search = {0};
        search.index = index, search.executor = executor, search.arena = hits_arena;
        search.queries = query, search.queries_count = 1, search.queries_columns = description.dimensions;
        search.top = top, search.modalities = modalities, search.candidates = candidates;
        if (uform_index_search(&search) != UFORM_OK) status = uform_tool_fail(&search.outcome, NULL);
        for (size_t i = 0; status == 0 && i < search.hits_per_query; ++i) {
            const uform_index_hit_t *hit = &search.hits[i];
            const char *path = NULL;
            size_t length = 0;
            uform_index_item(index, (size_t)hit->item, NULL, &path, &length);
            if (json) {
                printf("{\"rank\": %zu, \"item\": %llu, \"score\": %.7g, \"modality\": \"%s\", \"path\": ", i + 1,
                       (unsigned long long)hit->item, hit->score, uform_tool_modality_name(hit->modality));
                uform_tool_json_string(stdout, path, length);
                printf("}\n");
            } else {
                printf("%3zu  %8.5f  %-5s  %.*s\n", i + 1, hit->score, uform_tool_modality_name(hit->modality), (int)length, path);
            }
        }
    }
    free(query);
    uform_arena_free(arena), uform_arena_free(hits_arena);
    uform_index_free(index);
    uform_model_free(model);
    uform_executor_free(executor);
    return status;
}
