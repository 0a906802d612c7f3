#include "train_eval.h"

#include "item_list.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EVAL_CHUNK 32

/* Encodes the items of `tape` (text or media files of `modality`) into unit rows [count, E]. */
static int encode_all(uform_model_t model, uform_executor_t executor, uform_arena_t arena, int modality,
                      const item_list_t *tape, float *out, size_t E) {
    for (size_t first = 0; first < tape->count; first += EVAL_CHUNK) {
        size_t count = tape->count - first < EVAL_CHUNK ? tape->count - first : EVAL_CHUNK;
        uform_tape_t items = {tape->data, tape->offsets + first, count};
        uform_outcome_t *outcome;
        uform_matrix_t *embeddings;
        uform_status_t status;
        uform_text_encode_t text = {0};
        uform_image_encode_t image = {0};
        uform_video_encode_t video = {0};
        uform_audio_encode_t audio = {0};
        switch (modality) {
        case UFORM_MODALITY_TEXT:
            text.model = model, text.executor = executor, text.texts = items, text.arena = arena;
            status = uform_text_encode(&text), outcome = &text.outcome, embeddings = &text.encoded.embeddings;
            break;
        case UFORM_MODALITY_IMAGE:
            image.model = model, image.executor = executor, image.images = items, image.arena = arena;
            status = uform_image_encode(&image), outcome = &image.outcome, embeddings = &image.encoded.embeddings;
            break;
        case UFORM_MODALITY_VIDEO:
            video.model = model, video.executor = executor, video.videos = items, video.arena = arena;
            status = uform_video_encode(&video), outcome = &video.outcome, embeddings = &video.encoded.embeddings;
            break;
        default:
            audio.model = model, audio.executor = executor, audio.recordings = items, audio.arena = arena;
            status = uform_audio_encode(&audio), outcome = &audio.outcome, embeddings = &audio.encoded.embeddings;
            break;
        }
        if (status != UFORM_OK) {
            char line[640];
            uform_outcome_format(outcome, line, sizeof line);
            fprintf(stderr, "uform: --eval: %s\n", line);
            return -1;
        }
        for (size_t r = 0; r < count; ++r) {
            const void *row = NULL;
            uform_matrix_row(embeddings, r, &row);
            memcpy(out + (first + r) * E, row, E * sizeof(float));
        }
    }
    return 0;
}

static int same_caption(const manifest_line_t *a, const manifest_line_t *b) {
    return a->text_length == b->text_length && memcmp(a->text, b->text, a->text_length) == 0;
}

/* Recall@k of queries [n, E] against candidates [m, E]: a hit is a top-k candidate whose line's
 * caption equals the query's. Ties keep the lower index first. */
static void recall(const float *queries, const manifest_line_t *const *query_lines, size_t n, const float *candidates,
                   const manifest_line_t *const *candidate_lines, size_t m, size_t E, double *r1, double *r5) {
    size_t hits1 = 0, hits5 = 0;
    float *scores = malloc((m + 1) * sizeof *scores);
    for (size_t q = 0; scores && q < n; ++q) {
        for (size_t c = 0; c < m; ++c) {
            double dot = 0;
            for (size_t k = 0; k < E; ++k) dot += (double)queries[q * E + k] * candidates[c * E + k];
            scores[c] = (float)dot;
        }
        /* The rank of the best-scoring hit: how many candidates score above it. */
        size_t best_rank = SIZE_MAX;
        for (size_t c = 0; c < m; ++c) {
            if (!same_caption(query_lines[q], candidate_lines[c])) continue;
            size_t rank = 0;
            for (size_t o = 0; o < m; ++o) rank += scores[o] > scores[c] || (scores[o] == scores[c] && o < c);
            if (rank < best_rank) best_rank = rank;
        }
        hits1 += best_rank < 1, hits5 += best_rank < 5;
    }
    free(scores);
    *r1 = n ? (double)hits1 / (double)n : 0, *r5 = n ? (double)hits5 / (double)n : 0;
}

int train_evaluate(uform_trainer_t trainer, uform_executor_t executor, const manifest_t *heldout, int bf16,
                   uint64_t step, int skip_bad, const char *label) {
    (void)skip_bad;
    uform_outcome_t outcome = {0};
    uform_ram_options_t options = {0};
    options.compute = bf16 ? UFORM_COMPUTE_BF16 : UFORM_COMPUTE_F32;
    uform_model_t model = NULL;
    if (uform_trainer_snapshot(trainer, &options, &model, &outcome) != UFORM_OK) {
        char line[640];
        uform_outcome_format(&outcome, line, sizeof line);
        fprintf(stderr, "uform: --eval: %s\n", line);
        return 1;
    }
    uform_model_describe_t describe = {model};
    uform_model_describe(&describe);
    size_t E = describe.description.embedding;
    uform_arena_t arena = NULL;
    uform_arena_for_executor(executor, &arena, NULL);
    static const char *const names[4] = {"text", "image", "video", "audio"};
    int status = 0;
    for (int m = 1; m < 4 && status == 0; ++m) {
        size_t n = 0;
        for (size_t i = 0; i < heldout->count; ++i) n += heldout->lines[i].modality == m;
        if (n == 0) continue;
        if (!(describe.description.modalities & (1u << m))) continue;
        item_list_t texts = {0}, media = {0};
        const manifest_line_t **lines = malloc(n * sizeof *lines);
        float *text_rows = malloc(n * E * sizeof(float)), *media_rows = malloc(n * E * sizeof(float));
        size_t k = 0;
        for (size_t i = 0; lines && i < heldout->count && status == 0; ++i) {
            const manifest_line_t *line = &heldout->lines[i];
            if (line->modality != m) continue;
            lines[k++] = line;
            if (item_list_add(&texts, line->text, line->text_length) || item_list_add_file(&media, line->path)) {
                fprintf(stderr, "uform: --eval: line %zu of %s\n", line->number, heldout->path);
                status = 1;
            }
        }
        if (status == 0 && (!lines || !text_rows || !media_rows)) {
            fprintf(stderr, "uform: --eval: out of memory\n");
            status = 1;
        }
        if (status == 0 && (encode_all(model, executor, arena, UFORM_MODALITY_TEXT, &texts, text_rows, E) ||
                            encode_all(model, executor, arena, m, &media, media_rows, E)))
            status = 1;
        if (status == 0) {
            double t1, t5, m1, m5;
            recall(text_rows, lines, n, media_rows, lines, n, E, &t1, &t5);
            recall(media_rows, lines, n, text_rows, lines, n, E, &m1, &m5);
            printf("eval step %llu  %-5s %4zu pairs  text->%s R@1 %.3f R@5 %.3f | %s->text R@1 %.3f R@5 %.3f%s%s%s\n",
                   (unsigned long long)step, names[m], n, names[m], t1, t5, names[m], m1, m5, label ? "  (" : "",
                   label ? label : "", label ? ")" : "");
            fflush(stdout);
        }
        item_list_free(&texts), item_list_free(&media);
        free(lines), free(text_rows), free(media_rows);
    }
    uform_arena_free(arena);
    uform_model_free(model);
    return status;
}
