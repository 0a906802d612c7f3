/*
 * The report of `make demo` (scripts/demo.sh): what the run wrote into its folder, read back
 * (demo_inputs.c), drawn as inline SVG charts (demo_svg.c) and written as one self-contained HTML
 * page (demo_html.c); tools/demo_report.c is the program. A project tool, never part of libuform.
 *
 * The folder DIR holds:
 *   train.csv             `uform train --log`: step,seconds,loss,contrastive,choice,learning_rate,grad_norm
 *   eval.jsonl            `uform train --eval ... --eval-log`: one JSON object per evaluation, set and modality
 *   data/                 `uform synth`: train.jsonl, heldout.jsonl, novel.jsonl and the media
 *   model.safetensors     the trained checkpoint
 *   times.tsv             stage \t wall seconds \t CPU seconds, one line per stage of the demo
 *   searches.tsv          kind \t query \t results file (`uform search --json` lines), when searched
 */
#ifndef UFORM_TOOLS_DEMO_REPORT_H
#define UFORM_TOOLS_DEMO_REPORT_H

#include <stddef.h>
#include <stdio.h>

/* ---- inputs (demo_inputs.c) ---- */

typedef struct demo_log_t {
    size_t count;
    double *steps, *seconds, *loss, *learning_rate; /* [count] each */
} demo_log_t;

/* One evaluation of one modality on one held-out set. */
typedef struct demo_eval_t {
    double step;
    int modality;              /* 1 image, 2 video, 3 audio */
    int novel;                 /* 0 heldout.jsonl, 1 novel.jsonl */
    size_t pairs;
    double text_r1, text_r5;   /* text -> media */
    double media_r1, media_r5; /* media -> text */
} demo_eval_t;

typedef struct demo_evals_t {
    size_t count;
    demo_eval_t *items;
} demo_evals_t;

/* A manifest line of the generated data: its caption, media path (relative to data/) and kind. */
typedef struct demo_item_t {
    char *text, *path;
    int modality;
} demo_item_t;

typedef struct demo_items_t {
    size_t count;
    demo_item_t *items;
} demo_items_t;

typedef struct demo_hit_t {
    size_t rank;
    double score;
    int modality;
    char *path;
} demo_hit_t;

typedef struct demo_search_t {
    char kind[16];     /* text, image, video or audio: how the query was given */
    char *query;       /* the text, or the query file's path */
    size_t count;
    demo_hit_t *hits;
} demo_search_t;

typedef struct demo_stage_t {
    char name[32];
    double wall, cpu;
} demo_stage_t;

typedef struct demo_run_t {
    const char *dir;
    demo_log_t log;
    demo_evals_t evals;
    demo_items_t items; /* every line of the three manifests */
    demo_search_t searches[8];
    size_t search_count;
    demo_stage_t stages[16];
    size_t stage_count;
    int searched;       /* searches.tsv exists */
} demo_run_t;

/* Reads everything DIR holds; a missing train.csv or eval.jsonl is an error (answers -1 after printing
 * the reason), missing searches or times are allowed. */
int demo_run_read(const char *dir, demo_run_t *run);
void demo_run_free(demo_run_t *run);

/* The caption of a media file, by its path as the index or a manifest names it (matched on the
 * path below data/), or NULL. */
const demo_item_t *demo_run_find(const demo_run_t *run, const char *path);

/* The last evaluation of `modality` on the held-out (novel 0) or compositional (1) set, or NULL. */
const demo_eval_t *demo_run_final(const demo_run_t *run, int modality, int novel);

extern const char *const demo_modality_names[4]; /* text image video audio */

/* ---- charts (demo_svg.c) ---- */

typedef struct demo_series_t {
    const char *name;
    const char *colour;  /* CSS colour */
    int dashed;
    size_t count;
    const double *x, *y;
} demo_series_t;

/* An SVG line chart of `count` series, `width` × `height` user units, with axes, ticks, labels and
 * a legend; each series is one <polyline> whose "points" hold exactly its `count` points (in order),
 * and carries data-series="name". `y_max` 0 fits the data. */
void demo_svg_chart(FILE *out, const char *title, const char *x_label, const char *y_label, const demo_series_t *series,
                    size_t count, double width, double height, double y_min, double y_max);

/* ---- the page (demo_html.c) ---- */

/* Writes the report page to `out`. Answers 0, or -1 when a media file could not be read. */
int demo_html_write(FILE *out, const demo_run_t *run, const char *model_summary);

/* Text with &, <, > and " escaped. */
void demo_html_escape(FILE *out, const char *text);

#endif
