/*
 * uform index CKPT (DIR | FILE | --manifest FILE.jsonl | --shards LIST)... --out INDEX [options]
 *
 * Embeds every item of a corpus into one index file with uform_index_build (uform.h, "Data"): the
 * folders and files given (walked recursively in byte order of names, hidden entries skipped unless
 * --hidden), then the manifests, then the shards, each a dataset read in stored order. The library
 * reads ahead on a thread of its own, decodes (on --decode-threads of their own, a batch ahead) and
 * encodes; bad items go to INDEX.errors.jsonl; every --checkpoint N items the index is written
 * atomically, and --resume continues it to the same bytes an uninterrupted run writes. With
 * --ann[=RECIPE] it then builds an approximate structure (uform_index_ann_build) into INDEX's .faiss
 * (X.index → X.faiss); `uform index --ann[=RECIPE] --from INDEX` builds one for an existing index
 * without a checkpoint. This file handles the arguments and prints.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ann_choice.h"
#include "cli.h"
#include "index_vectors.h"
#include "train_mesh.h"

typedef struct options_t {
    const char *out, *shards, *ann, *from;
    size_t ann_train, ann_threads;
    cli_texts_t manifests;
    unsigned modalities;
    size_t batch, threads, decode_threads, dims, checkpoint;
    uform_scalar_kind_t scalar;
    int compute, resume, hidden, json, progress, quiet, ann_ondisk;
    index_vectors_options_t from_vectors; /* --vectors and its flags (index_vectors.c) */
    train_mesh_t mesh;                    /* --processes K, --mesh ..., or a launcher (train_mesh.h) */
} options_t;

static void defaults(void *raw) {
    options_t *options = raw;
    options->batch = 32, options->checkpoint = 10000;
}

static const cli_flag_t flags[] = {
    CLI_FLAG("--out", CLI_TEXT, options_t, out, "INDEX", "the index file to write (required; written atomically)"),
    CLI_FLAG("--manifest", CLI_TEXTS, options_t, manifests, "FILE",
             "a JSON-lines manifest of inputs (repeatable): {\"path\": \"a.jpg\"} (relative to the\n"
             "manifest's folder; \"modality\" optional) or {\"text\": \"a caption\", \"id\": \"name\"}"),
    CLI_FLAG("--shards", CLI_TEXT, options_t, shards, "LIST",
             "WebDataset shards (\"data/{00000..00099}.tar\", lists joined with \"::\"): each sample's\n"
             "medium (its text when it has none), named SHARD:MEMBER"),
    CLI_FLAG("--modalities", CLI_MODALITIES, options_t, modalities, "LIST",
             "which of text,image,video,audio to index (default: all the checkpoint has);\n"
             "items of the others are counted as skipped"),
    CLI_FLAG("--batch", CLI_POSITIVE, options_t, batch, "N", "items per batch (default 32)"),
    CLI_THREADS(options_t, threads),
    CLI_FLAG("--decode-threads", CLI_SIZE, options_t, decode_threads, "N",
             "threads of a separate decode stage that overlaps compute (default 0:\n"
             "decode on the compute threads before each batch)"),
    CLI_INFERENCE_COMPUTE_FLAGS(options_t, compute),
    CLI_DIMS(options_t, dims),
    CLI_SCALAR_FLAG(options_t, scalar),
    CLI_FLAG("--checkpoint", CLI_SIZE, options_t, checkpoint, "N", "write the index every N items (default 10000; 0: only at the end)"),
    CLI_FLAG("--ann", CLI_OPTIONAL_TEXT, options_t, ann, "[=RECIPE]",
             "also build an approximate structure into INDEX's .faiss (X.index: X.faiss): a FAISS\n"
             "index_factory RECIPE (HNSW32, IVF4096,PQ32np ...; note the '='), or bare for the default:\n"
             "HNSW32 below 100,000 items, IVF<4·sqrt(count)>,Flat up to 1,000,000,\n"
             "else IVF<4·sqrt(count)>,PQ<dims/4>np"),
    CLI_FLAG("--from", CLI_TEXT, options_t, from, "INDEX",
             "with --ann: build the approximate structure of an existing INDEX (no CKPT, no inputs)"),
    CLI_FLAG("--ann-train", CLI_SIZE, options_t, ann_train, "N",
             "with --ann: rows the quantisers train on (default: min(count, 256 per centroid))"),
    CLI_FLAG("--ann-threads", CLI_SIZE, options_t, ann_threads, "N",
             "with --ann: FAISS's OpenMP threads (default 0: OpenMP's; 1 builds the same file every time)"),
    CLI_SWITCH_FLAG("--ann-ondisk", options_t, ann_ondisk,
                    "with --ann=IVF...: keep the inverted lists on disk in X.ivfdata beside X.faiss (FAISS's\n"
                    "OnDiskInvertedLists; built 65,536 rows at a time, each member's batches sent to member 0;\n"
                    "move the two together)"),
    CLI_SWITCH_FLAG("--resume", options_t, resume, "continue from INDEX (a checkpoint or a finished index): skip what it holds"),
    CLI_SWITCH_FLAG("--hidden", options_t, hidden, "also walk hidden files and folders"),
    CLI_SWITCH_FLAG("--json", options_t, json, "print the summary as one JSON object on stdout"),
    CLI_SWITCH_FLAG("--progress", options_t, progress, "without a terminal, print a progress line every ~10%"),
    CLI_QUIET(options_t, quiet),
    CLI_HEADING("From vectors (no CKPT, no inputs; docs/indexes.md):"),
    CLI_FLAG("--vectors", CLI_TEXT, options_t, from_vectors.vectors, "V.npy",
             "index the rows of a 2-D float32 or float16 .npy matrix instead of encoding files"),
    CLI_FLAG("--ids", CLI_TEXT, options_t, from_vectors.ids, "FILE",
             "one identifier per line, one line per row (default: the row numbers 0, 1, ...)"),
    CLI_FLAG("--paths", CLI_TEXT, options_t, from_vectors.paths, "FILE", "the same as --ids"),
    CLI_SWITCH_FLAG("--normalize", options_t, from_vectors.normalize, "L2-normalise each row before storing it (default: as given)"),
    CLI_FLAG("--modality", CLI_TEXT, options_t, from_vectors.modality, "M",
             "the items' modality: text, image, video or audio (default image)"),
    CLI_FLAG("--model", CLI_TEXT, options_t, from_vectors.model, "CKPT",
             "the checkpoint that made the vectors: record its fingerprint (default: none)"),
    CLI_HEADING("Many members, one index (encoding or --vectors; the same flags as uform train's mesh;\n"
                "not with --resume, --checkpoint or --from):"),
    MESH_MEMBER_FLAGS(options_t, mesh),
    MESH_PROCESSES_FLAG(options_t, mesh),
    CLI_FLAGS_END,
};

/* ---- progress ---- */

typedef struct bar_t {
    const options_t *options;
    double start;
    size_t first, last_report;
    int interactive, drawn;
} bar_t;

static uform_continuation_t progress(size_t done, size_t total, void *state) {
    bar_t *bar = state;
    if (cli_interrupted) return UFORM_CANCEL;
    if (bar->options->quiet) return UFORM_CONTINUE;
    double elapsed = cli_now() - bar->start, rate = elapsed > 0 ? (double)(done - bar->first) / elapsed : 0;
    char done_text[32], total_text[32], eta[32];
    if (bar->interactive) {
        double fraction = total ? (double)done / (double)total : 0;
        int filled = (int)(fraction * 24);
        fprintf(stderr, "\r[%.*s%*s] %s/%s  %.1f items/s  ETA %s\033[K", filled, "########################", 24 - filled, "",
                cli_thousands(done, done_text, sizeof done_text), total ? cli_thousands(total, total_text, sizeof total_text) : "?",
                rate, total && rate > 0 ? cli_duration((double)(total - done) / rate, eta, sizeof eta) : "?");
        bar->drawn = 1;
    } else if (bar->options->progress && total && (size_t)(10.0 * done / total) > (size_t)(10.0 * bar->last_report / total)) {
        fprintf(stderr, "uform: %s/%s items, %.1f items/s\n", cli_thousands(done, done_text, sizeof done_text),
                cli_thousands(total, total_text, sizeof total_text), rate);
        bar->last_report = done;
    }
    fflush(stderr);
    return UFORM_CONTINUE;
}

static void summary(const options_t *options, const uform_index_build_t *build, const char *errors_path, double seconds) {
    char count[32], duration[32];
    size_t items = build->indexed + build->failed;
    if (options->json) {
        printf("{\"indexed\": %zu, \"failed\": %zu, \"skipped\": %zu, \"duplicates\": %zu, \"resumed\": %zu, "
               "\"seconds\": %.3f, \"items_per_second\": %.3f, \"index\": ",
               build->indexed, build->failed, build->skipped, build->duplicates, build->resumed, seconds,
               seconds > 0 ? items / seconds : 0);
        cli_json_string(stdout, options->out, strlen(options->out));
        printf(", \"errors\": ");
        cli_json_string(stdout, errors_path, strlen(errors_path));
        struct rusage usage;
        getrusage(RUSAGE_SELF, &usage);
        printf(", \"peak_rss_kib\": %ld, \"minor_faults\": %ld}\n", usage.ru_maxrss, usage.ru_minflt);
    }
    if (options->quiet) return;
    fprintf(stderr, "uform: %s items in %s (%.1f items/s)", cli_thousands(items, count, sizeof count),
            cli_duration(seconds, duration, sizeof duration), seconds > 0 ? items / seconds : 0.0);
    if (build->failed) fprintf(stderr, ", %zu failed (listed in %s)", build->failed, errors_path);
    if (build->skipped) fprintf(stderr, ", %zu skipped (other modalities)", build->skipped);
    if (build->duplicates) fprintf(stderr, ", %zu duplicate paths dropped", build->duplicates);
    if (build->resumed) fprintf(stderr, ", %zu already in the index", build->resumed);
    fputc('\n', stderr);
}

/* --resume without --dims or --scalar continues the index at its own; with them, they must agree. */
static int resume_shape(options_t *options, const cli_parsed_t *parsed, uform_model_t model) {
    uform_index_t index = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_index_open(options->out, model, &index, &outcome);
    if (status == UFORM_IO && access(options->out, F_OK) != 0) {
        if (!options->quiet) fprintf(stderr, "uform: '%s' does not exist yet: starting from the beginning\n", options->out);
        options->resume = 0;
        return 0;
    }
    if (status != UFORM_OK) return cli_fail(&outcome, options->out);
    uform_index_description_t description;
    uform_index_describe(index, &description);
    uform_index_free(index);
    if ((cli_given(parsed, "--dims") && options->dims != description.dimensions) ||
        (cli_given(parsed, "--scalar") && options->scalar != description.scalar)) {
        fprintf(stderr, "uform: '%s' holds %zu dims of %s; --resume continues it as it is (drop --dims/--scalar, or start over)\n",
                options->out, description.dimensions, cli_scalar_name(description.scalar));
        return 2;
    }
    options->dims = description.dimensions, options->scalar = description.scalar;
    return 0;
}

/* Builds INDEX's approximate structure beside it (--ann), or with `built` only reports the one the
 * members of a mesh built (since `start`); answers the exit status. */
static int build_ann(const options_t *options, const char *index_path, int built, double start) {
    char *ann_path = ann_choice_path(index_path);
    if (!ann_path) return cli_fail_errno(ENOMEM, "cannot start");
    uform_outcome_t outcome = {0};
    uform_index_t index = NULL;
    int status = 0;
    if (uform_index_open(index_path, NULL, &index, &outcome) != UFORM_OK) status = cli_fail(&outcome, index_path);
    uform_index_ann_options_t ann = {options->ann, options->ann_train, options->ann_threads, options->ann_ondisk};
    if (status == 0 && !built && uform_index_ann_build(index, ann_path, &ann, &outcome) != UFORM_OK)
        status = cli_fail(&outcome, NULL);
    uform_index_ann_t opened = NULL;
    if (status == 0 && uform_index_ann_open(index, ann_path, &opened, &outcome) != UFORM_OK) status = cli_fail(&outcome, NULL);
    if (status == 0) {
        uform_index_ann_description_t description;
        uform_index_ann_describe(opened, &description);
        char duration[32];
        if (options->json) {
            printf("{\"ann\": ");
            cli_json_string(stdout, ann_path, strlen(ann_path));
            printf(", \"recipe\": ");
            cli_json_string(stdout, description.recipe, strlen(description.recipe));
            printf(", \"count\": %zu, \"train_rows\": %zu, \"code_bytes\": %zu, \"seconds\": %.3f}\n", description.count,
                   description.train_rows, description.code_bytes, cli_now() - start);
        }
        if (!options->quiet)
            fprintf(stderr, "uform: approximate structure %s (%s, %zu items, trained on %zu rows) in %s\n", ann_path,
                    description.recipe, description.count, description.train_rows,
                    cli_duration(cli_now() - start, duration, sizeof duration));
    }
    uform_index_ann_free(opened);
    uform_index_free(index);
    free(ann_path);
    return status;
}

static int run(void *raw, const cli_parsed_t *parsed) {
    options_t options = *(options_t *)raw;
    const cli_command_t *command = parsed->command;
    char why[512];
    options.mesh.have_index = cli_given(parsed, "--index"), options.mesh.have_count = cli_given(parsed, "--count");
    if (train_mesh_check(&options.mesh, 0, why, sizeof why)) return cli_usage_error(command, "%s", why);
    int members = options.mesh.processes || train_mesh_wanted(&options.mesh);
    if (members && options.from)
        return cli_usage_error(command, "--from builds the approximate structure of an existing index in one process: "
                                        "drop --processes / --mesh");
    /* Over a mesh nothing is written before the end (docs/indexes.md, "Many members, one index"). */
    if (members && !options.from_vectors.vectors && (options.resume || cli_given(parsed, "--checkpoint")))
        return cli_usage_error(command, "%s is not supported with --processes / --mesh: members write one index at the end "
                                        "(run it in one process)",
                               options.resume ? "--resume" : "--checkpoint");
    if (options.ann_ondisk && !options.ann)
        return cli_usage_error(command, "--ann-ondisk keeps an approximate structure's inverted lists on disk: add --ann=IVF...");
    if (options.mesh.processes) {
        if (!options.out) return cli_usage_error(command, "missing --out INDEX");
        return train_mesh_launch(&options.mesh, parsed->argc, parsed->argv);
    }
    if (options.from) {
        if (!options.ann) return cli_usage_error(command, "--from INDEX builds an approximate structure: add --ann[=RECIPE]");
        if (parsed->positional_count || options.out || options.manifests.count || options.shards)
            return cli_usage_error(command, "--from takes no CKPT, inputs or --out: it reads INDEX and writes its .faiss");
        return build_ann(&options, options.from, 0, cli_now());
    }
    if (!options.out) return cli_usage_error(command, "missing --out INDEX");
    if (options.from_vectors.vectors) {
        if (parsed->positional_count || options.manifests.count || options.shards || options.resume)
            return cli_usage_error(command, "--vectors builds an index from a matrix alone: no CKPT, inputs, --manifest, "
                                            "--shards or --resume (name the checkpoint with --model)");
        static const char *const inapplicable[] = {"--dims", "--modalities", "--batch", "--decode-threads", "--checkpoint",
                                                   "--hidden", "--progress", "--bf16", "--f32", "--int8"};
        for (size_t i = 0; i < sizeof inapplicable / sizeof *inapplicable; ++i)
            if (cli_given(parsed, inapplicable[i]))
                return cli_usage_error(command, "%s does not apply to --vectors (the rows are stored as they are)", inapplicable[i]);
        index_vectors_options_t from = options.from_vectors;
        from.out = options.out, from.scalar = options.scalar, from.json = options.json, from.quiet = options.quiet;
        from.threads = options.threads, from.mesh = &options.mesh;
        int meshed = train_mesh_wanted(&options.mesh), leads = !meshed || options.mesh.index == 0;
        /* Over a mesh the members build the approximate structure together (IVF: each adds its own
         * block and member 0 merges the lists; others: member 0 alone), docs/indexes.md, "Many
         * members, one index"; member 0 then reports it. */
        uform_index_ann_options_t ann = {options.ann, options.ann_train, options.ann_threads, options.ann_ondisk};
        char *ann_path = NULL;
        if (meshed && options.ann) {
            if (!(ann_path = ann_choice_path(options.out))) return cli_fail_errno(ENOMEM, "cannot start");
            from.ann = &ann, from.ann_path = ann_path;
        }
        double start = cli_now();
        int status = index_vectors_run(&from, command);
        free(ann_path);
        return status == 0 && options.ann && leads ? build_ann(&options, options.out, meshed, start) : status;
    }
    if (options.from_vectors.ids || options.from_vectors.paths || options.from_vectors.normalize ||
        options.from_vectors.modality || options.from_vectors.model)
        return cli_usage_error(command, "--ids, --paths, --normalize, --modality and --model go with --vectors");
    if (parsed->positional_count < 1) return cli_usage_error(command, "missing CKPT (or --vectors V.npy)");
    if (parsed->positional_count < 2 && !options.manifests.count && !options.shards)
        return cli_usage_error(command, "no inputs: give folders, files, --manifest or --shards");
    uform_dataset_t datasets[3] = {NULL, NULL, NULL};
    size_t dataset_count = 0;
    uform_data_error_t error;
    uform_outcome_t outcome = {0};
    int status = 0;
    uform_executor_t executor = NULL, decoder = NULL;
    /* A member of a mesh meets the others first, so a member that never comes fails every one of
     * them within the mesh's timeout before any work; the settings that cut batches must agree. */
    train_mesh_t *mesh = train_mesh_wanted(&options.mesh) ? &options.mesh : NULL;
    if (mesh) {
        char agreement[256];
        snprintf(agreement, sizeof agreement, "index.dims=%zu\nindex.scalar=%s\nindex.modalities=%u\nindex.batch=%zu\n"
                 "index.checkpoint=%zu\nindex.hidden=%d\n", options.dims, cli_scalar_name(options.scalar), options.modalities,
                 options.batch, options.checkpoint, options.hidden);
        status = cli_executor(options.threads, &executor);
        if (status == 0) status = train_mesh_join(mesh, executor, NULL, agreement, options.quiet);
        if (status != 0) {
            uform_executor_free(executor);
            return status;
        }
    }
    int leads = !mesh || mesh->index == 0;
    /* Folders and files, then manifests (bad lines are listed, not fatal), then shards. */
    uform_dataset_options_t kinds[3] = {{0}, {0}, {0}};
    kinds[0].source = UFORM_DATASET_FOLDER, kinds[0].paths = parsed->positional + 1, kinds[0].path_count = parsed->positional_count - 1;
    kinds[1].source = UFORM_DATASET_MANIFEST, kinds[1].paths = options.manifests.items, kinds[1].path_count = options.manifests.count;
    kinds[2].source = UFORM_DATASET_SHARDS, kinds[2].path = options.shards;
    for (int k = 0; k < 3 && status == 0; ++k) {
        if (!kinds[k].path_count && !kinds[k].path) continue;
        kinds[k].hidden = options.hidden, kinds[k].skip_bad = 1, kinds[k].sequential = 1;
        kinds[k].max_sample_bytes = (size_t)4 << 30;
        if (uform_dataset_open(&kinds[k], &datasets[dataset_count], &error, &outcome) != UFORM_OK) status = cli_fail(&outcome, NULL);
        else dataset_count += 1;
    }
    uform_model_t model = NULL;
    if (status == 0 && !executor) status = cli_executor(options.threads, &executor);
    if (status == 0 && options.decode_threads) status = cli_executor(options.decode_threads, &decoder);
    if (status == 0 && !(model = cli_load(parsed->positional[0], executor, cli_compute(options.compute)))) status = 1;
    if (status == 0) {
        uform_model_describe_t describe = {model};
        uform_model_describe(&describe);
        unsigned present = describe.description.modalities;
        if (options.modalities & ~present)
            status = cli_usage_error(command, "--modalities asks for a modality the checkpoint lacks (it has:%s%s%s%s)",
                                     present & 1 ? " text" : "", present & 2 ? " image" : "", present & 4 ? " video" : "",
                                     present & 8 ? " audio" : "");
        else if (options.dims > describe.description.embedding)
            status = cli_usage_error(command, "--dims %zu exceeds the checkpoint's embedding width %zu", options.dims,
                                     describe.description.embedding);
    }
    if (status == 0 && options.resume) status = resume_shape(&options, parsed, model);
    char *errors_path = malloc(strlen(options.out) + 16);
    if (status == 0 && !errors_path) status = cli_fail_errno(ENOMEM, "cannot start");
    if (errors_path) sprintf(errors_path, "%s.errors.jsonl", options.out);
    int attempted = status == 0;
    if (status == 0) {
        cli_catch_interrupts(1);
        bar_t bar = {&options, cli_now(), 0, 0, isatty(2) && !options.quiet, 0};
        uform_index_build_t build = {0};
        build.model = model, build.executor = executor, build.decoder = decoder;
        build.datasets = datasets, build.dataset_count = dataset_count;
        build.out = options.out, build.errors_path = errors_path;
        build.dimensions = options.dims, build.scalar = options.scalar, build.modalities = options.modalities;
        build.batch = options.batch, build.checkpoint = options.checkpoint, build.resume = options.resume;
        build.progress = (uform_progress_t){progress, &bar, 0};
        build.mesh = mesh ? mesh->mesh : NULL;
        /* Over a mesh the members build the approximate structure inside the build, each adding the
         * rows it encoded (IVF: member 0 trains and merges the lists; others: member 0 alone),
         * docs/indexes.md, "Many members, one index"; member 0 reports it below. Without a mesh it is
         * built afterwards from the written index (build_ann), as before. The library's default
         * path is ann_choice_path's (X.index: X.faiss). */
        uform_index_ann_options_t ann = {options.ann, options.ann_train, options.ann_threads};
        if (mesh && options.ann) build.ann = &ann;
        uform_status_t built = uform_index_build(&build);
        if (bar.drawn) fputc('\n', stderr);
        double seconds = cli_now() - bar.start;
        if (mesh && (built == UFORM_CANCELLED || cli_interrupted)) {
            fprintf(stderr, "uform: interrupted; nothing was written (members write the index only at the end)\n");
            status = 130;
        } else if (built == UFORM_CANCELLED || (built == UFORM_OK && cli_interrupted)) {
            if (access(options.out, F_OK) == 0)
                fprintf(stderr, "uform: interrupted; '%s' keeps the last checkpoint; run the same command with --resume to continue\n",
                        options.out);
            else fprintf(stderr, "uform: interrupted before the first checkpoint; nothing was written\n");
            status = 130;
        } else if (built != UFORM_OK) {
            status = cli_fail(&build.outcome, NULL);
        } else if (mesh) {
            /* Every member answers the whole index's counts; member 0 prints them and reports the
             * approximate structure the members built (its time is the whole build's). */
            if (leads) summary(&options, &build, errors_path, seconds);
            if (leads && options.ann) status = build_ann(&options, options.out, 1, bar.start);
            if (status == 0 && build.failed) status = 3;
        } else {
            summary(&options, &build, errors_path, seconds);
            if (options.ann) status = build_ann(&options, options.out, 0, cli_now());
            if (status == 0 && (build.failed || build.resumed)) {
                /* Bad items of this run, or listed by the run it resumed: exit 3 while the errors file lists any. */
                FILE *listed = fopen(errors_path, "r");
                int any = listed && fgetc(listed) != EOF;
                if (listed) fclose(listed);
                if (any) status = 3;
            }
        }
    }
    /* A member that failed before the build still meets the others at the gather, with nothing, so
     * they stop at once naming it (the build does the same for its own failures). */
    if (mesh && !attempted) {
        uform_index_build_t nothing = {0};
        nothing.mesh = mesh->mesh; /* no model: it fails at once, after telling the others */
        uform_index_build(&nothing);
    }
    if (mesh) train_mesh_free(mesh);
    free(errors_path);
    uform_model_free(model);
    for (size_t d = 0; d < dataset_count; ++d) uform_dataset_free(datasets[d]);
    uform_executor_free(decoder);
    uform_executor_free(executor);
    return status;
}

const cli_command_t cli_index = {
    .name = "index",
    .summary = "embeds every item of folders, files, manifests or shards into one searchable index file",
    .usage = "CKPT (DIR | FILE | --manifest FILE.jsonl | --shards LIST)... --out INDEX [--ann[=RECIPE]] [options]\n"
             "       uform index --vectors V.npy --out INDEX [--ids FILE] [--normalize] [--scalar KIND] [options]\n"
             "       uform index --ann[=RECIPE] --from INDEX",
    .description = "Embeds every item found into INDEX (one safetensors file) and lists bad items in INDEX.errors.jsonl.\n"
                   "Folders are walked recursively and files recognised by content.\n"
                   "K members (--processes K, --mesh, or torchrun / mpirun / srun) build one index. Encoding: every\n"
                   "member reads every item and cuts the batches one process cuts; member r encodes the batches\n"
                   "handed over at positions (W*r/K, W*(r+1)/K] of W (items read, or shards opened for --shards);\n"
                   "error lines are gathered in member order and member 0 writes INDEX.errors.jsonl. With --vectors,\n"
                   "member r takes rows [N*r/K, N*(r+1)/K), named by their numbers in the whole file. Either way\n"
                   "the members' items stream to member 0 in member order and it writes INDEX: no member holds\n"
                   "more than its own items. With --ann=IVF..., member 0\n"
                   "trains on a sample gathered from every member, each adds the rows it encoded or took and\n"
                   "member 0 merges the lists (other recipes, HNSW among them: member 0 from all rows). Always\n"
                   "the same bytes as one process (docs/indexes.md, \"Many members, one index\").\n",
    .statuses = "0 every item indexed; 1 the run failed (the reason is printed); 2 usage error;\n"
                "3 finished, but some items failed (listed in INDEX.errors.jsonl); 130 interrupted (INDEX keeps\n"
                "the last checkpoint: run the same command with --resume to continue).",
    .flags = flags,
    .options_size = sizeof(options_t),
    .defaults = defaults,
    .positional_min = 0, /* CKPT is checked in run: --vectors and --from take none */
    .positional_max = SIZE_MAX,
    .run = run,
};
