/*
 * Helpers the `uform` commands share (tools/uform_tool.c), and the entry points of the commands
 * that live in their own files: `uform index` (uform_index.c, uform_index_reader.c) and
 * `uform search` (uform_search.c). Every command is a thin client of the public ABI.
 */
#ifndef UFORM_TOOLS_UFORM_TOOL_H
#define UFORM_TOOLS_UFORM_TOOL_H

#include <stddef.h>
#include <stdio.h>

#include "uform/uform.h"

/* `uform index ...` and `uform search ...`: argv[1] is the command; answer the exit status. */
int uform_tool_index(int argc, char **argv);
int uform_tool_search(int argc, char **argv);

/* Prints "uform: <outcome line>" (and " (context)" when given) on stderr; answers 1. */
int uform_tool_fail(const uform_outcome_t *outcome, const char *context);

/* A decimal size_t, nothing else; answers 0 on success. */
int uform_tool_parse_size(const char *text, size_t *value);
/* f32|f16|bf16|i8|b1; answers 0 on success. */
int uform_tool_parse_scalar(const char *text, uform_scalar_kind_t *scalar);
/* A comma-separated list of text, image, video, audio into bits (1 << modality); answers 0 on success. */
int uform_tool_parse_modalities(const char *text, unsigned *bits);
const char *uform_tool_modality_name(uform_modality_t modality);
const char *uform_tool_scalar_name(uform_scalar_kind_t scalar);

/* Loads a checkpoint on `executor` with `compute`; prints the failure and answers NULL. */
uform_model_t uform_tool_load(const char *path, uform_executor_t executor, uform_compute_t compute);

/* The compute flags every command that loads a model takes: --bf16 (BF16 compute) and --int8 (I8
 * compute, docs/int8.md). Answers 1 when `flag` is one of them (setting `*compute`), 0 when it is
 * not, and -1 (printed) when the other one came first: they exclude each other. */
int uform_tool_compute_flag(const char *flag, uform_compute_t *compute);
/* "f32", "bf16" or "i8". */
const char *uform_tool_compute_name(uform_compute_t compute);

/* Seconds on the monotonic clock. */
double uform_tool_now(void);

/* The length of the valid UTF-8 sequence at `bytes` (1..4; overlong forms, surrogates and values
 * above U+10FFFF are not valid), or 0 when none starts there. `available` must be at least 1. */
size_t uform_tool_utf8_length(const unsigned char *bytes, size_t available);

/* Writes `length` bytes as a JSON string (quotes included): ", \ and control bytes escaped,
 * bytes that are not valid UTF-8 as \u00XX of their value, so any path round-trips to readable JSON. */
void uform_tool_json_string(FILE *out, const char *bytes, size_t length);

/* "1,234,567" into `buffer`; answers `buffer`. */
const char *uform_tool_thousands(size_t value, char *buffer, size_t capacity);
/* "3.2 s", "4m05s", "1h02m" into `buffer`; answers `buffer`. */
const char *uform_tool_duration(double seconds, char *buffer, size_t capacity);

#endif
