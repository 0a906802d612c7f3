/* Helpers every `uform` command shares (cli.h): clocks, failures, files, compute, model loading. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "utf8.h"

double cli_now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

int cli_fail(const uform_outcome_t *outcome, const char *context) {
    char line[640];
    uform_outcome_format(outcome, line, sizeof line);
    if (context) fprintf(stderr, "uform: %s (%s)\n", line, context);
    else fprintf(stderr, "uform: %s\n", line);
    return 1;
}

int cli_fail_errno(int error, const char *format, ...) {
    char what[1024];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(what, sizeof what, format, arguments);
    va_end(arguments);
    fprintf(stderr, "uform: %s: %s\n", what, strerror(error));
    return 1;
}

unsigned char *cli_read_file(const char *path, size_t *size) {
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) {
        cli_fail_errno(errno, "cannot open '%s'", path);
        return NULL;
    }
    struct stat info;
    size_t capacity = fstat(descriptor, &info) == 0 && S_ISREG(info.st_mode) ? (size_t)info.st_size + 1 : 65536;
    unsigned char *bytes = malloc(capacity);
    size_t used = 0;
    int error = bytes ? 0 : ENOMEM;
    while (!error) {
        if (used == capacity) {
            unsigned char *grown = realloc(bytes, capacity * 2);
            if (!grown) {
                error = ENOMEM;
                break;
            }
            bytes = grown, capacity *= 2;
        }
        ssize_t got = read(descriptor, bytes + used, capacity - used);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) error = errno;
        if (got <= 0) break;
        used += (size_t)got;
    }
    close(descriptor);
    if (error) {
        free(bytes);
        cli_fail_errno(error, "cannot read '%s'", path);
        return NULL;
    }
    *size = used;
    return bytes;
}

uform_compute_t cli_compute(int choice) {
    if (choice == UFORM_COMPUTE_F32 || choice == UFORM_COMPUTE_BF16 || choice == UFORM_COMPUTE_I8) return (uform_compute_t)choice;
    return uform_compute_best(UFORM_CPU_CLASS_UNKNOWN);
}

const char *cli_compute_name(uform_compute_t compute) {
    return compute == UFORM_COMPUTE_BF16 ? "bf16" : compute == UFORM_COMPUTE_I8 ? "i8" : "f32";
}

int cli_executor(size_t threads, uform_executor_t *executor) {
    uform_outcome_t outcome = {0};
    *executor = NULL;
    return uform_executor_for_ram(NULL, threads, 0, executor, &outcome) == UFORM_OK ? 0 : cli_fail(&outcome, NULL);
}

uform_model_t cli_load(const char *path, uform_executor_t executor, uform_compute_t compute) {
    uform_outcome_t outcome = {0};
    uform_ram_options_t options = {0};
    options.compute = compute;
    uform_model_t model = NULL;
    if (uform_model_load_ram(executor, path, &options, &model, &outcome) != UFORM_OK) cli_fail(&outcome, NULL);
    return model;
}

uform_status_t cli_encode(uform_model_t model, uform_executor_t executor, uform_arena_t arena, uform_modality_t modality,
                          const uform_tape_t *tape, uform_outputs_t outputs, const uform_encode_config_t *config,
                          uform_encoded_t *encoded, uform_outcome_t *outcome) {
    uform_encode_config_t zeroed = {0};
    if (!config) config = &zeroed;
    uform_status_t status;
    switch (modality) {
    case UFORM_MODALITY_TEXT: {
        uform_text_encode_t request = {model, executor, UFORM_COMPLETION_BLOCKING, *tape, outputs, arena, *config};
        status = uform_text_encode(&request), *encoded = request.encoded, *outcome = request.outcome;
        break;
    }
    case UFORM_MODALITY_IMAGE: {
        uform_image_encode_t request = {model, executor, UFORM_COMPLETION_BLOCKING, *tape, outputs, arena, *config};
        status = uform_image_encode(&request), *encoded = request.encoded, *outcome = request.outcome;
        break;
    }
    case UFORM_MODALITY_VIDEO: {
        uform_video_encode_t request = {model, executor, UFORM_COMPLETION_BLOCKING, *tape, outputs, arena, *config};
        status = uform_video_encode(&request), *encoded = request.encoded, *outcome = request.outcome;
        break;
    }
    default: {
        uform_audio_encode_t request = {model, executor, UFORM_COMPLETION_BLOCKING, *tape, outputs, arena, *config};
        status = uform_audio_encode(&request), *encoded = request.encoded, *outcome = request.outcome;
        break;
    }
    }
    return status;
}

void cli_json_string(FILE *out, const char *bytes, size_t length) {
    const unsigned char *at = (const unsigned char *)bytes, *end = at + length;
    fputc('"', out);
    while (at < end) {
        const char *piece;
        size_t piece_length;
        char scratch[8];
        at += cli_json_piece(at, end, &piece, &piece_length, scratch);
        fwrite(piece, 1, piece_length, out);
    }
    fputc('"', out);
}

const char *cli_thousands(size_t value, char *buffer, size_t capacity) {
    char digits[32];
    int length = snprintf(digits, sizeof digits, "%zu", value);
    size_t used = 0;
    for (int i = 0; i < length && used + 2 < capacity; ++i) {
        if (i && (length - i) % 3 == 0) buffer[used++] = ',';
        buffer[used++] = digits[i];
    }
    buffer[used] = 0;
    return buffer;
}

const char *cli_duration(double seconds, char *buffer, size_t capacity) {
    if (seconds < 0 || seconds != seconds) seconds = 0;
    if (seconds < 60) snprintf(buffer, capacity, "%.1f s", seconds);
    else if (seconds < 3600) snprintf(buffer, capacity, "%dm%02ds", (int)seconds / 60, (int)seconds % 60);
    else snprintf(buffer, capacity, "%dh%02dm", (int)(seconds / 3600), (int)seconds % 3600 / 60);
    return buffer;
}

volatile sig_atomic_t cli_interrupted = 0;

static void on_interrupt(int signal_number) { (void)signal_number, cli_interrupted = 1; }

void cli_catch_interrupts(int terminate_too) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_interrupt;
    sigaction(SIGINT, &action, NULL);
    if (terminate_too) sigaction(SIGTERM, &action, NULL);
}

uform_dataset_source_t cli_source_of(const char *path) {
    struct stat info;
    if (stat(path, &info) == 0 && S_ISDIR(info.st_mode)) return UFORM_DATASET_FOLDER;
    return strstr(path, ".tar") ? UFORM_DATASET_SHARDS : UFORM_DATASET_MANIFEST;
}

uform_dataset_t cli_dataset_open(const char *path, uform_dataset_source_t source, const uform_dataset_options_t *options) {
    uform_dataset_options_t opened = options ? *options : (uform_dataset_options_t){0};
    opened.source = source, opened.path = path, opened.paths = NULL, opened.path_count = 0;
    uform_dataset_t dataset = NULL;
    uform_data_error_t error;
    uform_outcome_t outcome = {0};
    if (uform_dataset_open(&opened, &dataset, &error, &outcome) != UFORM_OK) cli_fail(&outcome, NULL);
    return dataset;
}

