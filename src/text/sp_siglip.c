/*
 * SigLIP's text handling around spiece.model, as transformers' SiglipTokenizer (the slow,
 * sentencepiece-backed one: google/siglip-* folders ship no tokenizer.json) and the processor call
 * of the model card do it. Python's steps, in order (tokenization_siglip.py, tokenization_utils.py):
 *   SiglipTokenizer.tokenize: "▁" + text with every "▁" replaced by " ";
 *   PreTrainedTokenizer.tokenize: with do_lower_case, re.sub("(special)|(.+?)", lower) lowers each
 *     character on its own (so no final-sigma rule; U+0130 becomes "i" U+0307); the added tokens
 *     ("</s>", "<unk>", both lstrip/rstrip) are split out and the text beside them stripped;
 *   SiglipTokenizer._tokenize per chunk: canonicalize_text (string.punctuation removed,
 *     re.sub(r"\s+", " "), strip()), then sp_model.encode("<unk>" + chunk) minus the ids of "<unk>";
 *   SiglipTokenizer.tokenize: a first token "▁" is dropped when a special token follows it;
 *   prepare_for_model: truncation to max_length - 1, "</s>" appended unless already last, padding
 *     with the pad token ("</s>") to max_length.
 * Python's whitespace (str.isspace, the `\s` of str patterns) is listed below; lower-casing uses
 * utf8proc's simple mapping (Unicode 15 on Debian 12, Python 3.11 uses 14: a handful of new
 * characters may differ).
 */
#include <string.h>
#include <utf8proc.h>

#include "core/outcome.h"
#include "text/sp_model.h"

static const char function_name[] = "uform__sp_siglip_encode";

void uform__sp_siglip_default(uform__sp_siglip_options_t *options) {
    options->max_length = 64;
    options->pad = 1;
    options->truncate = 1;
    options->lowercase = 1;
}

/* Python's str.isspace(): bidirectional types WS, B, S or category Zs. */
static int python_space(int32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* string.punctuation. */
static int ascii_punctuation(int32_t c) {
    return c > 0x20 && c < 0x7F && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", (int)c) != NULL;
}

/* The code point at `text` (valid UTF-8 expected; a bad byte reads as itself, one byte long). */
static int32_t code_point(const char *text, size_t length, size_t *bytes) {
    int32_t c = uform__sp_decode_utf8(text, length, bytes);
    return c < 0 ? (unsigned char)text[0] : c;
}

static int append_code_point(uform__text_string_t *out, int32_t c) {
    utf8proc_uint8_t buffer[4];
    utf8proc_ssize_t n = utf8proc_encode_char(c, buffer);
    return uform__text_string_append(out, (const char *)buffer, (size_t)n);
}

/* Steps 1-2: the "▁" prefix, "▁" -> " ", and lower-casing. */
static int prepare(const char *text, size_t length, int lowercase, uform__text_string_t *out) {
    if (uform__text_string_append(out, "\xE2\x96\x81", 3) != 0) return -1;
    for (size_t at = 0; at < length;) {
        size_t bytes;
        int32_t c = code_point(text + at, length - at, &bytes);
        int failed;
        if (c == 0x2581) failed = uform__text_string_append(out, " ", 1);
        else if (uform__sp_decode_utf8(text + at, length - at, &bytes) < 0) failed = uform__text_string_append(out, text + at, 1);
        else if (lowercase && c == 0x130) failed = uform__text_string_append(out, "i\xCC\x87", 3);
        else if (lowercase) failed = append_code_point(out, utf8proc_tolower(c));
        else failed = uform__text_string_append(out, text + at, bytes);
        if (failed) return -1;
        at += bytes;
    }
    return 0;
}

/* Step 4's canonicalize_text into `out` (cleared first). */
static int canonicalize(const char *text, size_t length, uform__text_string_t *out) {
    uform__text_string_clear(out);
    int in_space = 0;
    for (size_t at = 0; at < length;) {
        size_t bytes;
        int32_t c = code_point(text + at, length - at, &bytes);
        if (!ascii_punctuation(c)) {
            if (python_space(c)) {
                in_space = 1;
            } else {
                /* A run of whitespace becomes one space, dropped at the start (strip). */
                if (in_space && out->length > 0 && uform__text_string_append(out, " ", 1) != 0) return -1;
                in_space = 0;
                if (uform__text_string_append(out, text + at, bytes) != 0) return -1;
            }
        }
        at += bytes;
    }
    /* Whitespace at the end was never written (strip); removing punctuation may join runs: done above. */
    if (out->data == NULL && uform__text_string_append(out, "", 0) != 0) return -1;
    return 0;
}

/* The special tokens split out of the text: "</s>" and "<unk>". */
static size_t special_at(const char *text, size_t length) {
    if (length >= 4 && memcmp(text, "</s>", 4) == 0) return 4;
    if (length >= 5 && memcmp(text, "<unk>", 5) == 0) return 5;
    return 0;
}

/* Length of Python whitespace at the start (`from_end` 0) or the end (1) of a range. */
static size_t strip_length(const char *text, size_t length, int from_end) {
    size_t stripped = 0;
    while (stripped < length) {
        size_t bytes = 0, at = from_end ? length - stripped : stripped;
        int32_t c;
        if (from_end) {
            size_t start = at - 1;
            while (start > 0 && ((unsigned char)text[start] & 0xC0) == 0x80 && at - start < 4) --start;
            c = code_point(text + start, at - start, &bytes);
            if (start + bytes != at) break;
        } else {
            c = code_point(text + at, length - at, &bytes);
        }
        if (!python_space(c)) break;
        stripped += bytes;
    }
    return stripped;
}

uform_status_t uform__sp_siglip_encode(const uform__sp_model_t *model, const char *text, size_t length,
                                       const uform__sp_siglip_options_t *options, uform__text_ids_t *ids,
                                       uform_outcome_t *outcome) {
    if (!model || (length && !text) || !ids)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function_name, "NULL model, text or ids");
    uform__sp_siglip_options_t defaults;
    uform__sp_siglip_default(&defaults);
    if (!options) options = &defaults;
    uint32_t eos = uform__sp_model_piece_to_id(model, "</s>", 4), unk = uform__sp_model_piece_to_id(model, "<unk>", 5);
    uform__text_string_t prepared = {0}, chunk = {0}, canonical = {0};
    uform__text_ids_t own = {0}, scratch = {0};
    uform_status_t status = UFORM_OK;
    size_t base = ids->count;
    if (prepare(text, length, options->lowercase, &prepared) != 0) goto out_of_memory;
    /* The ids "<unk>" alone encodes to, dropped from every chunk's encoding. */
    status = uform__sp_model_encode(model, "<unk>", 5, &scratch, outcome);
    if (status != UFORM_OK) goto done;
    size_t unk_length = scratch.count;
    /* Steps 3-5 over the chunks between special tokens. */
    size_t first_chunk_tokens = 0;
    int first_is_lone_mark = 0, chunk_index = 0, special_follows_first = 0;
    const char *s = prepared.data;
    size_t n = prepared.length, at = 0;
    while (at <= n) {
        size_t next = at, special = 0;
        while (next < n && (special = special_at(s + next, n - next)) == 0) ++next;
        /* The chunk [at, next): stripped on the sides that touch a special token. */
        size_t begin = at, end = next;
        if (at > 0) begin += strip_length(s + begin, end - begin, 0);
        if (special) end -= strip_length(s + begin, end - begin, 1);
        if (end > begin) {
            if (canonicalize(s + begin, end - begin, &canonical) != 0) goto out_of_memory;
            uform__text_string_clear(&chunk);
            if (uform__text_string_append(&chunk, "<unk>", 5) != 0 ||
                uform__text_string_append(&chunk, canonical.data, canonical.length) != 0)
                goto out_of_memory;
            scratch.count = 0;
            status = uform__sp_model_encode(model, chunk.data, chunk.length, &scratch, outcome);
            if (status != UFORM_OK) goto done;
            size_t from = scratch.count >= unk_length ? unk_length : 0;
            for (size_t i = from; i < scratch.count; ++i)
                if (uform__text_ids_append(&own, scratch.data[i]) != 0) goto out_of_memory;
            if (chunk_index == 0) {
                first_chunk_tokens = scratch.count - from;
                size_t piece_length = 0;
                const char *piece =
                    first_chunk_tokens ? uform__sp_model_id_to_piece(model, scratch.data[from], &piece_length, NULL) : NULL;
                int surface_mark = canonical.length == 3 && memcmp(canonical.data, "\xE2\x96\x81", 3) == 0;
                first_is_lone_mark = first_chunk_tokens > 0 &&
                                     ((piece && piece_length == 3 && memcmp(piece, "\xE2\x96\x81", 3) == 0 &&
                                       scratch.data[from] != unk) ||
                                      (scratch.data[from] == unk && surface_mark));
            }
        }
        if (chunk_index == 0 && special && own.count == 1 && first_chunk_tokens == 1) special_follows_first = 1;
        ++chunk_index;
        if (!special) break;
        if (uform__text_ids_append(&own, special == 4 ? eos : unk) != 0) goto out_of_memory;
        at = next + special;
    }
    /* Step 5: "▁" followed by a special token. */
    size_t skip = (first_is_lone_mark && special_follows_first) ? 1 : 0;
    /* Step 6: truncation, </s>, padding. */
    size_t count = own.count - skip;
    if (options->truncate && options->max_length > 0 && count + 1 > options->max_length) count = options->max_length - 1;
    for (size_t i = 0; i < count; ++i)
        if (uform__text_ids_append(ids, own.data[skip + i]) != 0) goto out_of_memory;
    if (!(count > 0 && own.data[skip + count - 1] == eos))
        if (uform__text_ids_append(ids, eos) != 0) goto out_of_memory;
    if (options->pad)
        while (ids->count - base < options->max_length)
            if (uform__text_ids_append(ids, eos) != 0) goto out_of_memory;
    goto done;
out_of_memory:
    ids->count = base;
    status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function_name, "no memory to tokenize %zu bytes", length);
done:
    if (status != UFORM_OK) ids->count = base;
    uform__text_string_free(&prepared);
    uform__text_string_free(&chunk);
    uform__text_string_free(&canonical);
    uform__text_ids_free(&own);
    uform__text_ids_free(&scratch);
    return status;
}
