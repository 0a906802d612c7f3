/* Internal helpers for filling caller-owned outcomes. Private to libuform. */
#ifndef UFORM_CORE_OUTCOME_H
#define UFORM_CORE_OUTCOME_H

#include <stdarg.h>

#include "uform/uform.h"

#if defined(__GNUC__)
#define UFORM__PRINTF(format_index, first_arg) __attribute__((format(printf, format_index, first_arg)))
#else
#define UFORM__PRINTF(format_index, first_arg)
#endif

/*
 * Records a failure: writes `function` and the formatted message into `outcome` (any may be NULL),
 * zero-fills the rest of both buffers, stores `status` with release order, and answers `status`,
 * so a failing path reads `return uform__fail(outcome, UFORM_FORMAT, __func__, "...", ...);`.
 * Used by functions that finish before returning. Inside an executor call, the call's private
 * outcome is passed instead; the executor publishes the final status (see exec/call.h).
 */
uform_status_t uform__fail(uform_outcome_t *outcome, uform_status_t status, const char *function,
                           const char *format, ...) UFORM__PRINTF(4, 5);
uform_status_t uform__fail_v(uform_outcome_t *outcome, uform_status_t status, const char *function,
                             const char *format, va_list arguments);

/* Records success: status UFORM_OK, `function` kept for the record, empty message. Answers UFORM_OK. */
uform_status_t uform__succeed(uform_outcome_t *outcome, const char *function);

/* Copies the function and message of `from` into `to` (not the status). */
void uform__outcome_copy_text(uform_outcome_t *to, const uform_outcome_t *from);

/* Stores `status` with release order and wakes every waiter of the outcome's futex. */
void uform__outcome_publish(uform_outcome_t *outcome, uform_status_t status);

#endif
