/*
 * uform train (MANIFEST.jsonl | FOLDER | --shards LIST) --out CKPT [options] — the trainer of libuform
 * (uform_trainer_*) fed by a dataset and its loader (uform_dataset_*, uform_loader_*: the sampler,
 * decoding ahead and the cursor that resumes the data order live in the library), stepped by
 * uform_trainer_fit, the library's training loop (stop rules, saves with the data cursor,
 * evaluations, resume, cancel). Argument handling and printing only (the loop's lines in its
 * callback); `uform train --help` documents every flag.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "train_eval.h"
#include "train_mesh.h"
#include "uform/uform.h"

static void defaults(void *raw);

/* The architecture flags: each sets one size_t field of the trainer config (zero keeps --size's). */
#define ARCHITECTURE_FLAGS 14

#define EVAL_SETS 4

typedef struct options_t {
    const char *data, *shards, *out, *resume, *size, *log, *eval_log;
    size_t shuffle_buffer, partitions;
    cli_texts_t eval;
    size_t architecture[ARCHITECTURE_FLAGS]; /* 0: --size's value */
    size_t steps, batch, warmup, total_steps, threads, eval_every, save_every;
    double minutes, lr, weight_decay, clip;
    uint64_t seed;
    int compute, skip_bad, quiet, json, have_steps, have_total, have_warmup, have_lr, have_decay, have_clip, have_seed;
    train_mesh_t mesh;      /* --mesh ... or --processes (train_mesh.h) */
} options_t;

/* The trainer config field each architecture flag sets, in the order of the table below. */
static const size_t architecture_fields[ARCHITECTURE_FLAGS] = {
    offsetof(uform_trainer_config_t, hidden),        offsetof(uform_trainer_config_t, depth),
    offsetof(uform_trainer_config_t, heads),         offsetof(uform_trainer_config_t, mlp),
    offsetof(uform_trainer_config_t, embedding),     offsetof(uform_trainer_config_t, text_bytes),
    offsetof(uform_trainer_config_t, image_size),    offsetof(uform_trainer_config_t, image_patch),
    offsetof(uform_trainer_config_t, video_size),    offsetof(uform_trainer_config_t, video_patch),
    offsetof(uform_trainer_config_t, video_frames),  offsetof(uform_trainer_config_t, video_tubelet),
    offsetof(uform_trainer_config_t, audio_seconds), offsetof(uform_trainer_config_t, audio_mels),
};

#define ARCHITECTURE(flag, index, help) CLI_FLAG(flag, CLI_POSITIVE, options_t, architecture[index], "N", help)

static const cli_flag_t flags[] = {
    CLI_FLAG("--shards", CLI_TEXT, options_t, shards, "LIST",
             "train on WebDataset shards instead of MANIFEST: \"data/{00000..00099}.tar\", lists\n"
             "joined with \"::\", .tar or .tar.gz (docs/data.md)"),
    CLI_FLAG("--shuffle-buffer", CLI_POSITIVE, options_t, shuffle_buffer, "N",
             "shards: samples held to shuffle the stream (default 2000; 1: none)"),
    CLI_FLAG("--partitions", CLI_POSITIVE, options_t, partitions, "P",
             "shards: read the stream as P partitions (default: the mesh's members, each\n"
             "reading its own); one process with --partitions K draws the batches K members do"),
    CLI_FLAG("--out", CLI_TEXT, options_t, out, "CKPT", "the checkpoint written at the end (with optimizer state; required)"),
    CLI_FLAG("--resume", CLI_TEXT, options_t, resume, "CKPT",
             "continue from a checkpoint: weights, moments, schedule and, for a checkpoint\n"
             "of this command, the data order (the flags below override the stored values)"),
    CLI_FLAG("--steps", CLI_SIZE, options_t, steps, "N", "optimisation steps in this run, >= 1 (default 1000, or unbounded with --minutes)"),
    CLI_FLAG("--minutes", CLI_POSITIVE_NUMBER, options_t, minutes, "M", "stop the training loop after M minutes (the final save is not counted)"),
    CLI_FLAG("--batch", CLI_POSITIVE, options_t, batch, "B", "samples per step (default 32; above a manifest's line count: all lines)"),
    CLI_FLAG("--lr", CLI_POSITIVE_NUMBER, options_t, lr, "X", "peak learning rate (default 1e-3)"),
    CLI_FLAG("--warmup", CLI_SIZE, options_t, warmup, "N", "linear warmup steps (default 0)"),
    CLI_FLAG("--total-steps", CLI_SIZE, options_t, total_steps, "N",
             "the cosine reaches 0.1 x lr at step N (default --steps; 0 keeps lr);\n"
             "with --minutes alone the cosine runs on elapsed time instead"),
    CLI_FLAG("--weight-decay", CLI_NUMBER, options_t, weight_decay, "X", "decoupled weight decay (default 0.1)"),
    CLI_FLAG("--clip", CLI_NUMBER, options_t, clip, "X", "gradient-norm clipping (default 1.0; 0 disables)"),
    CLI_SEED(options_t, seed),
    CLI_THREADS(options_t, threads),
    CLI_COMPUTE_FLAGS(options_t, compute),
    CLI_FLAG("--eval", CLI_TEXTS, options_t, eval, "HELDOUT",
             "print recall@1 and @5 per modality pair, text->media and media->text, on the\n"
             "held-out pairs (a hit is an item with the query's caption); up to 4 --eval,\n"
             "each line then ending with its name; a manifest, a folder or shards"),
    CLI_FLAG("--eval-log", CLI_TEXT, options_t, eval_log, "FILE.jsonl",
             "also write each evaluation as JSON lines: step, set, modality, pairs, recall"),
    CLI_FLAG("--eval-every", CLI_SIZE, options_t, eval_every, "N", "evaluate every N steps as well as at the end"),
    CLI_FLAG("--save-every", CLI_SIZE, options_t, save_every, "N", "also write --out every N steps"),
    CLI_FLAG("--log", CLI_TEXT, options_t, log, "FILE.csv",
             "one row per step: step,seconds,loss,contrastive,choice,learning_rate,grad_norm"),
    CLI_SWITCH_FLAG("--skip-bad", options_t, skip_bad,
                    "list and replace bad samples (a malformed line or member, a sample without\n"
                    "text, media that cannot be read or decoded) instead of stopping"),
    CLI_QUIET(options_t, quiet),
    CLI_SWITCH_FLAG("--json", options_t, json,
                    "print the summary as one JSON object on stdout: steps, seconds, steps/s, the final\n"
                    "loss, and the data's wait, reading and decoding seconds (the loader's stats)"),
    CLI_HEADING("A fresh model's architecture (docs/model.md's config keys; default: --size's value; the checkpoint's\n"
                "config records them):"),
    CLI_FLAG("--size", CLI_TEXT, options_t, size, "S", "tiny, small or base (default tiny)"),
    ARCHITECTURE("--hidden", 0, "the trunk's width"),
    ARCHITECTURE("--depth", 1, "trunk blocks"),
    ARCHITECTURE("--heads", 2, "attention heads"),
    ARCHITECTURE("--mlp", 3, "the MLP's width"),
    ARCHITECTURE("--embedding", 4, "the embedding's width"),
    ARCHITECTURE("--text-bytes", 5, "bytes per text"),
    ARCHITECTURE("--image-size", 6, "an image's side in pixels"),
    ARCHITECTURE("--image-patch", 7, "an image patch's side"),
    ARCHITECTURE("--video-size", 8, "a video frame's side"),
    ARCHITECTURE("--video-patch", 9, "a video patch's side"),
    ARCHITECTURE("--video-frames", 10, "frames per clip"),
    ARCHITECTURE("--video-tubelet", 11, "frames per tubelet"),
    ARCHITECTURE("--audio-seconds", 12, "seconds per recording"),
    ARCHITECTURE("--audio-mels", 13, "mel bands"),
    TRAIN_MESH_FLAGS(options_t, mesh),
    CLI_FLAGS_END,
};

static void defaults(void *raw) {
    options_t *options = raw;
    options->batch = 32, options->steps = 1000;
}


/* ---- the loop's printing: uform_trainer_fit's callback ---- */

/* Over a mesh the members stop together: an interrupt cancels the step in progress (step_progress),
 * and a cancel on one member cancels it on all; the --minutes deadline is uform_trainer_fit's. */
static uform_continuation_t step_progress(size_t completed, size_t total, void *state) {
    (void)completed, (void)total, (void)state;
    return cli_interrupted ? UFORM_CANCEL : UFORM_CONTINUE;
}

/* What the callback prints with and into. */
typedef struct printer_t {
    const options_t *options;
    const char *samples;          /* "12 samples" or "4 shards", for the first line */
    const char *size;             /* the model's size name */
    size_t parameters, threads;
    uform_compute_t compute;
    uint64_t first_step;          /* the trainer's steps before this run */
    int bar, line_open, leads, mesh, warned_twins;
    size_t printed;               /* skipped samples printed so far */
    FILE *log, *eval_log;
} printer_t;

static void draw_bar(const options_t *options, uint64_t step, uint64_t first, double loss, double elapsed) {
    double rate = elapsed > 0 ? (double)(step - first) / elapsed : 0;
    char eta[32] = "";
    if (options->steps != SIZE_MAX && rate > 0) {
        double left = (double)(first + options->steps - step) / rate;
        snprintf(eta, sizeof eta, "  ETA %d:%02d", (int)(left / 60), (int)fmod(left, 60));
    } else if (options->minutes > 0) {
        double left = options->minutes * 60 - elapsed;
        snprintf(eta, sizeof eta, "  %d:%02d left", (int)(left > 0 ? left / 60 : 0), (int)(left > 0 ? fmod(left, 60) : 0));
    }
    if (options->steps != SIZE_MAX)
        fprintf(stderr, "\rtrain  step %llu/%llu  loss %.4f  %.2f steps/s%s   ", (unsigned long long)step,
                (unsigned long long)(first + options->steps), loss, rate, eta);
    else fprintf(stderr, "\rtrain  step %llu  loss %.4f  %.2f steps/s%s   ", (unsigned long long)step, loss, rate, eta);
    fflush(stderr);
}

/* Ends the progress bar's line before anything else is printed. */
static void close_line(printer_t *printer) {
    if (printer->line_open) fputc('\n', stderr);
    printer->line_open = 0;
}

/* Prints the bad samples the loader listed since the last call ("skipped line 6 ('img/7.png'): ..."). */
static void print_skipped(printer_t *printer, uform_loader_t loader) {
    size_t count = 0;
    uform_loader_stats(loader, NULL, NULL, 0, &count);
    if (printer->printed >= count) return;
    uform_data_error_t *all = calloc(count, sizeof *all);
    if (!all) return; /* tried again after the next batch */
    uform_loader_stats(loader, NULL, all, count, NULL);
    const char *newline = printer->line_open ? "\n" : "";
    for (; !printer->options->quiet && printer->printed < count && printer->printed < 10000; ++printer->printed) {
        const uform_data_error_t *error = &all[printer->printed];
        if (error->line)
            fprintf(stderr, "%suform: skipped line %zu of %s ('%s'): %s\n", newline, error->line, error->source, error->key,
                    error->message);
        else if (error->shard != SIZE_MAX)
            fprintf(stderr, "%suform: skipped sample '%s' of shard '%s': %s\n", newline, error->key, error->source, error->message);
        else fprintf(stderr, "%suform: skipped '%s': %s\n", newline, error->key[0] ? error->key : error->source, error->message);
    }
    free(all);
    printer->printed = count;
}

static void print_start(printer_t *printer, const uform_trainer_fit_t *fit) {
    const options_t *options = printer->options;
    if (options->quiet) return;
    if (fit->order == UFORM_FIT_ORDER_NOT_A_CURSOR)
        fprintf(stderr, "uform: the checkpoint holds no data order of this command: starting a new order\n");
    if (fit->order == UFORM_FIT_ORDER_MISMATCH)
        fprintf(stderr, "uform: the checkpoint's data order does not fit this data (%s): starting a new order\n", fit->order_reason);
    fprintf(stderr, "uform: training %s (%zu parameters, %s) on %s, batch %zu, %zu threads%s\n", printer->size, printer->parameters,
            cli_compute_name(printer->compute), printer->samples, options->batch, printer->threads, options->resume ? ", resumed" : "");
}

static void print_step(printer_t *printer, const uform_trainer_fit_t *fit) {
    print_skipped(printer, fit->loader);
    if (fit->twins && !printer->warned_twins && !printer->options->quiet) {
        fprintf(stderr, "%suform: the data repeats a text so often that some batch holds two samples with the same text "
                        "(the contrastive loss counts the twin as a wrong match)\n", printer->line_open ? "\n" : "");
        printer->warned_twins = 1;
    }
    const uform_trainer_step_t *step = &fit->step;
    if (printer->log)
        fprintf(printer->log, "%llu,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", (unsigned long long)step->step, fit->elapsed_seconds, step->loss,
                step->contrastive, step->choice, step->learning_rate, step->grad_norm);
    if (printer->bar) {
        draw_bar(printer->options, step->step, printer->first_step, step->loss, fit->elapsed_seconds);
        printer->line_open = 1;
    }
}

/* The summary after the final save (member 0, not after an interrupt). */
static void print_summary(const printer_t *printer, const uform_trainer_fit_t *fit) {
    const options_t *options = printer->options;
    const uform_loader_stats_t *stats = &fit->loader_stats;
    double seconds = fit->elapsed_seconds, stepping = fit->stepping_seconds;
    unsigned long long done = (unsigned long long)fit->steps_done;
    if (!options->quiet) {
        fprintf(stderr, "uform: %llu steps in %.1f s (%.2f steps/s), final loss %.4f, %zu skipped, saved %s\n", done, seconds,
                seconds > 0 ? (double)done / seconds : 0.0, fit->loss, stats->skipped, options->out);
        fprintf(stderr, "uform: data: %.2f s waiting for batches (%.1f%% of the steps' %.1f s), %.1f s reading and %.1f s "
                        "decoding ahead, epoch %llu\n",
                stats->wait_seconds, stepping > 0 ? 100.0 * stats->wait_seconds / stepping : 0.0, stepping, stats->read_seconds,
                stats->decode_seconds, (unsigned long long)stats->epoch);
    }
    if (options->json) {
        printf("{\"steps\": %llu, \"seconds\": %.6f, \"stepping_seconds\": %.6f, \"steps_per_second\": %.6f, "
               "\"final_loss\": %.9g, \"skipped\": %zu, \"out\": ",
               done, seconds, stepping, seconds > 0 ? (double)done / seconds : 0.0, fit->loss, stats->skipped);
        cli_json_string(stdout, options->out, strlen(options->out));
        printf(", \"data\": {\"batches\": %zu, \"samples\": %zu, \"epoch\": %llu, \"wait_seconds\": %.6f, "
               "\"wait_fraction\": %.6f, \"read_seconds\": %.6f, \"decode_seconds\": %.6f, \"bytes_read\": %llu}}\n",
               stats->batches, stats->samples, (unsigned long long)stats->epoch, stats->wait_seconds,
               stepping > 0 ? stats->wait_seconds / stepping : 0.0, stats->read_seconds, stats->decode_seconds,
               (unsigned long long)stats->bytes_read);
        fflush(stdout);
    }
}

/* uform_trainer_fit's callback: every line the command prints while it trains. */
static uform_continuation_t on_event(const uform_trainer_fit_t *fit, uform_fit_event_t event, void *state) {
    printer_t *printer = state;
    const options_t *options = printer->options;
    switch (event) {
    case UFORM_FIT_STARTED: print_start(printer, fit); break;
    case UFORM_FIT_STEPPED: print_step(printer, fit); break;
    case UFORM_FIT_SAVED:
        if (!fit->saved_final) break;
        close_line(printer);
        if (printer->leads && !cli_interrupted) print_summary(printer, fit);
        break;
    case UFORM_FIT_EVALUATED: {
        close_line(printer);
        const char *item = options->eval.items[fit->evaluation_set], *slash = strrchr(item, '/');
        const char *label = options->eval.count > 1 ? (slash ? slash + 1 : item) : NULL;
        train_eval_print(fit->evaluation, fit->evaluation_step, label, printer->eval_log);
        break;
    }
    case UFORM_FIT_ENDED:
        print_skipped(printer, fit->loader);
        close_line(printer);
        break;
    }
    /* Alone, an interrupt between steps ends the loop after this one (and its save and evaluation);
     * over a mesh only the collective cancel of step_progress may stop it, so members stop together. */
    return !printer->mesh && cli_interrupted ? UFORM_CANCEL : UFORM_CONTINUE;
}

/* The dataset to train on: a manifest or folder argument, or --shards. */
static uform_dataset_t open_training(const options_t *options) {
    uform_dataset_options_t dataset = {0};
    dataset.seed = options->seed, dataset.skip_bad = options->skip_bad, dataset.shuffle_buffer = options->shuffle_buffer;
    dataset.partitions = options->partitions;
    if (options->shards) return cli_dataset_open(options->shards, UFORM_DATASET_SHARDS, &dataset);
    return cli_dataset_open(options->data, cli_source_of(options->data), &dataset);
}

/* What every member of a mesh must agree on beyond the trainer's config (train_mesh_join). */
static void agreement_of(const options_t *options, uform_dataset_t dataset, char *text, size_t capacity) {
    uform_dataset_description_t description;
    uform_dataset_describe(dataset, &description);
    snprintf(text, capacity, "batch=%zu\nsteps=%zu\nminutes=%g\nsamples=%zu\nshards=%zu\ndata=%s\n", options->batch, options->steps,
             options->minutes, description.samples, description.shards, description.fingerprint);
}

typedef struct run_t {
    uform_executor_t executor;
    uform_trainer_t trainer;
    uform_dataset_t dataset, heldout[EVAL_SETS];
    FILE *log, *eval_log;
} run_t;

static void run_free(run_t *run, const options_t *options) {
    if (run->log) fclose(run->log);
    if (run->eval_log) fclose(run->eval_log);
    uform_trainer_free(run->trainer);
    uform_dataset_free(run->dataset);
    for (size_t e = 0; e < options->eval.count && e < EVAL_SETS; ++e) uform_dataset_free(run->heldout[e]);
    uform_executor_free(run->executor);
}

/* The words in parentheses after a failure's message: which part of the run failed, as the command
 * has always said it (the outcome names the call that failed inside uform_trainer_fit). */
static const char *failure_context(const uform_outcome_t *outcome, const options_t *options) {
    if (!strcmp(outcome->function, "uform_evaluate") || !strcmp(outcome->function, "uform_trainer_snapshot")) return "--eval";
    if (!strcmp(outcome->function, "uform_trainer_save")) return options->out;
    if (!strcmp(outcome->function, "uform_loader_cursor")) return "the data cursor";
    return NULL;
}

/* uform_trainer_fit with the command's flags, its printing in the callback; answers the exit code. */
static int train(const options_t *options, run_t *run, const cli_parsed_t *parsed, int leads, uform_compute_t compute) {
    uform_trainer_description_t description;
    uform_trainer_describe(run->trainer, &description);
    uform_dataset_description_t data;
    uform_dataset_describe(run->dataset, &data);
    char samples[64];
    if (data.shards) snprintf(samples, sizeof samples, "%zu shards", data.shards);
    else snprintf(samples, sizeof samples, "%zu samples", data.samples);
    printer_t printer = {0};
    printer.options = options, printer.samples = samples, printer.compute = compute;
    printer.size = description.model.size[0] ? description.model.size : "model";
    printer.parameters = (size_t)description.model.parameters, printer.threads = uform_executor_threads(run->executor);
    printer.first_step = description.steps, printer.bar = !options->quiet && isatty(2), printer.leads = leads;
    printer.mesh = options->mesh.mesh != NULL, printer.log = run->log, printer.eval_log = run->eval_log;
    uform_trainer_fit_t fit = {0};
    fit.trainer = run->trainer, fit.dataset = run->dataset, fit.batch = options->batch;
    fit.accumulate = options->mesh.accumulate;
    fit.steps = options->steps == SIZE_MAX ? 0 : options->steps;
    fit.budget_seconds = options->minutes * 60.0;
    fit.eval_datasets = run->heldout, fit.eval_count = options->eval.count;
    fit.eval_every = options->eval.count ? options->eval_every : 0, fit.eval_compute = compute;
    fit.save_path = options->out, fit.save_every = options->save_every;
    fit.resume = options->resume != NULL;
    fit.callback = on_event, fit.state = &printer, fit.step_progress.callback = step_progress;
    cli_catch_interrupts(0);
    uform_status_t status = uform_trainer_fit(&fit);
    uint64_t reached = printer.first_step + fit.steps_done;
    if (status == UFORM_CANCELLED) {
        if (leads)
            fprintf(stderr, "uform: interrupted after step %llu; %s holds it: continue with --resume %s\n", (unsigned long long)reached,
                    options->out, options->out);
        return 130;
    }
    if (status != UFORM_OK) {
        cli_fail(&fit.outcome, failure_context(&fit.outcome, options));
        /* A member died or stopped answering: member 0 kept the last completed step (uform_trainer_fit). */
        if (fit.saved_at_failure)
            train_mesh_say_resume(parsed->argc, parsed->argv, options->out, reached,
                                  options->steps == SIZE_MAX ? 0 : options->steps - (size_t)fit.steps_done);
        return 1;
    }
    return fit.loader_stats.skipped ? 3 : 0;
}

static int run(void *raw, const cli_parsed_t *parsed) {
    options_t options = *(options_t *)raw;
    const cli_command_t *command = parsed->command;
    options.data = parsed->positional_count ? parsed->positional[0] : NULL;
    options.have_steps = cli_given(parsed, "--steps"), options.have_total = cli_given(parsed, "--total-steps");
    options.have_warmup = cli_given(parsed, "--warmup"), options.have_lr = cli_given(parsed, "--lr");
    options.have_decay = cli_given(parsed, "--weight-decay"), options.have_clip = cli_given(parsed, "--clip");
    options.have_seed = cli_given(parsed, "--seed");
    options.mesh.have_index = cli_given(parsed, "--index"), options.mesh.have_count = cli_given(parsed, "--count");
    if (options.weight_decay < 0) return cli_usage_error(command, "--weight-decay %g is not a valid value (a non-negative number)", options.weight_decay);
    if (options.clip < 0) return cli_usage_error(command, "--clip %g is not a valid value (a non-negative number)", options.clip);
    if (options.eval.count > EVAL_SETS) return cli_usage_error(command, "more than %d --eval", EVAL_SETS);
    char why[200];
    if (train_mesh_check(&options.mesh, options.skip_bad, why, sizeof why)) return cli_usage_error(command, "%s", why);
    if (options.mesh.processes) return train_mesh_launch(&options.mesh, parsed->argc, parsed->argv);
    if (!options.data && !options.shards) return cli_usage_error(command, "the manifest is missing (or --shards)");
    if (options.data && options.shards) return cli_usage_error(command, "give a manifest or --shards, not both");
    if (!options.out) return cli_usage_error(command, "--out is missing");
    if (options.minutes > 0 && !options.have_steps) options.steps = SIZE_MAX;
    if (options.steps == 0) return cli_usage_error(command, "--steps 0 trains nothing (a positive number, or leave it out with --minutes)");
    /* Over a mesh, member 0 alone writes --out and --log and evaluates. */
    int leads = !train_mesh_wanted(&options.mesh) || options.mesh.index == 0;
    if (!leads) options.log = NULL, options.eval_log = NULL, options.eval.count = 0;
    uform_compute_t compute = cli_compute(options.compute);
    run_t run;
    memset(&run, 0, sizeof run);
    int status = (run.dataset = open_training(&options)) ? 0 : 1;
    for (size_t e = 0; status == 0 && e < options.eval.count; ++e) {
        uform_dataset_options_t heldout = {0};
        heldout.sequential = 1;
        const char *path = options.eval.items[e];
        if (!(run.heldout[e] = cli_dataset_open(path, cli_source_of(path), &heldout))) status = 1;
    }
    if (status == 0) status = cli_executor(options.threads ? options.threads : options.mesh.threads, &run.executor);
    uform_trainer_config_t config = {0};
    if (options.size) snprintf(config.size, sizeof config.size, "%s", options.size);
    for (size_t k = 0; k < ARCHITECTURE_FLAGS; ++k)
        if (options.architecture[k]) *(size_t *)((char *)&config + architecture_fields[k]) = options.architecture[k];
    config.seed = options.seed;
    config.compute = compute;
    config.resume = options.resume;
    if (options.have_lr) config.learning_rate = options.lr;
    if (options.have_warmup) config.warmup_steps = options.warmup;
    if (options.have_decay) config.weight_decay = options.weight_decay > 0 ? options.weight_decay : -1;
    if (options.have_clip) config.clip_norm = options.clip > 0 ? options.clip : -1;
    /* --total-steps defaults to --steps for a fresh run (a resumed one keeps its stored schedule). */
    if (options.have_total) config.total_steps = options.total_steps;
    else if (!options.resume && options.steps != SIZE_MAX) config.total_steps = options.steps;
    if (status == 0 && train_mesh_wanted(&options.mesh)) {
        char agreement[512];
        agreement_of(&options, run.dataset, agreement, sizeof agreement);
        status = train_mesh_join(&options.mesh, run.executor, &config, agreement, options.quiet);
        config.mesh = options.mesh.mesh;
    }
    uform_outcome_t outcome = {0};
    if (status == 0 && uform_trainer_init_ram(run.executor, &config, &run.trainer, &outcome) != UFORM_OK)
        status = cli_fail(&outcome, options.resume);
    uform_trainer_description_t resumed;
    uform_trainer_describe(run.trainer, &resumed);
    if (status == 0 && options.resume && !options.have_seed && resumed.seed != options.seed) {
        /* A resumed run keeps its seed, the data order's too, unless --seed says otherwise. */
        options.seed = resumed.seed;
        uform_dataset_free(run.dataset);
        if (!(run.dataset = open_training(&options))) status = 1;
    }
    if (status == 0 && options.log) {
        if (!(run.log = fopen(options.log, "w"))) status = cli_fail_errno(errno, "cannot write '%s'", options.log);
        else fprintf(run.log, "step,seconds,loss,contrastive,choice,learning_rate,grad_norm\n");
    }
    if (status == 0 && options.eval_log && !(run.eval_log = fopen(options.eval_log, "w")))
        status = cli_fail_errno(errno, "cannot write '%s'", options.eval_log);
    if (status == 0) status = train(&options, &run, parsed, leads, compute);
    run_free(&run, &options);
    train_mesh_free(&options.mesh);
    return status;
}

const cli_command_t cli_train = {
    .name = "train",
    .summary = "trains a model on text-media pairs and choice examples (several processes: --processes)",
    .usage = "(MANIFEST.jsonl | FOLDER | --shards LIST) --out CKPT [options]",
    .description =
        "Trains a model on MANIFEST.jsonl (one JSON object a line):\n"
        "  {\"text\": \"a red star\", \"image\": \"img/1.png\"}   a pair; also \"video\" or \"audio\" (paths relative\n"
        "                                                 to the manifest's folder)\n"
        "  {\"text\": \"is it red? \", \"choices\": \"yn\", \"target\": \"y\"}   a choice example (text_choose)\n"
        "or on a FOLDER (17.jpg with 17.txt is a pair), or on WebDataset shards (--shards: 000012.jpg with\n"
        "000012.txt or a .json \"caption\" is a pair). Each step takes --batch samples in an order reshuffled\n"
        "every epoch from --seed, never one twice, keeping two samples with the same text apart; media are\n"
        "decoded a batch ahead. --resume continues the weights, moments, schedule and data order exactly.\n",
    .epilogue = TRAIN_MESH_HELP,
    .statuses = "0 done; 1 failed (the library's message is printed); 2 usage; 3 done, but samples were\n"
                "skipped (--skip-bad); 130 interrupted (Ctrl-C: --out holds the steps completed so far).",
    .flags = flags,
    .options_size = sizeof(options_t),
    .defaults = defaults,
    .positional_min = 0,
    .positional_max = 1,
    .run = run,
};
