/*
 * One-thread executors of other CPU classes beside the detected one, for tests that check every
 * class this CPU runs against the same reference: out[c] stays NULL where the class is the detected
 * one or the CPU does not run it (then a note says so). test_other_class_executors makes HASWELL
 * and SERIAL; test_class_executors any list.
 */
#ifndef UFORM_TESTS_OTHER_CLASSES_H
#define UFORM_TESTS_OTHER_CLASSES_H

#include <stddef.h>
#include <stdio.h>

#include "uform/uform.h"

static inline void test_class_executors(uform_cpu_class_t detected, const uform_cpu_class_t *classes, size_t count,
                                        uform_executor_t *out) {
    for (size_t c = 0; c < count; ++c) {
        uform_ram_options_t forced = {.cpu_class = classes[c]};
        out[c] = NULL;
        if (classes[c] != detected && uform_executor_for_ram(&forced, 1, 0, &out[c], NULL) != UFORM_OK)
            printf("note: this CPU does not run the %s class; its search is not compared here\n", uform_cpu_class_name(classes[c]));
    }
}

static inline void test_other_class_executors(uform_cpu_class_t detected, uform_executor_t out[2]) {
    const uform_cpu_class_t others[2] = {UFORM_CPU_CLASS_INTEL_HASWELL, UFORM_CPU_CLASS_SERIAL};
    test_class_executors(detected, others, 2, out);
}

#endif
