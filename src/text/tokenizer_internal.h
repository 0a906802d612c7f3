/*
 * The pieces of the tokenizer.json pipeline (src/text/tokenizer*.c) and what they share: a hash
 * table of token strings, a list of text pieces, regular expressions, and the per-call scratch.
 * Private to libuform; the entry points are in text/tokenizer.h.
 *
 * Conventions: parsers take the JSON value and its path in the file ("normalizer.normalizers[2]")
 * for their messages and answer a uform_status_t; helpers that only allocate answer 0, or -1 when
 * memory runs out. Every string handled here is valid UTF-8 (the input is repaired on entry).
 */
#ifndef UFORM_TEXT_TOKENIZER_INTERNAL_H
#define UFORM_TEXT_TOKENIZER_INTERNAL_H

#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "io/json.h"
#include "text/text.h"
#include "text/tokenizer.h"
#include "uform/uform.h"

#define UFORM__TEXT_NO_TOKEN UINT32_MAX
#define UFORM__TEXT_PATH 256

/* ---- Token strings to ids (tokenizer_vocab.c) ---------------------------------------------- */

typedef struct uform__text_vocab_slot_t {
    uint64_t hash;
    size_t offset;   /* into `strings` */
    uint32_t length; /* UINT32_MAX: empty slot */
    uint32_t id;
} uform__text_vocab_slot_t;

/* Open addressing with linear probing; the strings live in one arena (NUL after each). */
typedef struct uform__text_vocab_t {
    uform__text_vocab_slot_t *slots;
    size_t mask, count;
    char *strings;
    size_t strings_length, strings_capacity;
    size_t longest;      /* the longest token, in bytes */
    uint32_t largest_id; /* valid when count > 0 */
} uform__text_vocab_t;

uint64_t uform__text_hash(const char *bytes, size_t length);
/* Adds `token` with `id`, or replaces the id of an equal token (the later entry wins, as in a
 * map filled from JSON). 0, or -1 out of memory. */
int uform__text_vocab_put(uform__text_vocab_t *vocab, const char *token, size_t length, uint32_t id);
/* 1 with `*id` when present, else 0. */
int uform__text_vocab_get(const uform__text_vocab_t *vocab, const char *token, size_t length, uint32_t *id);
void uform__text_vocab_free(uform__text_vocab_t *vocab);

/* ---- Pieces of text between the stages ------------------------------------------------------ */

/* A piece is either text (token == UFORM__TEXT_NO_TOKEN) or an added token already resolved.
 * `first`: the piece starts where the input starts (Metaspace's prepend_scheme "first"). */
typedef struct uform__text_piece_t {
    size_t offset, length; /* into the list's `text` */
    uint32_t token;
    uint8_t first;
} uform__text_piece_t;

typedef struct uform__text_pieces_t {
    uform__text_string_t text;
    uform__text_piece_t *data;
    size_t count, capacity;
} uform__text_pieces_t;

/* Appends a piece (its bytes copied). Empty text pieces are dropped, as `tokenizers` drops empty
 * splits. 0, or -1 out of memory. */
int uform__text_pieces_add(uform__text_pieces_t *pieces, const char *bytes, size_t length, uint32_t token, int first);
void uform__text_pieces_clear(uform__text_pieces_t *pieces);
void uform__text_pieces_free(uform__text_pieces_t *pieces);

/* ---- Matches of a pattern, covering a whole string (as `tokenizers`' find_matches) ------------ */

typedef struct uform__text_span_t {
    size_t start, end;
    int is_match;
} uform__text_span_t;

typedef struct uform__text_spans_t {
    uform__text_span_t *data;
    size_t count, capacity;
} uform__text_spans_t;

int uform__text_spans_add(uform__text_spans_t *spans, size_t start, size_t end, int is_match);

/* How a split treats the matched delimiters (`tokenizers`' SplitDelimiterBehavior). */
typedef enum uform__text_behavior_t {
    UFORM__TEXT_REMOVED,
    UFORM__TEXT_ISOLATED,
    UFORM__TEXT_MERGED_WITH_PREVIOUS,
    UFORM__TEXT_MERGED_WITH_NEXT,
    UFORM__TEXT_CONTIGUOUS,
} uform__text_behavior_t;

/* Splits one text piece (`bytes` of `piece`) along `spans` (inverted first when `invert`) with
 * `behavior`, appending the resulting pieces to `out`. 0, or -1 out of memory. */
int uform__text_split_spans(const char *bytes, const uform__text_piece_t *piece, uform__text_spans_t *spans,
                            int invert, uform__text_behavior_t behavior, uform__text_pieces_t *out);

/* ---- Regular expressions (tokenizer_regex.c): PCRE2 standing in for Oniguruma ------------------ */

typedef struct uform__text_regex_t {
    void *code; /* pcre2_code_8 */
} uform__text_regex_t;

/* Compiles a pattern written for `tokenizers` (Oniguruma, Ruby syntax), or a literal string when
 * `literal`. `where` names the JSON path for messages. UFORM_FORMAT for an invalid pattern. */
uform_status_t uform__text_regex_compile(uform__text_regex_t *regex, const char *pattern, int literal,
                                         const char *where, uform_outcome_t *outcome);
void uform__text_regex_free(uform__text_regex_t *regex);

/* ---- Per-call scratch ------------------------------------------------------------------------ */

typedef struct uform__text_scratch_t {
    void *match_data; /* pcre2_match_data_8, made on first use */
    uform__text_spans_t spans;
    uform__text_string_t word; /* model scratch */
    void *symbols;             /* BPE symbols */
    size_t symbols_capacity;
    void *heap; /* BPE merge queue */
    size_t heap_capacity;
} uform__text_scratch_t;

void uform__text_scratch_free(uform__text_scratch_t *scratch);

/* Fills `spans` with the regex's matches in `length` bytes at `text` and the gaps between them.
 * 0, -1 out of memory, -2 when the matcher fails otherwise (its limits). */
int uform__text_regex_spans(const uform__text_regex_t *regex, const char *text, size_t length,
                            uform__text_scratch_t *scratch, uform__text_spans_t *spans);
/* Appends `text` with every match of `regex` replaced by `content`. 0, -1, -2 as above. */
int uform__text_regex_replace(const uform__text_regex_t *regex, const char *text, size_t length, const char *content,
                              uform__text_scratch_t *scratch, uform__text_string_t *out);

/* ---- Unicode (tokenizer_unicode.c) ----------------------------------------------------------- */

/* Appends `length` bytes at `text` with ill-formed UTF-8 replaced by U+FFFD (maximal subparts). */
int uform__text_utf8_repair(const char *text, size_t length, uform__text_string_t *out);
/* Decodes the code point at `*at` of valid UTF-8 and advances `*at`. */
uint32_t uform__text_utf8_next(const char *text, size_t *at);
/* The number of bytes of the code point starting with `lead`. */
size_t uform__text_utf8_width(unsigned char lead);
int uform__text_utf8_put(uform__text_string_t *out, uint32_t code_point);

/* Rust's char::is_whitespace (the White_Space property). */
int uform__text_is_whitespace(uint32_t code_point);
/* Rust's char::is_numeric (categories Nd, Nl, No). */
int uform__text_is_numeric(uint32_t code_point);
/* Rust's char::is_alphanumeric, approximated by the categories L*, Nd, Nl, No. */
int uform__text_is_alphanumeric(uint32_t code_point);
/* The Rust regex crate's Unicode \w (letters, marks, decimal digits, connector punctuation, joiners). */
int uform__text_is_word(uint32_t code_point);
/* What `tokenizers`' BERT stages and Punctuation read through the `unicode_categories` crate,
 * whose tables are of Unicode 8.0: ASCII punctuation or a P* character; Cc, Cf or Co; Mn. */
int uform__text_is_punctuation(uint32_t code_point);
int uform__text_is_other(uint32_t code_point);
int uform__text_is_nonspacing_mark(uint32_t code_point);
/* A mark (Mn, Mc, Me) of Unicode 9.0: what StripAccents removes. */
int uform__text_is_combining_mark(uint32_t code_point);
/* The CJK ideograph ranges BertNormalizer surrounds with spaces. */
int uform__text_is_chinese(uint32_t code_point);
/* Generated tables (tokenizer_unicode_tables.c, by tests/text/make_unicode_tables.py):
 * Cf, Mn or P* today but not assigned in Unicode 8.0 (the unicode_categories crate's version);
 * a mark, a nonzero combining class or a decomposition but assigned after Unicode 9.0 (the
 * version of unicode-normalization-alignments, which then leaves the character alone);
 * Alphabetic but not a letter, mark or letter number (circled letters: in the regex crate's \w). */
int uform__text_newer_than_unicode8(uint32_t code_point);
int uform__text_newer_than_unicode9(uint32_t code_point);
int uform__text_is_other_alphabetic(uint32_t code_point);
/* Appends the full lowercase of a code point (Rust's char::to_lowercase). */
int uform__text_lowercase_put(uform__text_string_t *out, uint32_t code_point);

typedef enum uform__text_form_t { UFORM__TEXT_NFC, UFORM__TEXT_NFD, UFORM__TEXT_NFKC, UFORM__TEXT_NFKD } uform__text_form_t;
/* Appends the normalization form of `text` as Unicode 9.0 defines it for the characters it had
 * (later characters are left alone, as the Rust crate does). 0, or -1 out of memory. */
int uform__text_normalize_form(const char *text, size_t length, uform__text_form_t form, uform__text_string_t *out);

/* ---- JSON access with paths in messages (tokenizer_json.c) ------------------------------------ */

/* Writes "parent.key" or "parent[index]" into `path` (cut short if it does not fit). */
void uform__text_path(char path[UFORM__TEXT_PATH], const char *parent, const char *key);
void uform__text_path_index(char path[UFORM__TEXT_PATH], const char *parent, size_t index);
/* The member `key` of an object (case-sensitive), NULL when absent. */
const cJSON *uform__text_json_member(const cJSON *object, const char *key);
/* The array `key` of `object` at `path` (its own path written into `where`); UFORM_FORMAT "<where>
 * is <kind>, expected an array" when it is anything else or missing. */
uform_status_t uform__text_json_array(const cJSON *object, const char *path, const char *key, char where[UFORM__TEXT_PATH],
                                      const cJSON **list, uform_outcome_t *outcome);
/* One element of a list: `item` is element `index`, whose path is `path`. */
typedef uform_status_t (*uform__text_item_fn)(void *context, size_t index, const cJSON *item, const char *path,
                                              uform_outcome_t *outcome);
/* Calls `item` on every element of `list` (at `where`) in order, stopping at the first failure,
 * whose status it answers. */
uform_status_t uform__text_json_each(const cJSON *list, const char *where, uform__text_item_fn item, void *context,
                                     uform_outcome_t *outcome);
/* Reads an optional boolean (absent or null: `fallback`). */
uform_status_t uform__text_json_bool(const cJSON *object, const char *key, const char *path, int fallback, int *value,
                                     uform_outcome_t *outcome);
/* Reads a string: `*value` NULL when absent or null and not `required`. */
uform_status_t uform__text_json_string(const cJSON *object, const char *key, const char *path, int required,
                                       const char **value, uform_outcome_t *outcome);
/* Reads an exact non-negative integer no greater than `largest` (absent or null: `fallback`,
 * or an error when `required`). */
uform_status_t uform__text_json_uint(const cJSON *object, const char *key, const char *path, int required,
                                     uint64_t fallback, uint64_t largest, uint64_t *value, uform_outcome_t *outcome);
/* Reads a value that must be an exact integer in [0, largest]. */
uform_status_t uform__text_json_uint_value(const cJSON *item, const char *path, uint64_t largest, uint64_t *value,
                                           uform_outcome_t *outcome);
/* The "type" of a component object; UFORM_FORMAT when the object or its type is missing. */
uform_status_t uform__text_json_type(const cJSON *object, const char *path, const char **type,
                                     uform_outcome_t *outcome);
/* Reads a SplitDelimiterBehavior name. */
uform_status_t uform__text_json_behavior(const cJSON *object, const char *key, const char *path,
                                         uform__text_behavior_t fallback, uform__text_behavior_t *value,
                                         uform_outcome_t *outcome);
/* A malloc'ed copy of a string (NULL stays NULL); -1 out of memory. */
int uform__text_strdup(const char *text, char **copy);

extern const char uform__text_function[]; /* "uform__tokenizer_from_json", for messages */

/* ---- Normalizers (tokenizer_normalizer.c) ------------------------------------------------------ */

typedef enum uform__text_normalizer_kind_t {
    UFORM__TEXT_NORMALIZER_BERT,
    UFORM__TEXT_NORMALIZER_FORM,
    UFORM__TEXT_NORMALIZER_LOWERCASE,
    UFORM__TEXT_NORMALIZER_STRIP_ACCENTS,
    UFORM__TEXT_NORMALIZER_STRIP,
    UFORM__TEXT_NORMALIZER_REPLACE,
    UFORM__TEXT_NORMALIZER_PREPEND,
    UFORM__TEXT_NORMALIZER_NMT,
    UFORM__TEXT_NORMALIZER_BYTE_LEVEL,
    UFORM__TEXT_NORMALIZER_SEQUENCE,
    UFORM__TEXT_NORMALIZER_EXTERNAL, /* the SentencePiece engineer's Precompiled */
} uform__text_normalizer_kind_t;

typedef struct uform__text_normalizer_t {
    uform__text_normalizer_kind_t kind;
    uform__text_form_t form;
    uint8_t clean_text, handle_chinese_chars, strip_accents, lowercase; /* BertNormalizer */
    uint8_t strip_left, strip_right;                                    /* Strip */
    char *content;                                                      /* Replace's content, Prepend's prefix */
    uform__text_regex_t regex;                                          /* Replace */
    struct uform__text_normalizer_t *children;                          /* Sequence */
    size_t child_count;
    void *external;
} uform__text_normalizer_t;

uform_status_t uform__text_normalizer_parse(const cJSON *json, const char *path, uform__text_normalizer_t *normalizer,
                                            uform_outcome_t *outcome);
void uform__text_normalizer_free(uform__text_normalizer_t *normalizer);
/* Appends the normalized `text` to `out` (which must not alias it). `first` (may be NULL): on
 * entry whether the text's first character is where the input starts; cleared when the
 * normalizer removes or replaces the leading characters, so that the new first character is
 * aligned elsewhere in the input (what `tokenizers` reads through its alignments for Metaspace's
 * prepend_scheme "first"). */
uform_status_t uform__text_normalize(const uform__text_normalizer_t *normalizer, const char *text, size_t length,
                                     uform__text_string_t *out, int *first, uform__text_scratch_t *scratch,
                                     uform_outcome_t *outcome);
/* The bytes-to-characters table of byte-level BPE (GPT-2's bytes_to_unicode). */
uint32_t uform__text_byte_char(unsigned char byte);

/* ---- Pre-tokenizers (tokenizer_pretokenizer.c) --------------------------------------------------- */

typedef enum uform__text_pretokenizer_kind_t {
    UFORM__TEXT_PRE_BERT,
    UFORM__TEXT_PRE_WHITESPACE,
    UFORM__TEXT_PRE_WHITESPACE_SPLIT,
    UFORM__TEXT_PRE_PUNCTUATION,
    UFORM__TEXT_PRE_DIGITS,
    UFORM__TEXT_PRE_BYTE_LEVEL,
    UFORM__TEXT_PRE_SPLIT,
    UFORM__TEXT_PRE_DELIMITER,
    UFORM__TEXT_PRE_SEQUENCE,
    UFORM__TEXT_PRE_EXTERNAL, /* the SentencePiece engineer's Metaspace */
} uform__text_pretokenizer_kind_t;

typedef struct uform__text_pretokenizer_t {
    uform__text_pretokenizer_kind_t kind;
    uform__text_behavior_t behavior;
    uint8_t invert, individual_digits, add_prefix_space, use_regex;
    uint32_t delimiter;
    uform__text_regex_t regex;
    struct uform__text_pretokenizer_t *children;
    size_t child_count;
    void *external;
} uform__text_pretokenizer_t;

uform_status_t uform__text_pretokenizer_parse(const cJSON *json, const char *path,
                                              uform__text_pretokenizer_t *pretokenizer, uform_outcome_t *outcome);
void uform__text_pretokenizer_free(uform__text_pretokenizer_t *pretokenizer);
/* Splits every text piece of `in` into words appended to `out` (token pieces pass through). */
uform_status_t uform__text_pretokenize(const uform__text_pretokenizer_t *pretokenizer, const uform__text_pieces_t *in,
                                       uform__text_pieces_t *out, uform__text_scratch_t *scratch,
                                       uform_outcome_t *outcome);

/* ---- Models (tokenizer_model.c, tokenizer_bpe.c) ----------------------------------------------- */

typedef enum uform__text_model_kind_t {
    UFORM__TEXT_MODEL_WORDPIECE,
    UFORM__TEXT_MODEL_BPE,
    UFORM__TEXT_MODEL_WORDLEVEL,
    UFORM__TEXT_MODEL_UNIGRAM,
} uform__text_model_kind_t;

typedef struct uform__text_merge_slot_t {
    uint64_t pair; /* left id << 32 | right id; UINT64_MAX: empty */
    uint32_t rank, id;
} uform__text_merge_slot_t;

typedef struct uform__text_model_t {
    uform__text_model_kind_t kind;
    uform__text_vocab_t vocab;
    char *unk_token; /* NULL: none configured */
    char *prefix;    /* continuing_subword_prefix ("" when none) */
    char *suffix;    /* end_of_word_suffix ("" when none) */
    size_t max_input_chars_per_word;
    uform__text_merge_slot_t *merges; /* BPE: open addressing, `merge_mask` + 1 slots */
    size_t merge_mask, merge_count;
    uint8_t fuse_unk, byte_fallback, ignore_merges;
    void *external;
} uform__text_model_t;

uform_status_t uform__text_model_parse(const cJSON *json, const char *path, uform__text_model_t *model,
                                       uform_outcome_t *outcome);
uform_status_t uform__text_bpe_parse(const cJSON *json, const char *path, uform__text_model_t *model,
                                     uform_outcome_t *outcome);
void uform__text_model_free(uform__text_model_t *model);
/* Appends the ids of one word. */
uform_status_t uform__text_model_encode(const uform__text_model_t *model, const char *word, size_t length,
                                        uform__text_ids_t *ids, uform__text_scratch_t *scratch,
                                        uform_outcome_t *outcome);
uform_status_t uform__text_bpe_encode(const uform__text_model_t *model, const char *word, size_t length,
                                      uform__text_ids_t *ids, uform__text_scratch_t *scratch, uform_outcome_t *outcome);
/* Reads a {"token": id, ...} object into `vocab`. */
uform_status_t uform__text_vocab_parse(const cJSON *json, const char *path, uform__text_vocab_t *vocab,
                                       uform_outcome_t *outcome);

/* ---- Added tokens (tokenizer_added.c) ---------------------------------------------------------- */

typedef struct uform__text_added_token_t {
    char *content;
    size_t length;
    char *normalized; /* the content as the normalizer writes it (normalized tokens) */
    size_t normalized_length;
    uint32_t id;
    uint8_t special, single_word, lstrip, rstrip, is_normalized;
} uform__text_added_token_t;

/* One matching set: the token strings, their lengths (longest first) and first bytes. */
typedef struct uform__text_added_set_t {
    uform__text_vocab_t strings; /* string -> index into the tokens */
    size_t *lengths;
    size_t length_count;
    uint8_t first_bytes[32];
} uform__text_added_set_t;

typedef struct uform__text_added_t {
    uform__text_added_token_t *tokens;
    size_t count;
    uform__text_vocab_t by_content; /* content -> id */
    uform__text_added_set_t raw, normalized;
} uform__text_added_t;

/* Reads "added_tokens" (may be NULL), resolving ids as `tokenizers` does, and normalizes the
 * normalized ones with `normalizer` (may be NULL). */
uform_status_t uform__text_added_parse(const cJSON *json, const uform__text_model_t *model,
                                       const uform__text_normalizer_t *normalizer, uform__text_added_t *added,
                                       uform_outcome_t *outcome);
void uform__text_added_free(uform__text_added_t *added);
/* Splits `length` bytes at `text` along the tokens of one set (`normalized`: the set of
 * normalized tokens), appending text pieces and token pieces to `out`. */
int uform__text_added_split(const uform__text_added_t *added, int normalized, const char *text, size_t length,
                            int first, uform__text_pieces_t *out);

/* ---- Post-processors (tokenizer_post.c) -------------------------------------------------------- */

/* Reads a post-processor into the special ids it adds around one sequence: `*ids` (malloc'ed)
 * holds `*before` ids then `*after` ids. */
uform_status_t uform__text_post_parse(const cJSON *json, const char *path, uint32_t **ids, size_t *before,
                                      size_t *after, uform_outcome_t *outcome);

#endif
