/*
 * The demo's report page (demo_report.h): one self-contained HTML file, well-formed as XML too
 * (every element closed, only the XML entities), with its charts as inline SVG and every picture,
 * clip and recording inline as a data: URI, so it can be mailed or archived as one file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_report.h"

void demo_html_escape(FILE *out, const char *text) {
    for (; text && *text; ++text) {
        switch (*text) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*text, out);
        }
    }
}

static const char *mime_type(const char *path) {
    const char *dot = strrchr(path, '.');
    static const char *const types[][2] = {{".png", "image/png"},   {".jpg", "image/jpeg"}, {".jpeg", "image/jpeg"},
                                           {".webp", "image/webp"}, {".mp4", "video/mp4"},  {".webm", "video/webm"},
                                           {".wav", "audio/wav"},   {".flac", "audio/flac"}, {".ogg", "audio/ogg"}};
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; ++i)
        if (strcmp(dot, types[i][0]) == 0) return types[i][1];
    return "application/octet-stream";
}

/* Writes data:TYPE;base64,... of a file; answers -1 when it cannot be read. */
static int data_uri(FILE *out, const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "uform_demo_report: cannot read '%s'\n", path);
        return -1;
    }
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fprintf(out, "data:%s;base64,", mime_type(path));
    unsigned char in[3];
    size_t got;
    while ((got = fread(in, 1, 3, file)) > 0) {
        unsigned value = (unsigned)in[0] << 16 | (got > 1 ? (unsigned)in[1] << 8 : 0) | (got > 2 ? in[2] : 0);
        char quad[4] = {alphabet[value >> 18 & 63], alphabet[value >> 12 & 63], got > 1 ? alphabet[value >> 6 & 63] : '=',
                        got > 2 ? alphabet[value & 63] : '='};
        fwrite(quad, 1, 4, out);
    }
    fclose(file);
    return 0;
}

/* A media element for a file: a picture, a looping clip or an audio player. */
static int media_element(FILE *out, const char *path, int modality, int size) {
    int status;
    if (modality == 1) {
        fprintf(out, "<img width=\"%d\" height=\"%d\" alt=\"\" src=\"", size, size);
        status = data_uri(out, path);
        fprintf(out, "\"/>");
    } else if (modality == 2) {
        fprintf(out, "<video width=\"%d\" height=\"%d\" autoplay=\"autoplay\" loop=\"loop\" muted=\"muted\" playsinline=\"playsinline\" src=\"",
                size, size);
        status = data_uri(out, path);
        fprintf(out, "\"></video>");
    } else {
        fprintf(out, "<audio controls=\"controls\" preload=\"auto\" src=\"");
        status = data_uri(out, path);
        fprintf(out, "\"></audio>");
    }
    return status;
}

/* `caption` with the words it shares with `query` in bold (articles and prepositions aside). */
static void caption_against(FILE *out, const char *caption, const char *query) {
    static const char *const quiet[] = {"a", "at", "the", "on", "in", "moving"};
    const char *at = caption;
    while (*at) {
        size_t length = strcspn(at, " ");
        int shared = 0, ordinary = 0;
        for (size_t q = 0; q < sizeof quiet / sizeof quiet[0]; ++q)
            ordinary |= strlen(quiet[q]) == length && strncmp(quiet[q], at, length) == 0;
        for (const char *word = query; !ordinary && query && *word;) {
            size_t other = strcspn(word, " ");
            shared |= other == length && strncmp(word, at, length) == 0;
            word += other + (word[other] == ' ');
        }
        char piece[64];
        snprintf(piece, sizeof piece, "%.*s", (int)(length < 63 ? length : 63), at);
        if (shared) fputs("<b>", out);
        demo_html_escape(out, piece);
        if (shared) fputs("</b>", out);
        at += length;
        if (*at == ' ') fputc(' ', out), ++at;
    }
}

static const char *const style =
    "body{font:15px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
    "h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}table{border-collapse:collapse}"
    "td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:right}td:first-child,th:first-child{text-align:left}"
    ".miss{color:#b00}.met{color:#070}.note{color:#666}svg{max-width:100%;height:auto;font-family:system-ui,sans-serif}"
    ".hits{display:flex;gap:10px;flex-wrap:wrap;margin:.3em 0 1em}"
    ".hit{width:150px;font-size:12px}.hit img,.hit video{image-rendering:pixelated;border:1px solid #ccc;display:block}"
    ".hit audio{width:150px}.query{background:#f6f6f6;padding:.6em;margin:.5em 0}.score{color:#666}";

static void recall_table(FILE *out, const demo_run_t *run) {
    static const char *const labels[4] = {"", "image", "video", "speech"};
    static const double targets[4] = {0, 0.95, 0.80, 0.80};
    fprintf(out, "<table>\n<tr><th>media</th><th>held-out pairs</th><th>text→media R@1</th><th>R@5</th>"
                 "<th>media→text R@1</th><th>R@5</th><th>target text→media R@1</th>"
                 "<th>compositional text→media R@1</th><th>R@5</th></tr>\n");
    for (int m = 1; m < 4; ++m) {
        const demo_eval_t *held = demo_run_final(run, m, 0), *novel = demo_run_final(run, m, 1);
        if (!held) continue;
        fprintf(out, "<tr><td>%s</td><td>%zu</td><td class=\"%s\">%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td>"
                     "<td>≥ %.2f</td>",
                labels[m], held->pairs, held->text_r1 >= targets[m] ? "met" : "miss", held->text_r1, held->text_r5,
                held->media_r1, held->media_r5, targets[m]);
        if (novel) fprintf(out, "<td>%.3f</td><td>%.3f</td></tr>\n", novel->text_r1, novel->text_r5);
        else fprintf(out, "<td>–</td><td>–</td></tr>\n");
    }
    fprintf(out, "</table>\n<p class=\"note\">Scored by caption: a hit is any item whose caption equals the query's "
                 "(attributes repeat, so several items can be right). Compositional: colour–shape pairs no "
                 "training item shows; no target, it shows how far the model generalises.</p>\n");
}

static void charts(FILE *out, const demo_run_t *run) {
    /* Loss: every logged step, and its mean over 50 steps. */
    const demo_log_t *log = &run->log;
    double *smooth = malloc((log->count + 1) * sizeof *smooth);
    double sum = 0;
    for (size_t i = 0; smooth && i < log->count; ++i) {
        sum += log->loss[i] - (i >= 50 ? log->loss[i - 50] : 0);
        smooth[i] = sum / (double)(i + 1 < 50 ? i + 1 : 50);
    }
    demo_series_t loss[2] = {{"loss per step", "#9ab", 0, log->count, log->steps, log->loss},
                             {"mean of 50 steps", "#124", 0, smooth ? log->count : 0, log->steps, smooth}};
    demo_svg_chart(out, "Training loss (contrastive, Matryoshka mean)", "step", "loss", loss, 2, 720, 300, 0, 0);
    free(smooth);
    /* Recall@1 text→media per modality and set. */
    static const char *const colours[4] = {"", "#c33", "#36c", "#393"};
    static const char *const names[4][2] = {{"", ""}, {"image", "image, compositional"}, {"video", "video, compositional"},
                                            {"speech", "speech, compositional"}};
    demo_series_t series[6];
    double *buffers[6] = {0};
    size_t count = 0;
    for (int m = 1; m < 4; ++m)
        for (int novel = 0; novel < 2; ++novel) {
            size_t n = 0;
            for (size_t i = 0; i < run->evals.count; ++i) n += run->evals.items[i].modality == m && run->evals.items[i].novel == novel;
            if (n == 0) continue;
            double *xy = malloc(2 * n * sizeof *xy);
            if (!xy) continue;
            size_t k = 0;
            for (size_t i = 0; i < run->evals.count; ++i) {
                const demo_eval_t *eval = &run->evals.items[i];
                if (eval->modality != m || eval->novel != novel) continue;
                xy[k] = eval->step, xy[n + k] = eval->text_r1, ++k;
            }
            buffers[count] = xy;
            series[count++] = (demo_series_t){names[m][novel], colours[m], novel, n, xy, xy + n};
        }
    demo_svg_chart(out, "Recall@1 text→media on held-out renders (dashed: compositional)", "step", "R@1", series, count,
                   720, 300, 0, 1);
    for (size_t i = 0; i < count; ++i) free(buffers[i]);
}

/* Where a result's or query's file is: under DIR/data/ when a manifest names it, else as given. */
static const char *resolve(const demo_run_t *run, const char *path, char *buffer, size_t capacity) {
    const demo_item_t *item = demo_run_find(run, path);
    if (!item) return path;
    snprintf(buffer, capacity, "%s/data/%s", run->dir, item->path);
    return buffer;
}

static int searches(FILE *out, const demo_run_t *run) {
    if (!run->searched) {
        fprintf(stderr, "uform_demo_report: %s/searches.tsv is missing: the demo's index-and-search stage did not run\n", run->dir);
        return -1;
    }
    int status = 0;
    char path[4096];
    for (size_t s = 0; s < run->search_count; ++s) {
        const demo_search_t *search = &run->searches[s];
        int kind = strcmp(search->kind, "text") == 0 ? 0 : strcmp(search->kind, "image") == 0 ? 1 : strcmp(search->kind, "video") == 0 ? 2 : 3;
        const char *query_caption = search->query;
        fprintf(out, "<section><h3>Search by %s</h3>\n<div class=\"query\">", kind == 3 ? "speech" : search->kind);
        if (kind == 0) {
            fprintf(out, "query: “");
            demo_html_escape(out, search->query);
            fprintf(out, "”");
        } else {
            const demo_item_t *item = demo_run_find(run, search->query);
            query_caption = item ? item->text : NULL;
            status |= media_element(out, resolve(run, search->query, path, sizeof path), kind, 96);
            fprintf(out, "<br/>query: ");
            demo_html_escape(out, search->query);
            if (item) {
                fprintf(out, " (“");
                demo_html_escape(out, item->text);
                fprintf(out, "”, not in the index)");
            }
        }
        fprintf(out, "</div>\n");
        for (int m = 1; m < 4; ++m) {
            size_t shown = 0;
            for (size_t h = 0; h < search->count; ++h) shown += search->hits[h].modality == m;
            if (!shown) continue;
            fprintf(out, "<div>top %s results</div><div class=\"hits\">\n", m == 3 ? "speech" : demo_modality_names[m]);
            for (size_t h = 0; h < search->count && shown; ++h) {
                const demo_hit_t *hit = &search->hits[h];
                if (hit->modality != m) continue;
                const demo_item_t *item = demo_run_find(run, hit->path);
                fprintf(out, "<div class=\"hit\">");
                status |= media_element(out, resolve(run, hit->path, path, sizeof path), m, 96);
                fprintf(out, "<div>%zu. ", hit->rank);
                if (item) caption_against(out, item->text, query_caption);
                else demo_html_escape(out, hit->path);
                fprintf(out, " <span class=\"score\">%.3f</span></div></div>\n", hit->score);
            }
            fprintf(out, "</div>\n");
        }
        fprintf(out, "</section>\n");
    }
    return status ? -1 : 0;
}

int demo_html_write(FILE *out, const demo_run_t *run, const char *model_summary) {
    fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
                 "<title>UForm demo: learned cross-modal retrieval</title>\n<style>%s</style>\n</head>\n<body>\n",
            style);
    fprintf(out, "<h1>UForm demo: a model trained from scratch on generated pictures, clips and speech</h1>\n<p>");
    demo_html_escape(out, model_summary);
    double last_step = run->log.count ? run->log.steps[run->log.count - 1] : 0;
    double seconds = run->log.count ? run->log.seconds[run->log.count - 1] : 0;
    fprintf(out, " Trained for %.0f steps in %.1f s, then evaluated on fresh renders of the training captions "
                 "(new noise, jitter, voices and speeds) and on colour–shape combinations it never saw.</p>\n",
            last_step, seconds);
    fprintf(out, "<h2>Held-out recall</h2>\n");
    recall_table(out, run);
    fprintf(out, "<h2>Training curves</h2>\n<figure>\n");
    charts(out, run);
    fprintf(out, "</figure>\n<h2>Searches over the held-out media</h2>\n<p class=\"note\">The index holds every held-out "
                 "picture, clip and recording; each search shows its best five of every kind, with the words a result's "
                 "caption shares with the query's in bold and its cosine score.</p>\n");
    int status = searches(out, run);
    if (run->stage_count) {
        fprintf(out, "<h2>Time</h2>\n<table>\n<tr><th>stage</th><th>wall s</th><th>CPU s</th></tr>\n");
        double wall = 0, cpu = 0;
        for (size_t i = 0; i < run->stage_count; ++i) {
            fprintf(out, "<tr><td>%s</td><td>%.1f</td><td>%.1f</td></tr>\n", run->stages[i].name, run->stages[i].wall,
                    run->stages[i].cpu);
            wall += run->stages[i].wall, cpu += run->stages[i].cpu;
        }
        fprintf(out, "<tr><th>total</th><th>%.1f</th><th>%.1f</th></tr>\n</table>\n", wall, cpu);
    }
    fprintf(out, "<h2>How it was made</h2>\n<p><code>uform synth</code> drew %zu media files (pictures of 5 shapes × 8 "
                 "colours × 5 places × 2 sizes, 8-frame clips of a shape moving left, right, up or down, captions "
                 "spoken by espeak-ng), <code>uform train</code> trained the model on the training manifest with "
                 "<code>--eval</code> on the held-out ones, and <code>uform index</code> and <code>uform search</code> "
                 "built and queried an index of the held-out media. <code>scripts/demo.sh</code> runs it all.</p>\n",
            run->items.count);
    fprintf(out, "</body>\n</html>\n");
    return status;
}
