/*
 * The inside of a SentencePiece model (uform__sp_model_t), shared by its reader (sp_proto.c), its
 * encoder (sp_model.c) and SigLIP's text handling (sp_siglip.c). Private to src/text/sp_*.c.
 */
#ifndef UFORM_TEXT_SP_MODEL_H
#define UFORM_TEXT_SP_MODEL_H

#include "text/sp_internal.h"

struct uform__sp_model_t {
    uform__sp_unigram_t *unigram;   /* every piece, with its type; SENTENCEPIECE arithmetic */
    uform__sp_trie_t reserved;      /* CONTROL, UNKNOWN and BYTE pieces (sentencepiece's reserved_id_map_) */
    uform__sp_trie_t user_defined;  /* USER_DEFINED pieces: kept verbatim by the normaliser */
    size_t user_defined_count;
    uform__sp_charsmap_t charsmap;  /* empty: no charsmap (identity rules) */
    int add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces, treat_whitespace_as_suffix;
    uform__sp_special_ids_t special;
};

#endif
