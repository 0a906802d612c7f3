/*
 * UTF-8's well-formed byte sequences (Unicode 15, table 3-7: no overlong forms, no UTF-16
 * surrogates, nothing above U+10FFFF), the one reading of them that every reader of outside text in
 * the library uses: safetensors headers and PyTorch pickles' names, tokenizer.json and the texts it
 * tokenizes, and the media probe's "is this text". Private to libuform.
 */
#ifndef UFORM_CORE_UTF8_H
#define UFORM_CORE_UTF8_H

#include <stddef.h>

/* The sequence that starts at `bytes[0]` (`available` >= 1 bytes there): its length when it is
 * well-formed (1 to 4, `*valid` = 1), else the length of its maximal subpart (at least 1, `*valid`
 * = 0), which is what a decoder replaces with one U+FFFD (Unicode's "best practice"). */
size_t uform__utf8_sequence(const unsigned char *bytes, size_t available, int *valid);

/* The offset of the first byte of `text` [length] that starts no well-formed sequence, or `length`
 * when the whole text is well-formed. */
size_t uform__utf8_invalid_at(const char *text, size_t length);

#endif
