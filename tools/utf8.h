/* UTF-8 validation shared by the command line's JSON output (cli_common.c) and `uform serve`
 * (serve/buffer.c); no dependency on libuform, so the server's core links it on its own. */
#ifndef UFORM_TOOLS_UTF8_H
#define UFORM_TOOLS_UTF8_H

#include <stddef.h>

/* The length of the valid UTF-8 sequence at `bytes` (1..4; overlong forms, surrogates and values
 * above U+10FFFF are not valid), or 0 when none starts there. `available` must be at least 1. */
size_t cli_utf8_length(const unsigned char *bytes, size_t available);

#endif
