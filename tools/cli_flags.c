/* The one flag parser and help writer of the `uform` command line (cli.h). Knows no command. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const scalar_names[5] = {"f32", "f16", "bf16", "i8", "b1"};
static const char *const modality_names[4] = {"text", "image", "video", "audio"};

int cli_parse_size(const char *text, size_t *value) {
    if (!text || *text < '0' || *text > '9') return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long parsed = strtoull(text, &end, 10);
    if (!end || *end || errno || parsed > SIZE_MAX) return -1;
    *value = (size_t)parsed;
    return 0;
}

int cli_parse_number(const char *text, double *value) {
    if (!text || !*text) return -1;
    char *end = NULL;
    errno = 0;
    double parsed = strtod(text, &end);
    if (!end || *end || errno || !isfinite(parsed)) return -1;
    *value = parsed;
    return 0;
}

int cli_parse_bytes(const char *text, size_t *value) {
    if (!text || *text < '0' || *text > '9') return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long parsed = strtoull(text, &end, 10);
    if (!end || errno) return -1;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10, ++end;
    else if (*end == 'M' || *end == 'm') shift = 20, ++end;
    else if (*end == 'G' || *end == 'g') shift = 30, ++end;
    if (*end == 'B' || *end == 'b') ++end;
    if (*end || parsed > (SIZE_MAX >> shift)) return -1;
    *value = (size_t)parsed << shift;
    return 0;
}

int cli_parse_scalar(const char *text, uform_scalar_kind_t *scalar) {
    for (int i = 0; i < 5; ++i)
        if (text && strcmp(text, scalar_names[i]) == 0) {
            *scalar = (uform_scalar_kind_t)i;
            return 0;
        }
    return -1;
}

int cli_parse_modalities(const char *text, unsigned *bits) {
    *bits = 0;
    if (!text || !*text) return -1;
    for (const char *at = text; *at;) {
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

const char *cli_modality_name(uform_modality_t modality) {
    return (unsigned)modality < 4 ? modality_names[modality] : "unknown";
}

const char *cli_scalar_name(uform_scalar_kind_t scalar) { return (unsigned)scalar < 5 ? scalar_names[scalar] : "unknown"; }

/* ---- usage and help ---- */

int cli_usage_error(const cli_command_t *command, const char *format, ...) {
    char why[512];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(why, sizeof why, format, arguments);
    va_end(arguments);
    fprintf(stderr, "usage: uform %s %s\nuform %s: %s (see uform %s --help)\n", command->name, command->usage, command->name, why,
            command->name);
    return 2;
}

/* Prints `text` with every line after the first indented by `indent` spaces. */
static void print_indented(FILE *out, const char *text, int indent) {
    for (const char *at = text; *at;) {
        size_t length = strcspn(at, "\n");
        fprintf(out, "%.*s\n", (int)length, at);
        at += length;
        if (*at == '\n') {
            ++at;
            fprintf(out, "%*s", indent, "");
        }
    }
}

void cli_help(const cli_command_t *command, FILE *out) {
    enum { column = 24 };
    fprintf(out, "usage: uform %s %s\n\n", command->name, command->usage);
    if (command->description) fprintf(out, "%s\n", command->description);
    fprintf(out, "options:\n");
    for (const cli_flag_t *flag = command->flags; flag->kind != CLI_END; ++flag) {
        if (flag->kind == CLI_SECTION) {
            fprintf(out, "\n%s\n", flag->help);
            continue;
        }
        char left[96];
        int width = snprintf(left, sizeof left, "  %s%s%s", flag->name,
                             flag->value && flag->kind != CLI_OPTIONAL_TEXT ? " " : "", flag->value ? flag->value : "");
        if (width >= column - 1) fprintf(out, "%s\n%*s", left, column, "");
        else fprintf(out, "%-*s", column, left);
        print_indented(out, flag->help, column);
    }
    fprintf(out, "  %-*s%s\n", column - 2, "--help", "this text");
    if (command->epilogue) fprintf(out, "\n%s", command->epilogue);
    if (command->statuses) {
        fprintf(out, "\nexit status: ");
        print_indented(out, command->statuses, 2);
    }
}

/* ---- parsing ---- */

static const char *expected_of(cli_kind_t kind) {
    switch (kind) {
    case CLI_SIZE: return "a non-negative integer";
    case CLI_POSITIVE: return "a positive integer";
    case CLI_U64: return "a non-negative integer";
    case CLI_NUMBER: return "a number";
    case CLI_POSITIVE_NUMBER: return "a positive number";
    case CLI_SCALAR: return "f32, f16, bf16, i8 or b1";
    case CLI_MODALITIES: return "a list of text, image, video, audio";
    case CLI_BYTES: return "bytes, with K, M or G";
    default: return "a value";
    }
}

static int append_text(cli_texts_t *texts, const char *text) {
    const char **grown = realloc(texts->items, (texts->count + 1) * sizeof *grown);
    if (!grown) return -1;
    texts->items = grown;
    texts->items[texts->count++] = text;
    return 0;
}

/* Stores `value` into the flag's field; answers 0, -1 for a value the kind refuses, or -2 when a
 * list could not grow (out of memory). */
static int store(const cli_flag_t *flag, void *options, const char *value) {
    void *field = (char *)options + flag->offset;
    switch (flag->kind) {
    case CLI_SIZE: return cli_parse_size(value, field);
    case CLI_POSITIVE: return cli_parse_size(value, field) || *(size_t *)field == 0 ? -1 : 0;
    case CLI_U64: {
        size_t parsed;
        if (cli_parse_size(value, &parsed)) return -1;
        *(uint64_t *)field = parsed;
        return 0;
    }
    case CLI_NUMBER: return cli_parse_number(value, field);
    case CLI_POSITIVE_NUMBER: return cli_parse_number(value, field) || !(*(double *)field > 0) ? -1 : 0;
    case CLI_TEXT: *(const char **)field = value; return 0;
    case CLI_TEXTS: return append_text(field, value) ? -2 : 0;
    case CLI_SCALAR: return cli_parse_scalar(value, field);
    case CLI_MODALITIES: return cli_parse_modalities(value, field);
    case CLI_BYTES: return cli_parse_bytes(value, field);
    default: return -1;
    }
}

static const cli_flag_t *find_flag(const cli_command_t *command, const char *name, size_t length, size_t *index) {
    size_t i = 0;
    for (const cli_flag_t *flag = command->flags; flag->kind != CLI_END; ++flag, ++i)
        if (flag->name && strlen(flag->name) == length && strncmp(flag->name, name, length) == 0) {
            *index = i;
            return flag;
        }
    return NULL;
}

int cli_given(const cli_parsed_t *parsed, const char *name) {
    size_t index;
    return find_flag(parsed->command, name, strlen(name), &index) && index < sizeof parsed->given && parsed->given[index];
}

void cli_parsed_free(const cli_command_t *command, void *options, cli_parsed_t *parsed) {
    for (const cli_flag_t *flag = command->flags; flag->kind != CLI_END; ++flag)
        if (flag->kind == CLI_TEXTS || flag->kind == CLI_VALUES) {
            cli_texts_t *texts = (cli_texts_t *)((char *)options + flag->offset);
            free(texts->items);
            texts->items = NULL, texts->count = 0;
        }
    free(parsed->positional);
    memset(parsed, 0, sizeof *parsed);
}

/* The name of the CLI_COMPUTE flag of `command` that stores `constant` at `offset`. */
static const char *compute_flag_name(const cli_command_t *command, size_t offset, int constant) {
    for (const cli_flag_t *flag = command->flags; flag->kind != CLI_END; ++flag)
        if (flag->kind == CLI_COMPUTE && flag->offset == offset && flag->constant == constant) return flag->name;
    return "another compute flag";
}

static int refuse(const cli_command_t *command, void *options, cli_parsed_t *parsed, int status) {
    cli_parsed_free(command, options, parsed);
    return status;
}

/* A list of values could not grow: a failure (1), said as one, never a usage error about the
 * arguments, which were fine. */
static int out_of_memory(const cli_command_t *command, void *options, cli_parsed_t *parsed, const char *flag) {
    fprintf(stderr, "uform %s: cannot keep the values of %s: %s\n", command->name, flag, strerror(ENOMEM));
    return refuse(command, options, parsed, 1);
}

int cli_parse(const cli_command_t *command, int argc, char **argv, void *options, cli_parsed_t *parsed) {
    memset(options, 0, command->options_size);
    memset(parsed, 0, sizeof *parsed);
    parsed->command = command, parsed->argc = argc, parsed->argv = argv;
    for (const cli_flag_t *flag = command->flags; flag->kind != CLI_END; ++flag)
        if (flag->kind == CLI_COMPUTE) *(int *)((char *)options + flag->offset) = -1;
    if (command->defaults) command->defaults(options);
    parsed->positional = calloc((size_t)argc + 1, sizeof *parsed->positional);
    if (!parsed->positional) return (fprintf(stderr, "uform %s: out of memory\n", command->name), 1);
    int flags_end = 0;
    for (int i = 1; i < argc; ++i) {
        const char *argument = argv[i];
        if (flags_end || argument[0] != '-' || argument[1] == '\0') {
            parsed->positional[parsed->positional_count++] = argument;
            continue;
        }
        if (strcmp(argument, "--") == 0) {
            flags_end = 1;
            continue;
        }
        if (strcmp(argument, "--help") == 0 || strcmp(argument, "-h") == 0) {
            cli_help(command, stdout);
            return refuse(command, options, parsed, 0);
        }
        const char *equals = strchr(argument, '=');
        size_t length = equals ? (size_t)(equals - argument) : strlen(argument), index = 0;
        const cli_flag_t *flag = find_flag(command, argument, length, &index);
        if (!flag) return refuse(command, options, parsed, cli_usage_error(command, "unknown flag %.*s", (int)length, argument));
        if (index < sizeof parsed->given) parsed->given[index] = 1;
        void *field = (char *)options + flag->offset;
        if (flag->kind == CLI_SWITCH || flag->kind == CLI_COMPUTE) {
            if (equals) return refuse(command, options, parsed, cli_usage_error(command, "%s takes no value", flag->name));
            if (flag->kind == CLI_COMPUTE && *(int *)field != -1 && *(int *)field != flag->constant)
                return refuse(command, options, parsed,
                              cli_usage_error(command, "%s and %s exclude each other (one compute per model)",
                                              compute_flag_name(command, flag->offset, *(int *)field), flag->name));
            *(int *)field = flag->constant;
            continue;
        }
        if (flag->kind == CLI_OPTIONAL_TEXT) {
            *(const char **)field = equals ? equals + 1 : "";
            continue;
        }
        if (flag->kind == CLI_VALUES) {
            size_t before = ((cli_texts_t *)field)->count;
            if (equals && append_text(field, equals + 1)) return out_of_memory(command, options, parsed, flag->name);
            while (!equals && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                if (append_text(field, argv[++i])) return out_of_memory(command, options, parsed, flag->name);
            if (((cli_texts_t *)field)->count == before)
                return refuse(command, options, parsed, cli_usage_error(command, "%s needs at least one value", flag->name));
            continue;
        }
        const char *value = equals ? equals + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!value) return refuse(command, options, parsed, cli_usage_error(command, "%s needs a value", flag->name));
        int stored = store(flag, options, value);
        if (stored == -2) return out_of_memory(command, options, parsed, flag->name);
        if (stored != 0)
            return refuse(command, options, parsed,
                          cli_usage_error(command, "%s %s is not a valid value (%s)", flag->name, value, expected_of(flag->kind)));
    }
    if (parsed->positional_count < command->positional_min)
        return refuse(command, options, parsed, cli_usage_error(command, "missing arguments"));
    if (parsed->positional_count > command->positional_max)
        return refuse(command, options, parsed, cli_usage_error(command, "unexpected argument '%s'",
                                                                parsed->positional[command->positional_max]));
    return -1;
}

int cli_run(const cli_command_t *command, int argc, char **argv) {
    void *options = calloc(1, command->options_size ? command->options_size : 1);
    if (!options) {
        fprintf(stderr, "uform %s: cannot start: %s\n", command->name, strerror(ENOMEM));
        return 1;
    }
    cli_parsed_t parsed;
    int status = cli_parse(command, argc, argv, options, &parsed);
    if (status == -1) {
        status = command->run(options, &parsed);
        cli_parsed_free(command, options, &parsed);
    }
    free(options);
    return status;
}
