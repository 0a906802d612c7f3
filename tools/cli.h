/*
 * The `uform` command line's one flag table, parser and help (cli_flags.c), its one command
 * registry (commands.c) and the helpers every command shares (cli_common.c). docs/cli.md states the
 * conventions these implement.
 *
 * A command is a `cli_command_t`: its name, a one-line summary for `uform help`, its usage line, a
 * paragraph for `--help`, its flag table and its exit statuses, and the function that runs it. A
 * flag table is an array of `cli_flag_t`, ended by `CLI_END`; each entry names a field of the
 * command's options struct by offset, so one table drives parsing, validation of the value and the
 * `--help` text (the way git's parse-options does). Registering a command is one line in
 * commands.c.
 */
#ifndef UFORM_TOOLS_CLI_H
#define UFORM_TOOLS_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "uform/uform.h"

/* ---- flags ---- */

typedef enum cli_kind_t {
    CLI_END = 0,     /* ends a table */
    CLI_SECTION,     /* not a flag: a heading in --help (`help` is its text) */
    CLI_SWITCH,      /* no value: stores `constant` into an int */
    CLI_COMPUTE,     /* no value: --f32, --bf16, --int8 store their uform_compute_t (constant) into an int that starts at -1 */
    CLI_SIZE,        /* size_t, decimal digits */
    CLI_POSITIVE,    /* size_t >= 1 */
    CLI_U64,         /* uint64_t, decimal digits */
    CLI_NUMBER,      /* double, finite */
    CLI_POSITIVE_NUMBER, /* double > 0 */
    CLI_TEXT,        /* const char *, the argument itself */
    CLI_TEXTS,       /* repeatable: appended to a cli_texts_t */
    CLI_VALUES,      /* every argument up to the next flag: appended to a cli_texts_t (`encode --text a b c`) */
    CLI_SCALAR,      /* uform_scalar_kind_t: f32, f16, bf16, i8, b1 */
    CLI_MODALITIES,  /* unsigned: bits (1 << uform_modality_t) of a list "text,image,video,audio" */
    CLI_OPTIONAL_TEXT, /* const char *: the bare flag stores "" (the default), `--flag=VALUE` stores VALUE; the
                         next argument is never taken (it could be an input: `index --ann photos/`) */
    CLI_BYTES        /* size_t: decimal digits with an optional K, M or G (powers of 1024) and an optional B */
} cli_kind_t;

typedef struct cli_texts_t {
    const char **items; /* borrowed from argv; the array is the parser's (cli_texts_free) */
    size_t count;
} cli_texts_t;

typedef struct cli_flag_t {
    const char *name;   /* "--batch"; NULL for a section */
    cli_kind_t kind;
    size_t offset;      /* of the field in the command's options struct */
    const char *value;  /* the value's name in --help ("N", "PATH"); NULL for switches */
    const char *help;   /* what it does and its default; '\n' starts a continuation line */
    int constant;       /* CLI_SWITCH and CLI_COMPUTE: the value stored */
} cli_flag_t;

#define CLI_FLAG(name, kind, type, field, value, help) {name, kind, offsetof(type, field), value, help, 0}
#define CLI_SWITCH_FLAG(name, type, field, help) {name, CLI_SWITCH, offsetof(type, field), NULL, help, 1}
#define CLI_HEADING(text) {NULL, CLI_SECTION, 0, NULL, text, 0}
#define CLI_FLAGS_END {NULL, CLI_END, 0, NULL, NULL, 0}

/* The flags every command that has them spells and means the same way (docs/cli.md). */
#define CLI_THREADS(type, field) CLI_FLAG("--threads", CLI_SIZE, type, field, "N", "compute threads (default 0: the library's choice, 7/8 of the cores)")
#define CLI_COMPUTE_FLAGS(type, field)                                                                                  \
    {"--bf16", CLI_COMPUTE, offsetof(type, field), NULL,                                                                \
     "BF16 matrix products (F32 accumulation; ~1e-2 relative from F32)", 1},                                            \
    {"--f32", CLI_COMPUTE, offsetof(type, field), NULL,                                                                 \
     "F32 matrix products (the default, as in C and Python)", 0}
/* Commands that only run a model (not train) also take --int8: I8 compute (docs/int8.md). */
#define CLI_INFERENCE_COMPUTE_FLAGS(type, field)                                                                        \
    CLI_COMPUTE_FLAGS(type, field),                                                                                     \
    {"--int8", CLI_COMPUTE, offsetof(type, field), NULL,                                                                \
     "I8 compute: the trunk's matrix products in int8, per-channel weights and per-row\n"                               \
     "activations (fastest; embeddings within cosine ~0.999 of F32's; docs/int8.md)", 2}
#define CLI_QUIET(type, field) CLI_SWITCH_FLAG("--quiet", type, field, "no progress and no summary")
#define CLI_JSON(type, field) CLI_SWITCH_FLAG("--json", type, field, "JSON lines on stdout, one object per result")
#define CLI_SEED(type, field) CLI_FLAG("--seed", CLI_U64, type, field, "N", "random seed (default 0)")
#define CLI_DIMS(type, field) CLI_FLAG("--dims", CLI_SIZE, type, field, "N", "a Matryoshka prefix of the embeddings (default 0: the full width)")
#define CLI_SCALAR_FLAG(type, field) CLI_FLAG("--scalar", CLI_SCALAR, type, field, "KIND", "f32, f16, bf16, i8 or b1 (default f32)")

/* ---- commands ---- */

typedef struct cli_command_t cli_command_t;

/* What a parse found beyond the options struct: positional arguments and which flags were given. */
typedef struct cli_parsed_t {
    const cli_command_t *command;
    int argc;                /* the command's arguments as given (argv[0] is its name) */
    char **argv;
    const char **positional; /* borrowed from argv */
    size_t positional_count;
    unsigned char given[128]; /* by index in the command's table */
} cli_parsed_t;

struct cli_command_t {
    const char *name;         /* "encode" */
    const char *summary;      /* one line for `uform help` */
    const char *usage;        /* what follows "uform NAME " in the usage line */
    const char *description;  /* the paragraph --help prints before the flags */
    const char *epilogue;     /* printed after the flags (formats, examples); may be NULL */
    const char *statuses;     /* the exit statuses, for --help */
    const cli_flag_t *flags;  /* ended by CLI_FLAGS_END */
    size_t options_size;      /* sizeof the options struct */
    void (*defaults)(void *options);  /* may be NULL: zeroed options */
    size_t positional_min, positional_max; /* SIZE_MAX: unbounded */
    int (*run)(void *options, const cli_parsed_t *parsed);
    const char *program;      /* NULL: runs in `uform`; else the program next to `uform` that runs it */
};

/* Every command, in the order `uform help` lists them; NULL-terminated (commands.c). */
extern const cli_command_t *const cli_commands[];
const cli_command_t *cli_command_find(const char *name);

/* Parses argv (argv[0] is the command's name) into `options` (set to the defaults first) and
 * `parsed`. Answers -1 when parsed (run the command), 0 after --help (printed to stdout), 2 after
 * printing the short usage and what was wrong to stderr, or 1 when memory ran out (said on stderr:
 * never reported as a usage error). On -1 free with cli_parsed_free. */
int cli_parse(const cli_command_t *command, int argc, char **argv, void *options, cli_parsed_t *parsed);
void cli_parsed_free(const cli_command_t *command, void *options, cli_parsed_t *parsed);

/* Parses argv (argv[0] is the command's name) and runs the command; answers its exit status. */
int cli_run(const cli_command_t *command, int argc, char **argv);

/* Whether flag `name` was on the command line. */
int cli_given(const cli_parsed_t *parsed, const char *name);

/* Prints the command's full help (usage, description, every flag with its default, statuses). */
void cli_help(const cli_command_t *command, FILE *out);

/* Prints the short usage and "uform NAME: why (see uform NAME --help)" to stderr; answers 2. */
int cli_usage_error(const cli_command_t *command, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* The parsers behind the kinds, for commands that validate a value themselves; each answers 0. */
int cli_parse_size(const char *text, size_t *value);
int cli_parse_number(const char *text, double *value);
/* Bytes: digits, then optionally K, M or G (either case; powers of 1024) and B ("32M", "64KB"). */
int cli_parse_bytes(const char *text, size_t *value);
int cli_parse_scalar(const char *text, uform_scalar_kind_t *scalar);
int cli_parse_modalities(const char *text, unsigned *bits);
const char *cli_modality_name(uform_modality_t modality);
const char *cli_scalar_name(uform_scalar_kind_t scalar);

/* ---- shared helpers (cli_common.c) ---- */

/* Seconds on the monotonic clock. */
double cli_now(void);

/* Prints "uform: <outcome line>" (and " (context)" when given) on stderr; answers 1. */
int cli_fail(const uform_outcome_t *outcome, const char *context);
/* Prints "uform: <what>: <strerror(error)>" on stderr; answers 1. */
int cli_fail_errno(int error, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Reads a whole file. On failure prints "uform: cannot read 'PATH': <reason>" (out of memory reads
 * "Cannot allocate memory") and answers NULL. Free the bytes with free(). */
unsigned char *cli_read_file(const char *path, size_t *size);

/* The compute a command uses: `choice` as a CLI_COMPUTE field holds it (-1: not given, else a
 * uform_compute_t: 0 F32, 1 BF16, 2 I8), else uform_compute_best's answer (F32), the default of every
 * entry point. */
uform_compute_t cli_compute(int choice);
/* "f32", "bf16" or "i8". */
const char *cli_compute_name(uform_compute_t compute);

/* Makes an executor of `threads` (0: the library's choice); answers 0, or 1 after printing the failure. */
int cli_executor(size_t threads, uform_executor_t *executor);
/* Loads a checkpoint on `executor`; prints the failure and answers NULL. */
uform_model_t cli_load(const char *path, uform_executor_t executor, uform_compute_t compute);

/* Encodes one tape of `modality` with the verb of that modality. Answers the call's status; the
 * outputs land in `*encoded`, the outcome in `*outcome`. */
uform_status_t cli_encode(uform_model_t model, uform_executor_t executor, uform_arena_t arena, uform_modality_t modality,
                          const uform_tape_t *tape, uform_outputs_t outputs, const uform_encode_config_t *config,
                          uform_encoded_t *encoded, uform_outcome_t *outcome);

/* The kind of dataset a path names: a folder is FOLDER, a path with ".tar" in it (a shard or a
 * shard list) SHARDS, anything else a MANIFEST. */
uform_dataset_source_t cli_source_of(const char *path);
/* Opens a dataset of `source` over `path` with `options`' other fields; prints the failure (with
 * where it is) and answers NULL. */
uform_dataset_t cli_dataset_open(const char *path, uform_dataset_source_t source, const uform_dataset_options_t *options);

/* Writes `length` bytes as a JSON string (quotes included): ", \ and control bytes escaped, bytes
 * that are not valid UTF-8 as \u00XX of their value, so any path round-trips to readable JSON. */
void cli_json_string(FILE *out, const char *bytes, size_t length);

/* "1,234,567" into `buffer`; answers `buffer`. */
const char *cli_thousands(size_t value, char *buffer, size_t capacity);
/* "3.2 s", "4m05s", "1h02m" into `buffer`; answers `buffer`. */
const char *cli_duration(double seconds, char *buffer, size_t capacity);

/* Ctrl-C (and SIGTERM when `terminate_too`) set `cli_interrupted` once cli_catch_interrupts has
 * installed the handler. */
extern volatile sig_atomic_t cli_interrupted;
void cli_catch_interrupts(int terminate_too);

#endif
