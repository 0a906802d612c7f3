/*
 * Tokenizers from Hugging Face `tokenizer.json` files (the serialisation of the `tokenizers`
 * library, as transformers' fast tokenizers and transformers.js read it), producing the ids that
 * Python's `tokenizers` produces for one text. Private to libuform.
 *
 * Pipeline, in the order of `tokenizers` (docs/tokenizers.md lists every component supported):
 * added tokens that match the raw text (normalized=false) are split out first; the rest is
 * normalized piece by piece; added tokens that match the normalized text (normalized=true) are
 * split out of that; the remaining pieces are pre-tokenized into words; the model (WordPiece,
 * BPE, WordLevel, or the SentencePiece engineer's Unigram) turns each word into ids; the content
 * is truncated to the caller's limit; the post-processor adds its special tokens around it.
 *
 * Thread contract: a tokenizer is immutable once built. Any number of threads may call
 * uform__tokenizer_encode and the queries on one tokenizer at once (every call keeps its scratch
 * on its own); only uform__tokenizer_free must not race with them.
 *
 * Input text: UTF-8. Bytes that are not valid UTF-8 are replaced with U+FFFD, one per maximal
 * ill-formed subsequence, exactly as Python's bytes.decode("utf-8", errors="replace") and the
 * WHATWG decoder do; the tokenizer then sees the replaced text.
 */
#ifndef UFORM_TEXT_TOKENIZER_H
#define UFORM_TEXT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "text/text.h"
#include "uform/uform.h"

typedef struct uform__tokenizer_t uform__tokenizer_t;

/*
 * Parses tokenizer.json text (`length` bytes, need not be NUL-terminated) into `*tokenizer`
 * (release it with uform__tokenizer_free). Nothing is kept pointing into `json`.
 * UFORM_FORMAT for malformed JSON (with the byte offset), a missing or mistyped key (the message
 * names its path, e.g. "model.merges[12]"), a merge naming a token not in the vocabulary, an
 * invalid regular expression; UFORM_UNSUPPORTED naming a component type (or option, such as BPE
 * dropout > 0) that this engine does not run; UFORM_OUT_OF_MEMORY; UFORM_INVALID_ARGUMENT for a
 * NULL `json` or `tokenizer`. On failure `*tokenizer` is NULL.
 */
uform_status_t uform__tokenizer_from_json(const char *json, size_t length, uform__tokenizer_t **tokenizer,
                                          uform_outcome_t *outcome);

/* Releases a tokenizer. NULL is a no-op. */
void uform__tokenizer_free(uform__tokenizer_t *tokenizer);

/*
 * Appends the ids of one text (`length` bytes of UTF-8, invalid bytes replaced as said above) to
 * `ids`, which is cleared first: added tokens, normalizer, pre-tokenizer, model, then the
 * post-processor's special tokens, with the content truncated from the right so that the total is
 * at most `max_length` ids (0: no limit) and the special tokens are kept — what Python's
 * `tokenizers` (and transformers' `truncation=True, max_length=N`) answer for one sequence.
 * UFORM_INVALID_ARGUMENT when `max_length` is smaller than the number of special tokens (Python
 * cannot honour it either) or an argument is NULL (`text` may be NULL when `length` is 0);
 * UFORM_OUT_OF_MEMORY; UFORM_FORMAT when the model needs its unknown token and the vocabulary
 * lacks it (Python's "Missing [UNK] token" error); UFORM_UNSUPPORTED when a regular expression
 * exceeds PCRE2's match limits on this text, or a Unigram model meets a character it has no piece
 * for and no unk_id (sentencepiece.h). On failure `ids` holds no ids.
 */
uform_status_t uform__tokenizer_encode(const uform__tokenizer_t *tokenizer, const char *text, size_t length,
                                       size_t max_length, uform__text_ids_t *ids, uform_outcome_t *outcome);

/* The id of a token string (NUL-terminated) among the added tokens or in the model's vocabulary
 * (added tokens first, as `tokenizers` looks them up): 1 with `*id`, or 0. */
int uform__tokenizer_token_id(const uform__tokenizer_t *tokenizer, const char *token, uint32_t *id);

/* The largest id of the model's vocabulary and the added tokens, plus one. */
size_t uform__tokenizer_vocabulary_size(const uform__tokenizer_t *tokenizer);

/* The model: "wordpiece", "bpe", "unigram" or "wordlevel". */
const char *uform__tokenizer_kind(const uform__tokenizer_t *tokenizer);

/* How many special tokens the post-processor puts before and after one sequence (0 and 0 without
 * a post-processor). Either pointer may be NULL. */
void uform__tokenizer_specials(const uform__tokenizer_t *tokenizer, size_t *before, size_t *after);

/* The ids of those special tokens: `before` ids then `after` ids (see uform__tokenizer_specials),
 * owned by the tokenizer. NULL when there are none. */
const uint32_t *uform__tokenizer_special_ids(const uform__tokenizer_t *tokenizer);

#endif
