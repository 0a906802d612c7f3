/*
 * Which search an index gets: the one rule `uform search` and `uform serve` share (ann_choice.c).
 * An index X.index is searched through its approximate structure when X.faiss lies beside it and
 * exact search was not asked for; the knobs (nprobe, ef, rerank) are checked here once, so the
 * CLI's flags and the server's JSON fields are refused for the same reasons in the same words.
 */
#ifndef UFORM_TOOLS_ANN_CHOICE_H
#define UFORM_TOOLS_ANN_CHOICE_H

#include <stddef.h>

#include "uform/uform.h"

/* The knobs a search was given, as bits. */
enum { ANN_KNOB_NPROBE = 1, ANN_KNOB_EF = 2, ANN_KNOB_RERANK = 4 };

/* The approximate structure's path beside an index: X.index → X.faiss, any other name gets ".faiss"
 * appended. malloc'ed; NULL when out of memory. */
char *ann_choice_path(const char *index_path);

/* 1 when the search goes through the structure at `ann_path` (it exists and `exact` is 0), else 0. */
int ann_choice_approximate(const char *ann_path, int exact);

/* Checks `knobs` (ANN_KNOB_* bits) before anything is opened: they need the approximate path. The
 * names are spelt with `prefix` ("--" for flags, "" for JSON fields). Answers 0, or 1 with the
 * reason in `why`. */
int ann_choice_check_path(unsigned knobs, int approximate, int exact, const char *ann_path, const char *index_path,
                          const char *prefix, char *why, size_t capacity);

/* Checks `knobs` against the structure that was opened: nprobe needs inverted lists (IVF), ef a
 * graph (HNSW, or an IVF's HNSW quantiser). Answers 0, or 1 with the reason in `why`. */
int ann_choice_check_kind(unsigned knobs, const uform_index_ann_description_t *description, const char *prefix, char *why,
                          size_t capacity);

/* The library's rerank for a given value: an explicit 0 (`--rerank 0`, "rerank": 0) asks for FAISS's own
 * scores, UFORM_INDEX_ANN_RERANK_NONE; a knob not given stays 0, the structure's default. */
size_t ann_choice_rerank(unsigned knobs, size_t rerank);

#endif
