/* CPU class detection and resolution of the class an executor dispatches to. */
#ifndef UFORM_CORE_CPU_H
#define UFORM_CORE_CPU_H

#include "uform/uform.h"

/* The best class the hardware runs, ignoring UFORM_CPU_CLASS. */
uform_cpu_class_t uform__cpu_class_hardware(void);

/*
 * Decides the class a new executor (or a model on the calling thread) dispatches to:
 * `requested` UNKNOWN takes UFORM_CPU_CLASS from the environment when set, else the hardware's
 * best; a named class must be runnable here. Answers UFORM_OK, or UFORM_UNSUPPORTED with a message
 * naming the class (and the variable, when it came from the environment) on behalf of `function`.
 */
uform_status_t uform__cpu_class_resolve(uform_cpu_class_t requested, uform_cpu_class_t *resolved,
                                        uform_outcome_t *outcome, const char *function);

/* Parses a class name ("amd_genoa", "genoa", "AMD_GENOA") or number; UNKNOWN when it is neither. */
uform_cpu_class_t uform__cpu_class_parse(const char *text);

#endif
