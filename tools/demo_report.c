/*
 * uform_demo_report: the terminal tables and the HTML report of `make demo` (scripts/demo.sh).
 *
 *   uform_demo_report recall DIR         the held-out recall table, from DIR/eval.jsonl
 *   uform_demo_report search DIR N       the results of the N-th search in DIR/searches.tsv, with captions
 *   uform_demo_report html DIR           DIR/report.html (written atomically); prints its path
 *
 * demo_report.h lists what DIR holds. Exit status: 0 done; 1 failed (the reason is printed); 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo_report.h"
#include "uform/uform.h"

static const char *const media_labels[4] = {"", "image", "video", "speech"};
static const double targets[4] = {0, 0.95, 0.80, 0.80};

static int print_recall(const demo_run_t *run) {
    const demo_eval_t *any = NULL;
    for (int m = 1; m < 4 && !any; ++m) any = demo_run_final(run, m, 0);
    if (!any) return fprintf(stderr, "uform_demo_report: no held-out evaluation in %s/eval.jsonl\n", run->dir), 1;
    printf("held-out recall after %.0f steps, scored by caption (a hit is any item with the query's caption)\n", any->step);
    printf("          pairs   text->media      media->text     target\n");
    printf("                  R@1    R@5       R@1    R@5      text->media R@1\n");
    int missed = 0;
    for (int m = 1; m < 4; ++m) {
        const demo_eval_t *eval = demo_run_final(run, m, 0);
        if (!eval) continue;
        int met = eval->text_r1 >= targets[m];
        missed += !met;
        printf("  %-7s %5zu   %.3f  %.3f     %.3f  %.3f    >= %.2f %s\n", media_labels[m], eval->pairs, eval->text_r1,
               eval->text_r5, eval->media_r1, eval->media_r5, targets[m], met ? "met" : "MISSED");
    }
    int novel = 0;
    for (int m = 1; m < 4; ++m) novel |= demo_run_final(run, m, 1) != NULL;
    if (novel) {
        printf("compositional (colour-shape pairs never seen in training; no target)\n");
        for (int m = 1; m < 4; ++m) {
            const demo_eval_t *eval = demo_run_final(run, m, 1);
            if (eval)
                printf("  %-7s %5zu   %.3f  %.3f     %.3f  %.3f\n", media_labels[m], eval->pairs, eval->text_r1, eval->text_r5,
                       eval->media_r1, eval->media_r5);
        }
    }
    if (missed) printf("%d of the targets missed\n", missed);
    return 0;
}

static int print_search(const demo_run_t *run, size_t index) {
    if (index >= run->search_count) return fprintf(stderr, "uform_demo_report: no search %zu in %s/searches.tsv\n", index, run->dir), 1;
    const demo_search_t *search = &run->searches[index];
    const demo_item_t *query = demo_run_find(run, search->query);
    if (query) printf("search by %s: %s (\"%s\")\n", search->kind, search->query, query->text);
    else printf("search by %s: \"%s\"\n", search->kind, search->query);
    for (int m = 1; m < 4; ++m)
        for (size_t h = 0; h < search->count; ++h) {
            const demo_hit_t *hit = &search->hits[h];
            if (hit->modality != m) continue;
            const demo_item_t *item = demo_run_find(run, hit->path);
            printf("  %-6s %zu  %.3f  %s\n", media_labels[m], hit->rank, hit->score, item ? item->text : hit->path);
        }
    return 0;
}

/* One sentence about the checkpoint, through the library's own describe. */
static void describe_model(const char *dir, char *summary, size_t capacity) {
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    if (uform_model_load_ram(NULL, path, NULL, &model, &outcome) != UFORM_OK) {
        snprintf(summary, capacity, "(the checkpoint %s could not be read)", path);
        return;
    }
    uform_model_describe_t request = {model};
    uform_model_describe(&request);
    const uform_model_description_t *d = &request.description;
    snprintf(summary, capacity,
             "A %zu-parameter model (hidden %zu, %zu blocks, %zu heads, %zu-wide embeddings; pictures %zu px in "
             "%zu-px patches, clips of %zu frames, %zu s of audio) was trained from random weights on two CPU threads.",
             (size_t)d->parameters, d->hidden, d->depth, d->heads, d->embedding, d->image_size, d->image_patch,
             d->video_frames, d->audio_seconds);
    uform_model_free(model);
}

static int write_html(const demo_run_t *run) {
    char path[4096], temporary[4200], summary[4800];
    snprintf(path, sizeof path, "%s/report.html", run->dir);
    snprintf(temporary, sizeof temporary, "%s.part", path);
    describe_model(run->dir, summary, sizeof summary);
    FILE *out = fopen(temporary, "w");
    if (!out) return fprintf(stderr, "uform_demo_report: cannot write '%s'\n", temporary), 1;
    int status = demo_html_write(out, run, summary);
    if (fclose(out) != 0) status = -1;
    if (status == 0 && rename(temporary, path) != 0) status = -1;
    if (status != 0) {
        unlink(temporary);
        fprintf(stderr, "uform_demo_report: cannot write '%s'\n", path);
        return 1;
    }
    printf("report: %s\n", path);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[1], "recall") && strcmp(argv[1], "search") && strcmp(argv[1], "html")) ||
        (strcmp(argv[1], "search") == 0 && argc < 4)) {
        fprintf(stderr, "usage: uform_demo_report (recall DIR | search DIR N | html DIR)\n");
        return 2;
    }
    demo_run_t run;
    if (demo_run_read(argv[2], &run)) return 1;
    int status = strcmp(argv[1], "recall") == 0   ? print_recall(&run)
                 : strcmp(argv[1], "search") == 0 ? print_search(&run, (size_t)strtoul(argv[3], NULL, 10))
                                                  : write_html(&run);
    demo_run_free(&run);
    return status;
}
