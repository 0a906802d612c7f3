/*
 * The SentencePiece side of the tokenizers: the Unigram model, the "Precompiled" normaliser, the
 * Metaspace pre-tokenizer, and SentencePiece `.model` files (a protobuf ModelProto) read into a
 * complete encoder. Private to libuform.
 *
 * Two references are matched, and they differ in small ways, so each entry point says which one
 * it follows:
 *   - Hugging Face `tokenizers` (Rust), for what a tokenizer.json describes: the "Unigram" model,
 *     the "Precompiled" normalizer and the "Metaspace" pre-tokenizer. Scores are doubles, the
 *     charsmap is applied per grapheme cluster with the SHORTEST matching rule, unknown pieces are
 *     fused and looked up again (`fuse_unk`), byte fallback applies to whole unknown strings.
 *   - google/sentencepiece 0.1.97 (the C++ library behind python3-sentencepiece), for `.model`
 *     files: scores are floats (with the library's exact mix of float and double arithmetic, which
 *     decides ties), the charsmap is applied with the LONGEST matching rule over raw bytes, and the
 *     normaliser strips and collapses whitespace, adds the dummy prefix and escapes spaces as U+2581.
 *
 * Ownership and threads: every object here is built by one `..._from_...` / `..._open` call, owned by
 * the caller, released by its `..._free` (NULL is accepted), and immutable afterwards, so encoding
 * and normalising may run from any number of threads at once on one object. Output buffers belong
 * to the caller (src/text/text.h); every function APPENDS to them and leaves what was there.
 *
 * Errors follow src/core/outcome.h: UFORM_FORMAT for a malformed tokenizer.json entry, charsmap or
 * .model (the message names the key, vocabulary index, byte offset or trie unit), UFORM_UNSUPPORTED
 * for a valid input this code does not handle (a BPE .model, an unknown character without an unk
 * id), UFORM_OUT_OF_MEMORY when an allocation fails, UFORM_INVALID_ARGUMENT for NULL arguments,
 * UFORM_IO when a file cannot be read. Nothing here aborts or prints.
 */
#ifndef UFORM_TEXT_SENTENCEPIECE_H
#define UFORM_TEXT_SENTENCEPIECE_H

#include <cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "text/text.h"
#include "uform/uform.h"

/* ---------------------------------------------------------------------------------------------
 * Unigram (tokenizer.json "model": {"type": "Unigram", "unk_id": 3, "vocab": [["<s>", 0.0], ...],
 * "byte_fallback": false}).
 * ------------------------------------------------------------------------------------------- */

typedef struct uform__sp_unigram_t uform__sp_unigram_t;

/*
 * Reads the "model" object of a tokenizer.json. Checks "type" is "Unigram" (absent is accepted, as
 * `tokenizers` infers the model from its fields), "vocab" is an array of [string, number] pairs
 * (at least one), "unk_id" is null/absent or an integer index into the vocabulary, "byte_fallback"
 * is a boolean when present. Duplicate pieces are accepted with the last one winning, as in
 * `tokenizers`. Every piece is matchable (special pieces such as "<s>" included): splitting added
 * tokens out of the text first is the pipeline's job.
 */
uform_status_t uform__sp_unigram_from_json(const cJSON *model, uform__sp_unigram_t **unigram, uform_outcome_t *outcome);

/*
 * Appends the ids of one pre-tokenized word (`length` bytes at `piece`, normally UTF-8 such as
 * "▁Hello") as `tokenizers`' Unigram::tokenize does: the best segmentation under the summed piece
 * scores (Viterbi, ties to the earliest-starting and then shortest piece), consecutive unknown
 * characters fused into one string that is looked up again (normally giving unk_id), byte fallback
 * turning an unknown string into its <0xNN> pieces when every one of them exists. An empty word
 * appends nothing. UFORM_UNSUPPORTED (with the byte offset) when a character has no piece and the
 * model has no unk_id.
 */
uform_status_t uform__sp_unigram_encode(const uform__sp_unigram_t *unigram, const char *piece, size_t length,
                                        uform__text_ids_t *ids, uform_outcome_t *outcome);

/* The number of vocabulary entries (ids are 0 ... size - 1). */
size_t uform__sp_unigram_size(const uform__sp_unigram_t *unigram);

/* The id of a piece given as bytes (the last one for a duplicated piece): 1 and `*id`, or 0. */
int uform__sp_unigram_piece_to_id(const uform__sp_unigram_t *unigram, const char *piece, size_t length, uint32_t *id);

/* The bytes of piece `id` (NUL-terminated; `*length` may be NULL), or NULL past the vocabulary. */
const char *uform__sp_unigram_id_to_piece(const uform__sp_unigram_t *unigram, uint32_t id, size_t *length);

/* The unk id, or -1 when the model has none. */
int64_t uform__sp_unigram_unk_id(const uform__sp_unigram_t *unigram);

void uform__sp_unigram_free(uform__sp_unigram_t *unigram);

/* ---------------------------------------------------------------------------------------------
 * Precompiled normaliser (tokenizer.json "normalizer": {"type": "Precompiled",
 * "precompiled_charsmap": "<base64>"}), the charsmap of SentencePiece's normalizer_spec.
 *
 * A charsmap is <uint32 little-endian trie size in bytes><darts-clone double array of that many
 * bytes><NUL-separated replacement strings>. Loading validates the whole thing before answering:
 * the sizes, then every trie unit reachable from the root (each child index inside the array, each
 * stored value an offset inside the replacement blob, which must end with a NUL), so a lookup can
 * never leave the buffers. A charsmap that fails any check is UFORM_FORMAT naming the unit/offset.
 * ------------------------------------------------------------------------------------------- */

typedef struct uform__sp_precompiled_t uform__sp_precompiled_t;

/*
 * Reads the "normalizer" object of type "Precompiled" (or one element of a "Sequence"). A null or
 * empty "precompiled_charsmap" gives a normaliser that changes nothing. Base64 errors are
 * UFORM_FORMAT with the character offset.
 */
uform_status_t uform__sp_precompiled_from_json(const cJSON *normalizer, uform__sp_precompiled_t **precompiled,
                                               uform_outcome_t *outcome);

/* Reads raw charsmap bytes (copied; `size` 0 gives the identity). */
uform_status_t uform__sp_precompiled_from_bytes(const void *charsmap, size_t size, uform__sp_precompiled_t **precompiled,
                                                uform_outcome_t *outcome);

/*
 * Appends `tokenizers`' Precompiled normalisation of `length` bytes of UTF-8 at `text` to `out`:
 * per extended grapheme cluster (utf8proc's segmentation), a cluster shorter than 6 bytes whose
 * bytes start with a rule is replaced WHOLE by the shortest such rule's string; otherwise each
 * character is replaced by the shortest rule starting it, or kept. Invalid UTF-8 is UFORM_FORMAT
 * with its byte offset (tokenizers only ever sees Rust strings).
 */
uform_status_t uform__sp_precompiled_normalize(const uform__sp_precompiled_t *precompiled, const char *text,
                                               size_t length, uform__text_string_t *out, uform_outcome_t *outcome);

void uform__sp_precompiled_free(uform__sp_precompiled_t *precompiled);

/* ---------------------------------------------------------------------------------------------
 * Metaspace pre-tokenizer (tokenizer.json "pre_tokenizer": {"type": "Metaspace", "replacement":
 * "▁", "prepend_scheme": "always" | "first" | "never", "split": true}; older files say
 * "add_prefix_space": true/false instead of prepend_scheme).
 * ------------------------------------------------------------------------------------------- */

typedef enum uform__sp_prepend_t {
    UFORM__SP_PREPEND_ALWAYS = 0, /* prepend the replacement to every split that lacks it */
    UFORM__SP_PREPEND_FIRST,      /* only to the split that starts at offset 0 of the original text */
    UFORM__SP_PREPEND_NEVER,
} uform__sp_prepend_t;

/* A plain value (nothing to free). */
typedef struct uform__sp_metaspace_t {
    char replacement[5];         /* UTF-8 of the replacement character, NUL-terminated */
    size_t replacement_length;   /* 1 to 4 */
    uform__sp_prepend_t prepend; /* default ALWAYS */
    int split;                   /* 1: split on the replacement, each piece starting with it (default) */
} uform__sp_metaspace_t;

/* Byte ranges [start, end) into a string: the words a pre-tokenizer produced. */
typedef struct uform__sp_span_t {
    size_t start, end;
} uform__sp_span_t;

typedef struct uform__sp_spans_t {
    uform__sp_span_t *data;
    size_t count, capacity;
} uform__sp_spans_t;

/* Appends a span (0, or -1 when memory runs out and the list is unchanged); frees the list. */
int uform__sp_spans_append(uform__sp_spans_t *spans, size_t start, size_t end);
void uform__sp_spans_free(uform__sp_spans_t *spans);

/*
 * Reads a Metaspace entry. "replacement" must be a one-character string; "prepend_scheme" one of
 * the three names; "split" a boolean (default true); "add_prefix_space" true means "always" and
 * false "never" unless a prepend_scheme is also given, which must then agree (else UFORM_FORMAT,
 * as `tokenizers` refuses it). "str_rep" is ignored, as `tokenizers` does.
 */
uform_status_t uform__sp_metaspace_from_json(const cJSON *pre_tokenizer, uform__sp_metaspace_t *metaspace,
                                             uform_outcome_t *outcome);

/* The defaults: "▁", always, split. */
void uform__sp_metaspace_default(uform__sp_metaspace_t *metaspace);

/*
 * Pre-tokenizes one split of `length` bytes at `text` as `tokenizers`' Metaspace does: every ' '
 * (U+0020 only) becomes the replacement, the replacement is prepended unless the split already
 * starts with it (ALWAYS; FIRST only when `at_text_start` says this split begins at offset 0 of the
 * original text; never to an empty split), then with `split` the result is cut before every
 * replacement character (each word but possibly the first starts with it; no empty words). The
 * transformed text is appended to `out` and one span per word, relative to the start of `out`'s
 * data, to `words`. Valid UTF-8 is expected (the replacement is matched as bytes).
 */
uform_status_t uform__sp_metaspace_apply(const uform__sp_metaspace_t *metaspace, const char *text, size_t length,
                                         int at_text_start, uform__text_string_t *out, uform__sp_spans_t *words,
                                         uform_outcome_t *outcome);

/* ---------------------------------------------------------------------------------------------
 * SentencePiece .model files (protobuf ModelProto, read by our own wire-format reader).
 * ------------------------------------------------------------------------------------------- */

typedef struct uform__sp_model_t uform__sp_model_t;

/* SentencePiece piece types (ModelProto.SentencePiece.Type). */
typedef enum uform__sp_piece_type_t {
    UFORM__SP_NORMAL = 1,
    UFORM__SP_UNKNOWN = 2,
    UFORM__SP_CONTROL = 3,
    UFORM__SP_USER_DEFINED = 4,
    UFORM__SP_UNUSED = 5,
    UFORM__SP_BYTE = 6,
} uform__sp_piece_type_t;

/* What a caller may change at load time; zero-filled means "as the file says". */
typedef struct uform__sp_model_options_t {
    /*
     * 0: as normalizer_spec.add_dummy_prefix says; 1: force it on; -1: force it off, as
     * transformers' SiglipTokenizer and T5Tokenizer(legacy=False) do before loading the model.
     */
    int add_dummy_prefix;
} uform__sp_model_options_t;

/*
 * Parses `size` bytes of a serialized ModelProto (copied; the buffer may be freed afterwards) and
 * validates it as sentencepiece 0.1.97's loader does and more: wire format (varints at most 10
 * bytes, lengths inside their message, wire types 0/1/2/5 only, groups refused), every piece
 * non-empty and unique among normal/user-defined/unused pieces and among the others, known piece
 * types, exactly one UNKNOWN piece, BYTE pieces only with byte_fallback and then all 256 of them,
 * unk/bos/eos/pad ids in range, model_type UNIGRAM (BPE, WORD and CHAR are UFORM_UNSUPPORTED), the
 * charsmap (see above). Unknown fields are skipped, as protobuf does. `options` may be NULL.
 */
uform_status_t uform__sp_model_from_bytes(const void *bytes, size_t size, const uform__sp_model_options_t *options,
                                          uform__sp_model_t **model, uform_outcome_t *outcome);

/* Reads the file at `path` (UFORM_IO when it cannot) and parses it as above. */
uform_status_t uform__sp_model_open(const char *path, const uform__sp_model_options_t *options,
                                    uform__sp_model_t **model, uform_outcome_t *outcome);

void uform__sp_model_free(uform__sp_model_t *model);

/*
 * Appends the ids python3-sentencepiece's `SentencePieceProcessor.encode(text)` gives (no bos/eos,
 * no sampling): normalise (user-defined symbols kept verbatim, longest charsmap rule, malformed
 * UTF-8 byte -> U+FFFD, leading/trailing/repeated whitespace removed when remove_extra_whitespaces,
 * dummy prefix, ' ' -> U+2581 when escape_whitespaces), Viterbi over the pieces, consecutive
 * unknowns merged into one unk id, or split into <0xNN> byte pieces with byte_fallback.
 */
uform_status_t uform__sp_model_encode(const uform__sp_model_t *model, const char *text, size_t length,
                                      uform__text_ids_t *ids, uform_outcome_t *outcome);

/* Appends only the normalised text (sentencepiece's Normalizer::Normalize) to `out`. */
uform_status_t uform__sp_model_normalize(const uform__sp_model_t *model, const char *text, size_t length,
                                         uform__text_string_t *out, uform_outcome_t *outcome);

/* The number of pieces, and piece `id` with its type (NULL past the end; `type`, `length` may be NULL). */
size_t uform__sp_model_size(const uform__sp_model_t *model);
const char *uform__sp_model_id_to_piece(const uform__sp_model_t *model, uint32_t id, size_t *length,
                                        uform__sp_piece_type_t *type);

/* sentencepiece's PieceToId: the id of any piece (control ones included), or the unk id. */
uint32_t uform__sp_model_piece_to_id(const uform__sp_model_t *model, const char *piece, size_t length);

/* The special ids of trainer_spec, -1 where the model has none (pad_id defaults to -1, bos 1, eos 2). */
typedef struct uform__sp_special_ids_t {
    int64_t unk, bos, eos, pad;
} uform__sp_special_ids_t;
void uform__sp_model_special_ids(const uform__sp_model_t *model, uform__sp_special_ids_t *ids);

/* ---------------------------------------------------------------------------------------------
 * What transformers does around a .model, for folders that ship no tokenizer.json.
 * ------------------------------------------------------------------------------------------- */

/*
 * XLM-RoBERTa's fairseq ids (XLMRobertaTokenizer): <s>=0 <pad>=1 </s>=2 <unk>=3, every other
 * sentencepiece id + 1, <mask> = piece count + 1. Maps ids appended by uform__sp_model_encode in
 * place, from index `from` on (the spm unk id 0 becomes 3).
 */
void uform__sp_xlmr_map_ids(uform__text_ids_t *ids, size_t from);

/*
 * SigLIP's text options: what transformers' SiglipTokenizer (the slow one: google/siglip-* folders
 * ship only spiece.model) does under the call its model card makes, processor(text=...,
 * padding="max_length"), plus truncation, without which a text past 64 ids cannot run.
 */
typedef struct uform__sp_siglip_options_t {
    size_t max_length; /* model_max_length, 64: the padding target (and the truncation limit) */
    int pad;           /* 1: pad with the pad id (SigLIP's pad_token is "</s>") to max_length */
    int truncate;      /* 1: keep at most max_length - 1 text ids, so that </s> fits */
    int lowercase;     /* 1: do_lower_case (the default): Python's lower() of each non-special character */
} uform__sp_siglip_options_t;

/* The options above as SigLIP checkpoints set them: {64, 1, 1, 1}. */
void uform__sp_siglip_default(uform__sp_siglip_options_t *options);

/*
 * Appends the input_ids transformers' SiglipTokenizer gives for `text` under `options` (NULL: the
 * defaults), for a model opened with add_dummy_prefix forced off (as SiglipTokenizer loads it):
 *   1. every U+2581 becomes ' ' and one U+2581 is put in front of the text;
 *   2. with `lowercase`, every character is lower-cased on its own, as Python's str.lower() does
 *      one character at a time (full mapping, so U+0130 becomes "i" + U+0307; no final sigma);
 *   3. the special tokens "</s>" and "<unk>" are split out, and the text beside them loses its
 *      Unicode whitespace on that side (AddedToken lstrip/rstrip);
 *   4. each other non-empty chunk is canonicalised (ASCII punctuation removed, runs of Python's
 *      whitespace to one ' ', stripped), encoded as "<unk>" + chunk, and the ids "<unk>" alone
 *      encodes to are dropped from the front;
 *   5. a first id that is the lone piece "▁" is dropped when a special token follows it;
 *   6. with `truncate`, the ids are cut to max_length - 1; </s> is appended unless the ids already
 *      end with it; with `pad`, the pad id (</s>) fills up to max_length.
 * The ids are sentencepiece's own (SigLIP uses no offset).
 */
uform_status_t uform__sp_siglip_encode(const uform__sp_model_t *model, const char *text, size_t length,
                                       const uform__sp_siglip_options_t *options, uform__text_ids_t *ids,
                                       uform_outcome_t *outcome);

#endif
