/* UTF-8 validation and JSON string escaping, shared by the command line's JSON output
 * (cli_common.c) and `uform serve` (serve/buffer.c); no dependency on libuform, so the server's
 * core links it on its own. */
#ifndef UFORM_TOOLS_UTF8_H
#define UFORM_TOOLS_UTF8_H

#include <stddef.h>

/* The length of the valid UTF-8 sequence at `bytes` (1..4; overlong forms, surrogates and values
 * above U+10FFFF are not valid), or 0 when none starts there. `available` must be at least 1. */
size_t cli_utf8_length(const unsigned char *bytes, size_t available);

/* The next piece of a JSON string's text for the bytes at `at` (before `end`, at < end): either a
 * run of bytes that go out as they are (printable ASCII other than the quote and the backslash,
 * and valid UTF-8 sequences), answered as `*piece` = at and its length; or one escape written into
 * `scratch` (backslash-quote, backslash-backslash, \n, \t, \r; \u00XX for the other control
 * characters and DEL; \ufffd for a byte that starts no valid UTF-8 sequence), answered as `*piece`
 * = scratch. Returns how many input bytes the piece stands for (at least 1). The one escaping rule
 * of every JSON string the tools write, so the same text gives the same bytes from the command
 * line and from the server. */
size_t cli_json_piece(const unsigned char *at, const unsigned char *end, const char **piece, size_t *piece_length,
                      char scratch[8]);

#endif
