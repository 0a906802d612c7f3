/*
 * JSON through cJSON, telling a malformed text from memory exhaustion. cJSON answers NULL for
 * both, so a checkpoint whose header could not be parsed for lack of memory would otherwise be
 * reported as corrupt — and a user told their checkpoint is corrupt deletes a good file.
 * Private to libuform.
 */
#ifndef UFORM_IO_JSON_H
#define UFORM_IO_JSON_H

#include <cJSON.h>
#include <stddef.h>

#include "uform/uform.h"

/*
 * Parses the first JSON value in `length` bytes at `text` with cJSON_ParseWithLengthOpts (bytes
 * after that value are left alone, as cJSON leaves them; `*end` points past the value).
 * Answers UFORM_OK with `*root` (free it with cJSON_Delete); UFORM_FORMAT when the text is not a
 * JSON value cJSON accepts (`*error_at`: the byte offset cJSON stopped at); UFORM_OUT_OF_MEMORY
 * when the text is well-formed and cJSON failed because an allocation did (errno ENOMEM). A
 * failure is classified by re-reading the text with uform__json_check, which allocates nothing.
 * `end` and `error_at` may be NULL.
 */
uform_status_t uform__json_parse(const char *text, size_t length, cJSON **root, const char **end, size_t *error_at);

/*
 * Whether cJSON 1.7's parser accepts a value at the start of `length` bytes at `text` (its
 * grammar, quirks included: any byte up to 0x20 is whitespace, a UTF-8 byte-order mark is
 * skipped, strings may hold raw control bytes, \u escapes with bad hex digits read as 0, numbers
 * are read by strtod, at most 1000 levels of nesting). Where cJSON versions differ (numbers
 * longer than 63 characters) it accepts: uform__json_parse then also needs errno ENOMEM before it
 * calls a failure out-of-memory. Allocates nothing. Answers 1, or 0 with the offset of the first
 * byte it could not read in `*bad_at` (may be NULL).
 */
int uform__json_check(const char *text, size_t length, size_t *bad_at);

/* What a value is, for messages that say what was found instead of what was expected: "a string",
 * "a number", "an array", "an object", "a boolean", "null", "an invalid value"; "missing" for NULL. */
const char *uform__json_kind(const cJSON *item);

#endif
