/* Helpers the `uform` commands share (see uform_tool.h). */
#include "uform_tool.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int uform_tool_fail(const uform_outcome_t *outcome, const char *context) {
    char line[640];
    uform_outcome_format(outcome, line, sizeof line);
    if (context) fprintf(stderr, "uform: %s (%s)\n", line, context);
    else fprintf(stderr, "uform: %s\n", line);
    return 1;
}

int uform_tool_parse_size(const char *text, size_t *value) {
    if (!text || *text < '0' || *text > '9') return -1;
    char *end = NULL;
    unsigned long long parsed = strtoull(text, &end, 10);
    if (!end || *end) return -1;
    *value = (size_t)parsed;
    return 0;
}

static const char *const scalar_names[5] = {"f32", "f16", "bf16", "i8", "b1"};
static const char *const modality_names[4] = {"text", "image", "video", "audio"};

int uform_tool_parse_scalar(const char *text, uform_scalar_kind_t *scalar) {
    for (int i = 0; i < 5; ++i)
        if (text && strcmp(text, scalar_names[i]) == 0) {
            *scalar = (uform_scalar_kind_t)i;
            return 0;
        }
    return -1;
}

int uform_tool_parse_modalities(const char *text, unsigned *bits) {
    *bits = 0;
    if (!text || !*text) return -1;
    const char *at = text;
    while (*at) {
        size_t length = strcspn(at, ",");
        int found = -1;
        for (int m = 0; m < 4; ++m)
            if (strlen(modality_names[m]) == length && strncmp(at, modality_names[m], length) == 0) found = m;
        if (found < 0) return -1;
        *bits |= 1u << found;
        at += length;
        if (*at == ',') ++at;
    }
    return 0;
}

const char *uform_tool_modality_name(uform_modality_t modality) {
    return (unsigned)modality < 4 ? modality_names[modality] : "unknown";
}

const char *uform_tool_scalar_name(uform_scalar_kind_t scalar) {
    return (unsigned)scalar < 5 ? scalar_names[scalar] : "unknown";
}

uform_model_t uform_tool_load(const char *path, uform_executor_t executor, uform_compute_t compute) {
    uform_outcome_t outcome = {0};
    uform_ram_options_t options = {0};
    options.compute = compute;
    uform_model_t model = NULL;
    if (uform_model_load_ram(executor, path, &options, &model, &outcome) != UFORM_OK) uform_tool_fail(&outcome, NULL);
    return model;
}

int uform_tool_compute_flag(const char *flag, uform_compute_t *compute) {
    uform_compute_t wanted = strcmp(flag, "--bf16") == 0 ? UFORM_COMPUTE_BF16 : strcmp(flag, "--int8") == 0 ? UFORM_COMPUTE_I8
                                                                                                          : UFORM_COMPUTE_F32;
    if (wanted == UFORM_COMPUTE_F32) return 0;
    if (*compute != UFORM_COMPUTE_F32 && *compute != wanted) {
        fprintf(stderr, "uform: --bf16 and --int8 exclude each other (one compute per model)\n");
        return -1;
    }
    *compute = wanted;
    return 1;
}

const char *uform_tool_compute_name(uform_compute_t compute) {
    return compute == UFORM_COMPUTE_BF16 ? "bf16" : compute == UFORM_COMPUTE_I8 ? "i8" : "f32";
}

double uform_tool_now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

size_t uform_tool_utf8_length(const unsigned char *bytes, size_t available) {
    unsigned char lead = bytes[0];
    size_t length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
    if (length == 0 || lead > 0xF4 || length > available) return 0;
    for (size_t i = 1; i < length; ++i)
        if ((bytes[i] & 0xC0) != 0x80) return 0;
    if (length == 3 && ((lead == 0xE0 && bytes[1] < 0xA0) || (lead == 0xED && bytes[1] >= 0xA0))) return 0;
    if (length == 4 && ((lead == 0xF0 && bytes[1] < 0x90) || (lead == 0xF4 && bytes[1] >= 0x90))) return 0;
    return length;
}

void uform_tool_json_string(FILE *out, const char *bytes, size_t length) {
    const unsigned char *at = (const unsigned char *)bytes, *end = at + length;
    fputc('"', out);
    while (at < end) {
        unsigned char byte = *at;
        size_t run = uform_tool_utf8_length(at, (size_t)(end - at));
        if (byte == '"' || byte == '\\') fprintf(out, "\\%c", byte), at += 1;
        else if (byte == '\n') fputs("\\n", out), at += 1;
        else if (byte == '\t') fputs("\\t", out), at += 1;
        else if (byte < 0x20 || byte == 0x7F || run == 0) fprintf(out, "\\u%04x", byte), at += 1;
        else fwrite(at, 1, run, out), at += run;
    }
    fputc('"', out);
}

const char *uform_tool_thousands(size_t value, char *buffer, size_t capacity) {
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

const char *uform_tool_duration(double seconds, char *buffer, size_t capacity) {
    if (seconds < 0 || seconds != seconds) seconds = 0;
    if (seconds < 60) snprintf(buffer, capacity, "%.1f s", seconds);
    else if (seconds < 3600) snprintf(buffer, capacity, "%dm%02ds", (int)seconds / 60, (int)seconds % 60);
    else snprintf(buffer, capacity, "%dh%02dm", (int)(seconds / 3600), (int)seconds % 3600 / 60);
    return buffer;
}
