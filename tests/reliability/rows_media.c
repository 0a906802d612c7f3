/*
 * The media rows of the sweep that go around the encode verbs: probing bytes, preparing a batch of
 * files ahead of an encode (a good JPEG, a good PNG and a broken file, whose failure is the item's
 * and not the call's), and encoding what was prepared into a second arena.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rows.h"

/* Three files on one tape: baseline.jpg, rgba.png and the JPEG cut to its first 100 bytes. */
static int prepare_tape(sweep_fixture_t *fixture, uform_tape_t *tape, size_t offsets[4], sweep_answer_t *answer) {
    static unsigned char *joined;
    static size_t sizes[3];
    if (!joined) {
        const sweep_bytes_t *jpeg = sweep_media(fixture, "baseline.jpg"), *png = sweep_media(fixture, "rgba.png");
        if (!jpeg || !png || jpeg->size < 100) {
            sweep_answer_status(answer, UFORM_IO, NULL);
            snprintf(answer->message, sizeof answer->message, "fixtures baseline.jpg or rgba.png missing in %s", fixture->fixtures);
            return 0;
        }
        sizes[0] = jpeg->size, sizes[1] = png->size, sizes[2] = 100;
        joined = malloc(sizes[0] + sizes[1] + sizes[2]); /* made in the unarmed first run, kept */
        if (!joined) return 0;
        memcpy(joined, jpeg->data, sizes[0]);
        memcpy(joined + sizes[0], png->data, sizes[1]);
        memcpy(joined + sizes[0] + sizes[1], jpeg->data, sizes[2]);
    }
    offsets[0] = 0;
    for (int i = 0; i < 3; ++i) offsets[i + 1] = offsets[i] + sizes[i];
    *tape = (uform_tape_t){joined, offsets, 3};
    return 1;
}

/* Probing allocates nothing by design; the row holds it to that under failing allocations. */
void sweep_run_media_probe(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    static const char *const names[] = {"baseline.jpg", "rgba.png", "lossy.webp", "pcm16.wav"};
    uint64_t digest = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        const sweep_bytes_t *bytes = sweep_media(fixture, names[i]);
        if (!bytes) continue;
        uform_modality_t modality;
        uform_outcome_t outcome = {0};
        uform_status_t status = uform_media_probe(bytes->data, bytes->size, &modality, &outcome);
        sweep_answer_status(answer, status, &outcome);
        if (status != UFORM_OK) return;
        digest = sweep_digest(digest, &modality, sizeof modality);
    }
    answer->digest = digest;
}

/* media_prepare into the fixture's arena, then, with `encode`, prepared_encode into a second one. */
static void prepare(sweep_fixture_t *fixture, int encode, sweep_answer_t *answer) {
    size_t offsets[4];
    uform_tape_t files;
    if (!prepare_tape(fixture, &files, offsets, answer)) return;
    uform_media_prepare_t request;
    memset(&request, 0, sizeof request);
    request.model = fixture->model, request.modality = UFORM_MODALITY_IMAGE;
    request.files = files, request.arena = fixture->arena;
    uform_status_t status = uform_media_prepare(&request);
    sweep_answer_status(answer, status, &request.outcome);
    if (status != UFORM_OK) return;
    const uform_prepared_t *prepared = &request.prepared;
    if (prepared->count != 3 || prepared->failed != 1 || prepared->item_outcomes[2].status == UFORM_OK ||
        prepared->item_outcomes[0].status != UFORM_OK) {
        /* A good file that failed for want of memory is the call's failure to report as such. */
        for (size_t i = 0; i < 2 && i < prepared->count; ++i)
            if (prepared->item_outcomes[i].status != UFORM_OK) {
                sweep_answer_status(answer, prepared->item_outcomes[i].status, &prepared->item_outcomes[i]);
                return;
            }
        sweep_answer_status(answer, UFORM_INTERNAL, NULL);
        snprintf(answer->message, sizeof answer->message, "prepared %zu items, %zu failed (expected 3, 1)", prepared->count,
                 prepared->failed);
        return;
    }
    /* TurboJPEG leaks its memory manager when tjInitDecompress runs out (sweep.c knows the message):
     * when that is why the broken file failed, say so on the answer. */
    const char *note = prepared->item_outcomes[2].status == UFORM_OUT_OF_MEMORY ? prepared->item_outcomes[2].message : "";
    snprintf(answer->message, sizeof answer->message, "%s", note);
    /* The good items' rows only: a failed item's rows are undefined. */
    uform_matrix_t good = prepared->rows;
    good.rows = 2 * prepared->rows_per_item;
    uint64_t digest = sweep_digest_matrix(0, &good);
    if (!encode) {
        answer->digest = digest;
        return;
    }
    static uform_arena_t second; /* prepared_encode needs another arena than the prepared one's */
    if (!second && uform_arena_for_host(&second, NULL) != UFORM_OK) {
        sweep_answer_status(answer, UFORM_OUT_OF_MEMORY, NULL);
        snprintf(answer->message, sizeof answer->message, "cannot allocate the second arena");
        return;
    }
    uform_prepared_encode_t encoded;
    memset(&encoded, 0, sizeof encoded);
    encoded.model = fixture->model, encoded.prepared = prepared, encoded.arena = second;
    encoded.outputs = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS;
    status = uform_prepared_encode(&encoded);
    sweep_answer_status(answer, status, &encoded.outcome);
    if (status != UFORM_OK) return;
    snprintf(answer->message, sizeof answer->message, "%s", note);
    digest = sweep_digest_matrix(digest, &encoded.encoded.embeddings);
    answer->digest = sweep_digest_rows(digest, &encoded.encoded.token_vectors);
}

void sweep_run_media_prepare(sweep_fixture_t *fixture, sweep_answer_t *answer) { prepare(fixture, 0, answer); }

void sweep_run_prepared_encode(sweep_fixture_t *fixture, sweep_answer_t *answer) { prepare(fixture, 1, answer); }
