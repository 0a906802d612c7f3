/*
 * What the members of a mesh tell each other about their builders before one index is made from
 * them (index_gather.c, index_write_members.c). Private to libuform.
 */
#ifndef UFORM_INDEX_INDEX_MEMBERS_H
#define UFORM_INDEX_INDEX_MEMBERS_H

#include <stdint.h>

#include "index/index.h"

/* A member's fixed record, all uint64 so its layout is the same on every member: whether it has a
 * builder, its dims and scalar, its item count, the bytes of its rows per modality and of its
 * paths, its fingerprint. */
enum { UFORM__MEMBER_HAS, UFORM__MEMBER_DIMS, UFORM__MEMBER_SCALAR, UFORM__MEMBER_COUNT, UFORM__MEMBER_ROWS,
       UFORM__MEMBER_PATHS = UFORM__MEMBER_ROWS + 4, UFORM__MEMBER_FINGERPRINT,
       UFORM__MEMBER_WORDS = UFORM__MEMBER_FINGERPRINT + UFORM_FINGERPRINT_CAPACITY / 8 + 1 };

/* Fills `record` [UFORM__MEMBER_WORDS] from `builder`; all zero (no builder) when it is NULL. */
void uform__index_member_record(uform_index_builder_t builder, uint64_t *record);
/* Checks every member's record against member 0's: UFORM_PEER_LOST naming a member without a
 * builder ("failed before `when`"), UFORM_CONFIG_MISMATCH naming one of other dims, scalar or
 * fingerprint, else UFORM_OK. */
uform_status_t uform__index_members_check(const uint64_t *records, size_t members, const char *when, uform_outcome_t *outcome,
                                          const char *function);

#endif
