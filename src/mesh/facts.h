/*
 * A member's facts: what it tells the others at the bootstrap, as "key=value" lines in
 * directory/job/facts.{index}. Some keys are informational (host, pid, address, executor kind);
 * the others must be equal on every member, and a difference is a UFORM_CONFIG_MISMATCH naming the
 * key and both values. Private to src/mesh/.
 */
#ifndef UFORM_MESH_FACTS_H
#define UFORM_MESH_FACTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/outcome.h"
#include "uform/uform.h"

#define UFORM__FACT_KEY_CAPACITY 64
#define UFORM__FACT_VALUE_CAPACITY 240

typedef struct uform__fact_t {
    char key[UFORM__FACT_KEY_CAPACITY];
    char value[UFORM__FACT_VALUE_CAPACITY];
} uform__fact_t;

typedef struct uform__facts_t {
    uform__fact_t *items;
    size_t count, capacity;
} uform__facts_t;

void uform__facts_free(uform__facts_t *facts);

/* 1 when `text` holds only ASCII letters, digits, '.', '_' and '-' (or nothing): the characters a
 * fact's key and a job's name (a folder of the rendezvous) may use, so neither can reach outside
 * its folder nor break a "key=value" line. Each caller checks its own length limits. */
int uform__facts_plain_name(const char *text);

/* Appends (or replaces) `key` with a printf-formatted value. Answers UFORM_OK, UFORM_OUT_OF_MEMORY, or
 * UFORM_INVALID_ARGUMENT for a key or value that does not fit or holds a newline or '='-less key. */
uform_status_t uform__facts_set(uform__facts_t *facts, const char *key, const char *format, ...) UFORM__PRINTF(3, 4);

/* The value of `key`, or NULL. */
const char *uform__facts_get(const uform__facts_t *facts, const char *key);

/* Whether members must agree on `key`: the protocol, version, count, GPU domain size, timeout,
 * memory, CPU class and overlap, and every "trainer." and "agreement." key. */
int uform__fact_agreed(const char *key);

/* Adds the fields of a trainer config as "trainer.*" keys (not `resume`'s path, nor `mesh`). */
uform_status_t uform__facts_add_trainer(uform__facts_t *facts, const uform_trainer_config_t *config);

/* Adds "agreement.*" keys from the caller's "key=value" lines; a malformed line is
 * UFORM_INVALID_ARGUMENT with a message naming it. */
uform_status_t uform__facts_add_agreement(uform__facts_t *facts, const char *text, uform_outcome_t *outcome,
                                          const char *function);

/* Adds "fingerprint": a 64-bit FNV-1a hash of every agreed line, for a quick look at two files. */
uform_status_t uform__facts_add_fingerprint(uform__facts_t *facts);

/* The text of the facts ("key=value\n" each); malloc'ed, NULL without memory. */
char *uform__facts_print(const uform__facts_t *facts);

/* Parses a fact file's text; lines that are not "key=value" are ignored. */
uform_status_t uform__facts_parse(const char *text, size_t length, uform__facts_t *facts);

/* Compares the agreed keys of `mine` (this member, index `my_index`) and `theirs` (member
 * `their_index`): 0 when they agree, else -1 with "key: member 2 has X, member 0 (this process) has Y"
 * written into `message`. */
int uform__facts_compare(const uform__facts_t *mine, size_t my_index, const uform__facts_t *theirs,
                         size_t their_index, char *message, size_t capacity);

#endif
