/*
 * uform encode CKPT (--text T... | --image F... | --audio F... | --video F...) [options]
 *
 * Reads every file into memory, encodes in batches on an executor with a progress bar on stderr,
 * and writes the outputs: JSON lines on stdout (or FILE.jsonl), or .npy files (FILE.npy for
 * embeddings, FILE.tokens.npy and FILE.states.npy with their *_offsets.npy for the ragged outputs).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "npy.h"

typedef struct encode_options_t {
    cli_texts_t items[4]; /* by modality */
    const char *outputs, *out;
    uform_scalar_kind_t scalar;
    size_t dims, batch, threads;
    int compute;
} encode_options_t;

static void defaults(void *raw) {
    encode_options_t *options = raw;
    options->batch = 32;
}

static const cli_flag_t flags[] = {
    CLI_FLAG("--text", CLI_VALUES, encode_options_t, items[UFORM_MODALITY_TEXT], "T...", "texts to encode"),
    CLI_FLAG("--image", CLI_VALUES, encode_options_t, items[UFORM_MODALITY_IMAGE], "F...", "image files to encode"),
    CLI_FLAG("--video", CLI_VALUES, encode_options_t, items[UFORM_MODALITY_VIDEO], "F...", "video files to encode"),
    CLI_FLAG("--audio", CLI_VALUES, encode_options_t, items[UFORM_MODALITY_AUDIO], "F...", "audio files to encode"),
    CLI_FLAG("--outputs", CLI_TEXT, encode_options_t, outputs, "LIST",
             "which of embeddings,tokens,states to write (default embeddings)"),
    CLI_SCALAR_FLAG(encode_options_t, scalar),
    CLI_DIMS(encode_options_t, dims),
    CLI_FLAG("--batch", CLI_POSITIVE, encode_options_t, batch, "N", "items per call (default 32)"),
    CLI_THREADS(encode_options_t, threads),
    CLI_INFERENCE_COMPUTE_FLAGS(encode_options_t, compute),
    CLI_FLAG("--out", CLI_TEXT, encode_options_t, out, "FILE",
             "FILE.npy: NumPy arrays (FILE.tokens.npy, FILE.states.npy and their _offsets.npy\n"
             "for the ragged outputs); anything else: JSON lines (default: stdout)"),
    CLI_FLAGS_END,
};

typedef struct bar_t {
    size_t batch, batches;
    double start;
} bar_t;

static uform_continuation_t progress_bar(size_t completed, size_t total, void *state) {
    bar_t *bar = state;
    double fraction = ((double)bar->batch + (total ? (double)completed / (double)total : 1.0)) / (double)bar->batches;
    int width = 30, filled = (int)(fraction * width);
    fprintf(stderr, "\r[%.*s%*s] %3.0f%%  batch %zu/%zu  %.1fs", filled, "##############################", width - filled,
            "", fraction * 100, bar->batch + 1, bar->batches, cli_now() - bar->start);
    fflush(stderr);
    return cli_interrupted ? UFORM_CANCEL : UFORM_CONTINUE;
}

/* The items of one modality end to end: texts as given, files read whole. */
typedef struct items_t {
    unsigned char *data;
    size_t *offsets;
    size_t count, used, capacity;
} items_t;

static int add_item(items_t *items, const void *bytes, size_t length) {
    if (items->used + length > items->capacity) {
        size_t capacity = (items->used + length) * 2 + 1024;
        unsigned char *grown = realloc(items->data, capacity);
        if (!grown) return cli_fail_errno(ENOMEM, "cannot hold %zu bytes of inputs", items->used + length);
        items->data = grown, items->capacity = capacity;
    }
    size_t *offsets = realloc(items->offsets, (items->count + 2) * sizeof *offsets);
    if (!offsets) return cli_fail_errno(ENOMEM, "cannot hold %zu inputs", items->count + 1);
    items->offsets = offsets;
    if (items->count == 0) items->offsets[0] = 0;
    memcpy(items->data + items->used, bytes, length);
    items->used += length;
    items->offsets[++items->count] = items->used;
    return 0;
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
    if (!grown) return cli_fail_errno(ENOMEM, "cannot hold the outputs");
    target->data = grown, target->row_bytes = row_bytes, target->columns = view->columns;
    for (size_t r = 0; r < view->rows; ++r) {
        const void *row = NULL;
        if (uform_matrix_row(view, r, &row) != UFORM_OK) return -1;
        memcpy(target->data + (target->rows + r) * row_bytes, row, row_bytes);
    }
    if (offsets) {
        size_t *grown_offsets = realloc(target->offsets, (target->items + items + 1) * sizeof *grown_offsets);
        if (!grown_offsets) return cli_fail_errno(ENOMEM, "cannot hold the outputs");
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
    if (npy_write(path, descr_of(scalar), shape, 2, collected->data, collected->rows * collected->row_bytes) != 0)
        return cli_fail_errno(errno, "cannot write '%s'", path);
    if (!collected->offsets) return 0;
    char offsets_path[1024];
    snprintf(offsets_path, sizeof offsets_path, "%.*s_offsets.npy", (int)(strlen(path) - 4), path);
    int64_t *values = malloc((collected->items + 1) * sizeof *values);
    if (!values) return cli_fail_errno(ENOMEM, "cannot write '%s'", offsets_path);
    for (size_t i = 0; i <= collected->items; ++i) values[i] = (int64_t)collected->offsets[i];
    size_t offsets_shape[1] = {collected->items + 1};
    int failed = npy_write(offsets_path, "<i8", offsets_shape, 1, values, (collected->items + 1) * sizeof *values);
    free(values);
    return failed ? cli_fail_errno(errno, "cannot write '%s'", offsets_path) : 0;
}

/* A row as JSON numbers (F32 values; F16/BF16 widened; I8 as integers; B1 as 0/1 bits). */
static void print_row(FILE *out, const unsigned char *row, size_t columns, uform_scalar_kind_t scalar) {
    fputc('[', out);
    for (size_t c = 0; c < columns; ++c) {
        if (c) fputc(',', out);
        if (scalar == UFORM_SCALAR_F32) {
            float value;
            memcpy(&value, row + 4 * c, 4);
            fprintf(out, "%.9g", value); /* 9 significant digits give every float32 back exactly */
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

static int write_jsonl(const char *out, size_t count, uform_outputs_t outputs, uform_scalar_kind_t scalar,
                       const collected_t *embeddings, const collected_t *tokens, const collected_t *states) {
    FILE *file = out ? fopen(out, "w") : stdout;
    if (!file) return cli_fail_errno(errno, "cannot write '%s'", out);
    for (size_t i = 0; i < count; ++i) {
        fprintf(file, "{\"item\": %zu", i);
        if (outputs & UFORM_OUTPUTS_EMBEDDINGS) {
            fprintf(file, ", \"embedding\": ");
            print_row(file, embeddings->data + i * embeddings->row_bytes, embeddings->columns, scalar);
        }
        const collected_t *ragged[2] = {tokens, states};
        const char *keys[2] = {"tokens", "states"};
        uform_outputs_t bits[2] = {UFORM_OUTPUTS_TOKEN_VECTORS, UFORM_OUTPUTS_STATES};
        for (int k = 0; k < 2; ++k) {
            if (!(outputs & bits[k])) continue;
            fprintf(file, ", \"%s\": [", keys[k]);
            for (size_t r = ragged[k]->offsets[i]; r < ragged[k]->offsets[i + 1]; ++r) {
                if (r > ragged[k]->offsets[i]) fputc(',', file);
                print_row(file, ragged[k]->data + r * ragged[k]->row_bytes, ragged[k]->columns, k == 1 ? UFORM_SCALAR_F32 : scalar);
            }
            fputc(']', file);
        }
        fprintf(file, "}\n");
    }
    int failed = ferror(file);
    if (file != stdout && fclose(file) != 0) failed = 1;
    return failed ? cli_fail_errno(errno ? errno : EIO, "cannot write '%s'", out ? out : "stdout") : 0;
}

static int parse_outputs(const cli_command_t *command, const char *list, uform_outputs_t *outputs) {
    *outputs = 0;
    for (const char *at = list; *at;) {
        size_t length = strcspn(at, ",");
        if (length == 10 && strncmp(at, "embeddings", 10) == 0) *outputs |= UFORM_OUTPUTS_EMBEDDINGS;
        else if (length == 6 && strncmp(at, "tokens", 6) == 0) *outputs |= UFORM_OUTPUTS_TOKEN_VECTORS;
        else if (length == 6 && strncmp(at, "states", 6) == 0) *outputs |= UFORM_OUTPUTS_STATES;
        else return cli_usage_error(command, "unknown output '%.*s' (embeddings, tokens, states)", (int)length, at);
        at += length + (at[length] == ',');
    }
    return *outputs ? 0 : cli_usage_error(command, "--outputs lists nothing");
}

static int run(void *raw, const cli_parsed_t *parsed) {
    encode_options_t *options = raw;
    const cli_command_t *command = parsed->command;
    int modality = -1;
    for (int m = 0; m < 4; ++m)
        if (options->items[m].count) {
            if (modality >= 0) return cli_usage_error(command, "one modality per run");
            modality = m;
        }
    if (modality < 0) return cli_usage_error(command, "nothing to encode: give --text, --image, --video or --audio");
    uform_outputs_t outputs = UFORM_OUTPUTS_EMBEDDINGS;
    if (options->outputs && parse_outputs(command, options->outputs, &outputs)) return 2;

    items_t items = {0};
    int status = 0;
    const cli_texts_t *given = &options->items[modality];
    for (size_t i = 0; i < given->count && status == 0; ++i) {
        if (modality == UFORM_MODALITY_TEXT) {
            status = add_item(&items, given->items[i], strlen(given->items[i]));
        } else {
            size_t size = 0;
            unsigned char *bytes = cli_read_file(given->items[i], &size);
            status = bytes ? add_item(&items, bytes, size) : 1;
            free(bytes);
        }
    }
    uform_executor_t executor = NULL;
    uform_model_t model = NULL;
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    if (status == 0) status = cli_executor(options->threads, &executor);
    if (status == 0 && !(model = cli_load(parsed->positional[0], executor, cli_compute(options->compute)))) status = 1;
    if (status == 0 && uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) status = cli_fail(&outcome, NULL);

    collected_t embeddings = {0}, tokens = {0}, states = {0};
    bar_t bar = {0, (items.count + options->batch - 1) / options->batch, cli_now()};
    int interactive = isatty(2);
    cli_catch_interrupts(1);
    for (size_t first = 0; status == 0 && first < items.count; first += options->batch, ++bar.batch) {
        size_t count = items.count - first < options->batch ? items.count - first : options->batch;
        uform_tape_t tape = {items.data, items.offsets + first, count};
        uform_encode_config_t config = {options->scalar, {interactive ? progress_bar : NULL, &bar, 0}, NULL, options->dims};
        uform_encoded_t encoded;
        if (cli_encode(model, executor, arena, (uform_modality_t)modality, &tape, outputs, &config, &encoded, &outcome) != UFORM_OK) {
            if (interactive) fputc('\n', stderr);
            status = uform_outcome_status(&outcome) == UFORM_CANCELLED ? 130 : cli_fail(&outcome, NULL);
            break;
        }
        if ((outputs & UFORM_OUTPUTS_EMBEDDINGS) && collect(&embeddings, &encoded.embeddings, NULL, count)) status = 1;
        if ((outputs & UFORM_OUTPUTS_TOKEN_VECTORS) &&
            collect(&tokens, &encoded.token_vectors.matrix, encoded.token_vectors.offsets, count))
            status = 1;
        if ((outputs & UFORM_OUTPUTS_STATES) && collect(&states, &encoded.states.matrix, encoded.states.offsets, count))
            status = 1;
    }
    if (status == 0) {
        if (interactive) fprintf(stderr, "\n");
        char count[32];
        fprintf(stderr, "uform: %s items in %.2f s\n", cli_thousands(items.count, count, sizeof count), cli_now() - bar.start);
    }
    const char *out = options->out;
    size_t out_length = out ? strlen(out) : 0;
    if (status == 0 && out && out_length > 4 && strcmp(out + out_length - 4, ".npy") == 0) {
        char derived[1024];
        if (outputs & UFORM_OUTPUTS_EMBEDDINGS) status |= write_npy(out, &embeddings, options->scalar) != 0;
        snprintf(derived, sizeof derived, "%.*s.tokens.npy", (int)(out_length - 4), out);
        if (status == 0 && (outputs & UFORM_OUTPUTS_TOKEN_VECTORS)) status |= write_npy(derived, &tokens, options->scalar) != 0;
        snprintf(derived, sizeof derived, "%.*s.states.npy", (int)(out_length - 4), out);
        if (status == 0 && (outputs & UFORM_OUTPUTS_STATES)) status |= write_npy(derived, &states, UFORM_SCALAR_F32) != 0;
    } else if (status == 0) {
        status = write_jsonl(out, items.count, outputs, options->scalar, &embeddings, &tokens, &states);
    }
    free(embeddings.data), free(tokens.data), free(tokens.offsets), free(states.data), free(states.offsets);
    free(items.data), free(items.offsets);
    uform_arena_free(arena);
    uform_model_free(model);
    uform_executor_free(executor);
    return status;
}

const cli_command_t cli_encode_command = {
    .name = "encode",
    .summary = "embeddings, token vectors or states of texts, images, videos or recordings",
    .usage = "CKPT (--text T... | --image F... | --video F... | --audio F...) [options]",
    .description = "Encodes the items given (one modality per run) with CKPT, in batches, and writes the outputs\n"
                   "as JSON lines (one object per item: \"item\", \"embedding\", \"tokens\", \"states\") or .npy files.\n",
    .statuses = "0 every item encoded; 1 failed (the reason is printed: a file that cannot be read or\n"
                "decoded, a bad checkpoint); 2 usage error; 130 interrupted.",
    .flags = flags,
    .options_size = sizeof(encode_options_t),
    .defaults = defaults,
    .positional_min = 1,
    .positional_max = 1,
    .run = run,
};
