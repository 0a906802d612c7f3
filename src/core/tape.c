/* Tape validation: the structure every verb checks before touching an item. */
#include "core/tape.h"

#include "core/outcome.h"

uform_status_t uform__tape_check(const uform_tape_t *tape, const char *name, uform_outcome_t *outcome,
                                 const char *function) {
    if (!tape) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s: the tape is NULL", name);
    if (tape->count == 0) return UFORM_OK;
    if (!tape->offsets)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s.offsets is NULL but count is %zu", name,
                           tape->count);
    for (size_t i = 1; i <= tape->count; ++i)
        if (tape->offsets[i] < tape->offsets[i - 1])
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "%s.offsets[%zu] < offsets[%zu] (%zu < %zu): offsets must not decrease", name, i,
                               i - 1, tape->offsets[i], tape->offsets[i - 1]);
    if (!tape->data && tape->offsets[tape->count] != tape->offsets[0])
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s.data is NULL but the items hold %zu bytes",
                           name, tape->offsets[tape->count] - tape->offsets[0]);
    return UFORM_OK;
}

UFORM_API uform_status_t uform_tape_validate(const uform_tape_t *tape, uform_outcome_t *outcome) {
    uform_status_t status = uform__tape_check(tape, "tape", outcome, __func__);
    return status == UFORM_OK ? uform__succeed(outcome, __func__) : status;
}
