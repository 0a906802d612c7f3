/*
 * The `uform` command line.
 *
 *   uform describe CKPT
 *   uform encode CKPT (--text T... | --image F... | --audio F... | --video F...)
 *                [--outputs embeddings,tokens,states] [--scalar f32|f16|bf16|i8|b1] [--dims N]
 *                [--batch N] [--threads N] [--bf16 | --int8] [--out FILE.npy|FILE.jsonl]
 *   uform choose CKPT PREFIX --choices BYTES [--group G] [--bf16 | --int8]
 *   uform quantize CKPT --out Q   (the trunk's matrices as int8 with per-channel scales; docs/int8.md)
 *   uform index CKPT (DIR | FILE | --manifest FILE.jsonl)... --out INDEX [options]   (uform_index.c)
 *   uform search INDEX CKPT (--text T | --image F | --audio F | --video F) [--top K]  (uform_search.c)
 *
 * `encode` reads every file into memory, encodes in batches on an executor with a progress bar on
 * stderr, and writes the outputs: JSON lines on stdout (or FILE.jsonl), or .npy files (FILE.npy for
 * embeddings, FILE.tokens.npy and FILE.states.npy with their *_offsets.npy for the ragged outputs).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "item_list.h"
#include "npy.h"
#include "uform/uform.h"
#include "uform_tool.h"

static int usage(void) {
    fprintf(stderr,
            "usage:\n"
            "  uform describe CKPT\n"
            "  uform encode CKPT (--text T... | --image F... | --audio F... | --video F...)\n"
            "               [--outputs embeddings,tokens,states] [--scalar f32|f16|bf16|i8|b1] [--dims N]\n"
            "               [--batch N] [--threads N] [--bf16 | --int8] [--out FILE.npy|FILE.jsonl]\n"
            "  uform choose CKPT PREFIX --choices BYTES [--group G] [--bf16 | --int8]\n"
            "  uform quantize CKPT --out Q\n"
            "  uform index CKPT (DIR | FILE | --manifest FILE.jsonl)... --out INDEX [options]   (uform index --help)\n"
            "  uform search INDEX CKPT (--text T | --image F | --audio F | --video F) [--top K] [--json]\n"
            "  uform train MANIFEST.jsonl --out CKPT [...]   (uform train --help)\n"
            "  uform synth DIR [--seed N] [--pairs N] [--heldout N] [--modalities LIST]   (uform synth --help)\n"
            "  uform serve CKPT [--index INDEX] [--host H] [--port N] [...]   (uform serve --help)\n");
    return 2;
}

static int report(const uform_outcome_t *outcome) {
    char line[640];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "%s\n", line);
    return 1;
}

static uform_model_t load(const char *path, uform_executor_t executor, uform_compute_t compute) {
    uform_outcome_t outcome = {0};
    uform_ram_options_t options = {0};
    options.compute = compute;
    uform_model_t model = NULL;
    if (uform_model_load_ram(executor, path, &options, &model, &outcome) != UFORM_OK) report(&outcome);
    return model;
}

/* ---- describe ---- */

static int describe(const char *path) {
    uform_model_t model = load(path, NULL, UFORM_COMPUTE_F32);
    if (!model) return 1;
    uform_model_describe_t request = {model};
    uform_model_describe(&request);
    const uform_model_description_t *d = &request.description;
    static const char *const names[4] = {"text", "image", "video", "audio"};
    printf("checkpoint   %s\n", path);
    printf("size         %s\n", d->size[0] ? d->size : "(unnamed)");
    printf("trunk        hidden %zu, depth %zu, heads %zu, mlp %zu\n", d->hidden, d->depth, d->heads, d->mlp);
    printf("embedding    %zu (matryoshka:", d->embedding);
    for (size_t i = 0; i < d->matryoshka_count; ++i) printf(" %zu", d->matryoshka[i]);
    printf(")\nmodalities  ");
    for (int m = 0; m < 4; ++m)
        if (d->modalities & (1u << m)) printf(" %s", names[m]);
    printf("\n");
    if (d->modalities & 1) printf("text         %zu bytes per item\n", d->text_bytes);
    if (d->modalities & 2) printf("image        %zu x %zu, patch %zu\n", d->image_size, d->image_size, d->image_patch);
    if (d->modalities & 4)
        printf("video        %zu frames of %zu x %zu, patch %zu, tubelet %zu\n", d->video_frames, d->video_size,
               d->video_size, d->video_patch, d->video_tubelet);
    if (d->modalities & 8) printf("audio        %zu s at %zu Hz, %zu mels\n", d->audio_seconds, d->audio_rate, d->audio_mels);
    printf("temperatures %zu groups\n", d->temperature_groups);
    printf("parameters   %llu (%.1f MiB of weights)\n", (unsigned long long)d->parameters, (double)d->weight_bytes / 1048576.0);
    printf("kernels      %s, %s compute\n", uform_cpu_class_name(d->cpu_class), uform_tool_compute_name(d->compute));
    uform_model_free(model);
    return 0;
}

/* ---- encode ---- */

typedef struct bar_t {
    size_t batch, batches;
    double start;
} bar_t;

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

static uform_continuation_t progress_bar(size_t completed, size_t total, void *state) {
    bar_t *bar = state;
    double fraction = ((double)bar->batch + (total ? (double)completed / (double)total : 1.0)) / (double)bar->batches;
    int width = 30, filled = (int)(fraction * width);
    fprintf(stderr, "\r[%.*s%*s] %3.0f%%  batch %zu/%zu  %.1fs", filled, "##############################", width - filled,
            "", fraction * 100, bar->batch + 1, bar->batches, now_seconds() - bar->start);
    fflush(stderr);
    return UFORM_CONTINUE;
}

typedef struct collected_t {
    unsigned char *data; /* rows of row_bytes */
    size_t rows, row_bytes, columns;
    size_t *offsets;     /* ragged: items + 1 */
    size_t items;
} collected_t;

static int collect(collected_t *target, const uform_matrix_t *view, const size_t *offsets, size_t items) {
    size_t row_bytes = uform_scalar_row_bytes(view->scalar, view->columns);
    unsigned char *grown = realloc(target->data, (target->rows + view->rows) * row_bytes + 1);
    if (!grown) return -1;
    target->data = grown, target->row_bytes = row_bytes, target->columns = view->columns;
    for (size_t r = 0; r < view->rows; ++r) {
        const void *row = NULL;
        if (uform_matrix_row(view, r, &row) != UFORM_OK) return -1;
        memcpy(target->data + (target->rows + r) * row_bytes, row, row_bytes);
    }
    if (offsets) {
        size_t *grown_offsets = realloc(target->offsets, (target->items + items + 1) * sizeof *grown_offsets);
        if (!grown_offsets) return -1;
        target->offsets = grown_offsets;
        if (target->items == 0) target->offsets[0] = 0;
        for (size_t i = 1; i <= items; ++i) target->offsets[target->items + i] = target->rows + offsets[i];
    }
    target->rows += view->rows, target->items += items;
    return 0;
}

static const char *descr_of(uform_scalar_kind_t scalar) {
    static const char *const descrs[] = {"<f4", "<u2", "<u2", "|i1", "|u1"};
    return descrs[scalar];
}

static int write_npy(const char *path, const collected_t *collected, uform_scalar_kind_t scalar) {
    size_t shape[2] = {collected->rows, scalar == UFORM_SCALAR_B1 ? collected->row_bytes : collected->columns};
    if (npy_write(path, descr_of(scalar), shape, 2, collected->data, collected->rows * collected->row_bytes) != 0) {
        fprintf(stderr, "uform: cannot write '%s'\n", path);
        return -1;
    }
    if (collected->offsets) {
        char offsets_path[1024];
        snprintf(offsets_path, sizeof offsets_path, "%.*s_offsets.npy", (int)(strlen(path) - 4), path);
        int64_t *values = malloc((collected->items + 1) * sizeof *values);
        for (size_t i = 0; i <= collected->items; ++i) values[i] = (int64_t)collected->offsets[i];
        size_t offsets_shape[1] = {collected->items + 1};
        int failed = npy_write(offsets_path, "<i8", offsets_shape, 1, values, (collected->items + 1) * sizeof *values);
        free(values);
        if (failed) return -1;
    }
    return 0;
}

/* A row as JSON numbers (F32 values; F16/BF16 widened; I8 as integers; B1 as 0/1 bits). */
static void print_row(FILE *out, const unsigned char *row, size_t columns, uform_scalar_kind_t scalar) {
    fputc('[', out);
    for (size_t c = 0; c < columns; ++c) {
        if (c) fputc(',', out);
        if (scalar == UFORM_SCALAR_F32) {
            float value;
            memcpy(&value, row + 4 * c, 4);
            fprintf(out, "%.7g", value);
        } else if (scalar == UFORM_SCALAR_BF16 || scalar == UFORM_SCALAR_F16) {
            uint16_t half;
            memcpy(&half, row + 2 * c, 2);
            float value;
            if (scalar == UFORM_SCALAR_BF16) {
                uint32_t bits = (uint32_t)half << 16;
                memcpy(&value, &bits, 4);
            } else {
                int exponent = (half >> 10) & 31, mantissa = half & 1023;
                double decoded = exponent == 31 ? (mantissa ? NAN : INFINITY)
                                 : exponent    ? ldexp(1.0 + mantissa / 1024.0, exponent - 15)
                                               : ldexp(mantissa / 1024.0, -14);
                value = (float)((half & 0x8000) ? -decoded : decoded);
            }
            fprintf(out, "%.5g", value);
        } else if (scalar == UFORM_SCALAR_I8) {
            fprintf(out, "%d", (int)(int8_t)row[c]);
        } else {
            fprintf(out, "%d", (row[c / 8] >> (7 - c % 8)) & 1);
        }
    }
    fputc(']', out);
}

static int parse_size(const char *text, size_t *value) {
    char *end = NULL;
    unsigned long long parsed = strtoull(text, &end, 10);
    if (!end || *end || end == text) return -1;
    *value = (size_t)parsed;
    return 0;
}

/* Frees the items read so far and answers `status` (for early exits). */
static int release(item_list_t *items, int status) {
    free(items->data), free(items->offsets);
    memset(items, 0, sizeof *items);
    return status;
}

static int encode(int argc, char **argv) {
    if (argc < 3) return usage();
    const char *path = argv[2], *out = NULL;
    int modality = -1, used = 0;
    uform_compute_t compute = UFORM_COMPUTE_F32;
    uform_outputs_t outputs = UFORM_OUTPUTS_EMBEDDINGS;
    uform_scalar_kind_t scalar = UFORM_SCALAR_F32;
    size_t dimensions = 0, batch = 32, threads = 0;
    item_list_t items = {0};
    for (int i = 3; i < argc; ++i) {
        const char *flag = argv[i];
        int kind = strcmp(flag, "--text") == 0 ? 0 : strcmp(flag, "--image") == 0 ? 1 : strcmp(flag, "--video") == 0 ? 2
                   : strcmp(flag, "--audio") == 0 ? 3 : -1;
        if (kind >= 0) {
            if (modality >= 0 && modality != kind) {
                fprintf(stderr, "uform: one modality per run\n");
                return release(&items, 2);
            }
            modality = kind;
            for (; i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0; ++i) {
                int failed = kind == 0 ? item_list_add(&items, argv[i + 1], strlen(argv[i + 1])) : item_list_add_file(&items, argv[i + 1]);
                if (failed) return release(&items, 1);
            }
        } else if (strcmp(flag, "--outputs") == 0 && i + 1 < argc) {
            outputs = 0;
            char *list = strdup(argv[++i]);
            for (char *token = strtok(list, ","); token; token = strtok(NULL, ",")) {
                if (strcmp(token, "embeddings") == 0) outputs |= UFORM_OUTPUTS_EMBEDDINGS;
                else if (strcmp(token, "tokens") == 0) outputs |= UFORM_OUTPUTS_TOKEN_VECTORS;
                else if (strcmp(token, "states") == 0) outputs |= UFORM_OUTPUTS_STATES;
                else {
                    fprintf(stderr, "uform: unknown output '%s' (embeddings, tokens, states)\n", token);
                    free(list);
                    return release(&items, 2);
                }
            }
            free(list);
        } else if (strcmp(flag, "--scalar") == 0 && i + 1 < argc) {
            static const char *const names[] = {"f32", "f16", "bf16", "i8", "b1"};
            const char *name = argv[++i];
            int found = -1;
            for (int s = 0; s < 5; ++s)
                if (strcmp(name, names[s]) == 0) found = s;
            if (found < 0) return release(&items, usage());
            scalar = (uform_scalar_kind_t)found;
        } else if (strcmp(flag, "--dims") == 0 && i + 1 < argc) {
            if (parse_size(argv[++i], &dimensions)) return release(&items, usage());
        } else if (strcmp(flag, "--batch") == 0 && i + 1 < argc) {
            if (parse_size(argv[++i], &batch) || batch == 0) return release(&items, usage());
        } else if (strcmp(flag, "--threads") == 0 && i + 1 < argc) {
            if (parse_size(argv[++i], &threads)) return release(&items, usage());
        } else if (strcmp(flag, "--out") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if ((used = uform_tool_compute_flag(flag, &compute)) != 0) {
            if (used < 0) return release(&items, 2); /* --bf16 and --int8 together */
        } else {
            return release(&items, usage());
        }
    }
    if (modality < 0 || items.count == 0) return release(&items, usage());
    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    if (uform_executor_for_ram(NULL, threads, 0, &executor, &outcome) != UFORM_OK) return release(&items, report(&outcome));
    uform_model_t model = load(path, executor, compute);
    uform_arena_t arena = NULL;
    if (!model || uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) {
        int status = model ? report(&outcome) : 1;
        uform_model_free(model);
        uform_executor_free(executor);
        return release(&items, status);
    }

    collected_t embeddings = {0}, tokens = {0}, states = {0};
    bar_t bar = {0, (items.count + batch - 1) / batch, now_seconds()};
    int interactive = isatty(2);
    int status = 0;
    for (size_t first = 0; first < items.count && status == 0; first += batch, ++bar.batch) {
        size_t count = items.count - first < batch ? items.count - first : batch;
        uform_tape_t tape = {items.data, items.offsets + first, count};
        uform_encode_config_t config = {scalar, {interactive ? progress_bar : NULL, &bar, 0}, NULL, dimensions};
        uform_encoded_t *encoded = NULL;
        uform_outcome_t *call_outcome = NULL;
        uform_status_t result;
        /* One request struct per modality; all share the same shape. */
        uform_text_encode_t text = {model, executor, UFORM_COMPLETION_BLOCKING, tape, outputs, arena, config};
        uform_image_encode_t image = {model, executor, UFORM_COMPLETION_BLOCKING, tape, outputs, arena, config};
        uform_video_encode_t video = {model, executor, UFORM_COMPLETION_BLOCKING, tape, outputs, arena, config};
        uform_audio_encode_t audio = {model, executor, UFORM_COMPLETION_BLOCKING, tape, outputs, arena, config};
        switch (modality) {
        case 0: result = uform_text_encode(&text), encoded = &text.encoded, call_outcome = &text.outcome; break;
        case 1: result = uform_image_encode(&image), encoded = &image.encoded, call_outcome = &image.outcome; break;
        case 2: result = uform_video_encode(&video), encoded = &video.encoded, call_outcome = &video.outcome; break;
        default: result = uform_audio_encode(&audio), encoded = &audio.encoded, call_outcome = &audio.outcome; break;
        }
        if (result != UFORM_OK) {
            if (interactive) fputc('\n', stderr);
            report(call_outcome);
            status = 1;
            break;
        }
        if ((outputs & UFORM_OUTPUTS_EMBEDDINGS) && collect(&embeddings, &encoded->embeddings, NULL, count)) status = 1;
        if ((outputs & UFORM_OUTPUTS_TOKEN_VECTORS) &&
            collect(&tokens, &encoded->token_vectors.matrix, encoded->token_vectors.offsets, count)) status = 1;
        if ((outputs & UFORM_OUTPUTS_STATES) && collect(&states, &encoded->states.matrix, encoded->states.offsets, count))
            status = 1;
    }
    if (interactive) fprintf(stderr, "\n");
    fprintf(stderr, "uform: %zu items in %.2f s\n", items.count, now_seconds() - bar.start);
    size_t out_length = out ? strlen(out) : 0;
    if (status == 0 && out && out_length > 4 && strcmp(out + out_length - 4, ".npy") == 0) {
        char derived[1024];
        if (outputs & UFORM_OUTPUTS_EMBEDDINGS) status |= write_npy(out, &embeddings, scalar) != 0;
        snprintf(derived, sizeof derived, "%.*s.tokens.npy", (int)(out_length - 4), out);
        if (outputs & UFORM_OUTPUTS_TOKEN_VECTORS) status |= write_npy(derived, &tokens, scalar) != 0;
        snprintf(derived, sizeof derived, "%.*s.states.npy", (int)(out_length - 4), out);
        if (outputs & UFORM_OUTPUTS_STATES) status |= write_npy(derived, &states, UFORM_SCALAR_F32) != 0;
    } else if (status == 0) {
        FILE *file = out ? fopen(out, "w") : stdout;
        if (!file) {
            fprintf(stderr, "uform: cannot write '%s': %s\n", out, strerror(errno));
            status = 1;
        }
        for (size_t i = 0; file && i < items.count; ++i) {
            fprintf(file, "{\"item\": %zu", i);
            if (outputs & UFORM_OUTPUTS_EMBEDDINGS) {
                fprintf(file, ", \"embedding\": ");
                print_row(file, embeddings.data + i * embeddings.row_bytes, embeddings.columns, scalar);
            }
            const collected_t *ragged[2] = {&tokens, &states};
            const char *keys[2] = {"tokens", "states"};
            uform_outputs_t flags[2] = {UFORM_OUTPUTS_TOKEN_VECTORS, UFORM_OUTPUTS_STATES};
            for (int k = 0; k < 2; ++k) {
                if (!(outputs & flags[k])) continue;
                fprintf(file, ", \"%s\": [", keys[k]);
                for (size_t r = ragged[k]->offsets[i]; r < ragged[k]->offsets[i + 1]; ++r) {
                    if (r > ragged[k]->offsets[i]) fputc(',', file);
                    print_row(file, ragged[k]->data + r * ragged[k]->row_bytes, ragged[k]->columns,
                              k == 1 ? UFORM_SCALAR_F32 : scalar);
                }
                fputc(']', file);
            }
            fprintf(file, "}\n");
        }
        if (file && file != stdout) fclose(file);
    }
    free(embeddings.data), free(tokens.data), free(tokens.offsets), free(states.data), free(states.offsets);
    free(items.data), free(items.offsets);
    uform_arena_free(arena);
    uform_model_free(model);
    uform_executor_free(executor);
    return status;
}

/* ---- choose ---- */

/* ---- quantize ---- */

static int quantize(int argc, char **argv) {
    if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
        printf("usage: uform quantize CKPT --out Q\n"
               "Writes a copy of CKPT whose trunk matrices (attn.qkv, attn.out, mlp.up, mlp.down) are int8 with one\n"
               "F32 scale per output channel (NAME and NAME_scale), as --int8 quantizes them at load: loading Q with\n"
               "--int8 gives the same outputs, from about half the bytes. Other computes dequantize it. docs/int8.md.\n");
        return 0;
    }
    if (argc != 5 || strcmp(argv[3], "--out") != 0) return usage();
    uform_outcome_t outcome = {0};
    double start = now_seconds();
    if (uform_model_quantize(argv[2], argv[4], &outcome) != UFORM_OK) return report(&outcome);
    fprintf(stderr, "uform: wrote %s in %.2f s\n", argv[4], now_seconds() - start);
    return 0;
}

static int choose(int argc, char **argv) {
    if (argc < 6) return usage();
    const char *path = argv[2], *prefix = argv[3], *choices = NULL;
    size_t group = 0;
    uform_compute_t compute = UFORM_COMPUTE_F32;
    for (int i = 4; i < argc; ++i) {
        int used = 0;
        if (strcmp(argv[i], "--choices") == 0 && i + 1 < argc) choices = argv[++i];
        else if (strcmp(argv[i], "--group") == 0 && i + 1 < argc) {
            if (parse_size(argv[++i], &group)) return usage();
        } else if ((used = uform_tool_compute_flag(argv[i], &compute)) != 0) {
            if (used < 0) return 2;
        } else return usage();
    }
    if (!choices) return usage();
    uform_model_t model = load(path, NULL, compute);
    if (!model) return 1;
    uform_arena_t arena = NULL;
    uform_arena_for_host(&arena, NULL);
    size_t text_offsets[2] = {0, strlen(prefix)}, choice_offsets[2] = {0, strlen(choices)};
    uform_text_choose_t request = {0};
    request.model = model, request.arena = arena, request.groups = &group;
    request.texts = (uform_tape_t){prefix, text_offsets, 1};
    request.choices = (uform_tape_t){choices, choice_offsets, 1};
    int status = 0;
    if (uform_text_choose(&request) != UFORM_OK) {
        status = report(&request.outcome);
    } else {
        for (size_t c = 0; c < choice_offsets[1]; ++c) {
            const void *row = NULL;
            uform_matrix_row(&request.probabilities.matrix, c, &row);
            unsigned char byte = (unsigned char)choices[c];
            if (byte >= 32 && byte < 127) printf("'%c'  %.6f\n", byte, *(const float *)row);
            else printf("0x%02x %.6f\n", byte, *(const float *)row);
        }
    }
    uform_arena_free(arena);
    uform_model_free(model);
    return status;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "describe") == 0) return describe(argv[2]);
    if (argc >= 2 && strcmp(argv[1], "encode") == 0) return encode(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "choose") == 0) return choose(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "quantize") == 0) return quantize(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "index") == 0) return uform_tool_index(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "search") == 0) return uform_tool_search(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "train") == 0) return uform_command_train(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "synth") == 0) return uform_command_synth_exec(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "serve") == 0) return uform_command_exec_sibling("uform-serve", argc - 1, argv + 1);
    return usage();
}
