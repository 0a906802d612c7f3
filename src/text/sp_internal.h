/*
 * What the SentencePiece files (src/text/sp_*.c) share and nobody else needs: the byte trie over
 * pieces, the validated charsmap (darts-clone double array), the Unigram model's inside, base64 and
 * UTF-8 helpers. Private to src/text/sp_*.c.
 */
#ifndef UFORM_TEXT_SP_INTERNAL_H
#define UFORM_TEXT_SP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "text/sentencepiece.h"

/* ---- A byte trie over pieces: nodes are numbers, edges live in one open-addressing hash. ---- */

typedef struct uform__sp_trie_t {
    uint64_t *keys;      /* (parent node << 8 | byte) + 1 per slot, 0 = empty */
    uint32_t *children;  /* child node per slot */
    size_t mask;         /* slots - 1 (a power of two) */
    int32_t *values;     /* per node: the piece id ending there, or -1 */
    size_t node_count;
} uform__sp_trie_t;

/*
 * Builds a trie over `count` keys (`keys[i]`, `lengths[i]` bytes) with value i; a key given twice
 * keeps the LAST index (tokenizers' map) unless `first_wins`. Keys of length 0 are left out.
 * `skip` (may be NULL) leaves out the keys whose entry is nonzero. Answers 0, or -1 when memory
 * runs out (the trie is then empty and freeable).
 */
int uform__sp_trie_build(uform__sp_trie_t *trie, const char *const *keys, const size_t *lengths, size_t count,
                         const unsigned char *skip, int first_wins);
void uform__sp_trie_free(uform__sp_trie_t *trie);

/* The child of `node` by `byte`, or -1. The root is node 0. */
static inline int64_t uform__sp_trie_child(const uform__sp_trie_t *trie, uint32_t node, unsigned char byte) {
    if (!trie->keys) return -1;
    uint64_t key = (((uint64_t)node << 8) | byte) + 1;
    size_t slot = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & trie->mask;
    for (;;) {
        uint64_t found = trie->keys[slot];
        if (found == key) return trie->children[slot];
        if (found == 0) return -1;
        slot = (slot + 1) & trie->mask;
    }
}

/* The value of the longest key that is a prefix of `length` bytes at `text` (-1 if none), its length in `*matched`. */
int32_t uform__sp_trie_longest(const uform__sp_trie_t *trie, const char *text, size_t length, size_t *matched);

/* ---- The charsmap: <u32 trie bytes><darts-clone units><NUL-terminated strings>, validated. ---- */

typedef struct uform__sp_charsmap_t {
    uint32_t *units;     /* copied into aligned memory */
    size_t unit_count;   /* 0: no charsmap (identity) */
    char *strings;       /* the replacement blob, copied, ends with a NUL */
    size_t strings_size;
} uform__sp_charsmap_t;

/*
 * Copies and validates a charsmap (see sentencepiece.h); `require_utf8` also demands a UTF-8
 * replacement blob, as `tokenizers` does. `size` 0 gives the empty (identity) charsmap. Failures
 * are UFORM_FORMAT in the name of `function`.
 */
uform_status_t uform__sp_charsmap_init(uform__sp_charsmap_t *charsmap, const void *bytes, size_t size, int require_utf8,
                                       const char *function, uform_outcome_t *outcome);
void uform__sp_charsmap_release(uform__sp_charsmap_t *charsmap);

/*
 * The rule matching the longest (sentencepiece's NormalizePrefix) or the shortest (spm_precompiled's
 * transform) prefix of `length` bytes at `key`: answers the matched length (0: no rule) and points
 * `*replacement` at the NUL-terminated replacement. A NUL byte in the key ends the search.
 */
size_t uform__sp_charsmap_match(const uform__sp_charsmap_t *charsmap, const char *key, size_t length, int longest,
                                const char **replacement);

/* ---- Unigram ---- */

/* How scores are added up: as `tokenizers` (doubles) or as sentencepiece 0.1.97 (floats). */
typedef enum uform__sp_arithmetic_t {
    UFORM__SP_DOUBLE = 0,
    UFORM__SP_SENTENCEPIECE = 1,
} uform__sp_arithmetic_t;

struct uform__sp_unigram_t {
    size_t size;                  /* vocabulary entries */
    char **pieces;                /* NUL-terminated, pointing into `piece_bytes` */
    size_t *lengths;
    char *piece_bytes;
    double *scores;
    unsigned char *kinds;         /* per id: uform__sp_piece_type_t (NORMAL for tokenizer.json vocabularies) */
    uform__sp_trie_t trie;        /* the matchable pieces */
    int64_t unk_id;               /* -1: none */
    int byte_fallback;
    int64_t byte_ids[256];        /* id of "<0xNN>", or -1 */
    uform__sp_arithmetic_t arithmetic;
    double unk_score;             /* min score - 10 */
    float max_score;              /* sentencepiece: max over NORMAL pieces, at least FLT_MIN */
};

/*
 * Allocates the arrays of a unigram of `size` entries whose pieces total `bytes` bytes (copied in by
 * the caller through `pieces`/`lengths`, laid out in `piece_bytes`); everything zeroed, unk_id -1.
 */
uform__sp_unigram_t *uform__sp_unigram_allocate(size_t size, size_t bytes);

/*
 * Finishes a unigram whose pieces, scores and kinds are filled: builds the trie over the matchable
 * pieces (every one for DOUBLE; NORMAL, USER_DEFINED and UNUSED for SENTENCEPIECE, duplicates then
 * refused by the caller beforehand), the byte table and the scores. Answers -1 when memory runs out.
 */
int uform__sp_unigram_finish(uform__sp_unigram_t *unigram);

/*
 * The Viterbi segmentation of `length` bytes at `text` as the unigram's arithmetic decides it,
 * appending ids the way its reference does (see uform__sp_unigram_encode and uform__sp_model_encode).
 */
uform_status_t uform__sp_unigram_segment(const uform__sp_unigram_t *unigram, const char *text, size_t length,
                                         uform__text_ids_t *ids, const char *function, uform_outcome_t *outcome);

/* ---- small helpers ---- */

/* sentencepiece's OneCharLen: 1, 2, 3 or 4 from the lead byte alone (clip to what is left). */
static inline size_t uform__sp_one_char_length(unsigned char lead) {
    static const unsigned char table[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return table[lead >> 4];
}

/*
 * sentencepiece's DecodeUTF8: the code point and byte count of the character at `text` (at most
 * `length` bytes), or -1 with `*bytes` = 1 for a malformed sequence, a surrogate or an overlong form.
 */
int32_t uform__sp_decode_utf8(const char *text, size_t length, size_t *bytes);

/* Index of the first byte that is not valid UTF-8 (strict: no surrogates, no overlongs), or `length`. */
size_t uform__sp_utf8_invalid_at(const char *text, size_t length);

/* Decodes standard base64 (padding optional, no whitespace) into a malloc'ed buffer. */
uform_status_t uform__sp_base64_decode(const char *text, size_t length, unsigned char **bytes, size_t *size,
                                       const char *function, const char *what, uform_outcome_t *outcome);

#endif
