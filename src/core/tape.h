#ifndef UFORM_CORE_TAPE_H
#define UFORM_CORE_TAPE_H

#include "uform/uform.h"

/* Checks a tape's structure on behalf of `function`; `name` is the argument's name in messages
 * ("texts.offsets[17] < offsets[16] (12 < 40)"). Writes the outcome only on failure. */
uform_status_t uform__tape_check(const uform_tape_t *tape, const char *name, uform_outcome_t *outcome,
                                 const char *function);

/* Item `i` of a checked tape: its first byte and its length. */
static inline const unsigned char *uform__tape_item(const uform_tape_t *tape, size_t i, size_t *length) {
    *length = tape->offsets[i + 1] - tape->offsets[i];
    return (const unsigned char *)tape->data + tape->offsets[i];
}

#endif
