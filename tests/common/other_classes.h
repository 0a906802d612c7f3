/*
 * One-thread executors of the HASWELL and SERIAL classes beside the detected one, for tests that
 * check every class this CPU runs against the same reference: out[c] stays NULL where the class is
 * the detected one or the CPU does not run it (then a note says so).
 */
#ifndef UFORM_TESTS_OTHER_CLASSES_H
#define UFORM_TESTS_OTHER_CLASSES_H

#include <stdio.h>

#include "uform/uform.h"

static inline void test_other_class_executors(uform_cpu_class_t detected, uform_executor_t out[2]) {
    const uform_cpu_class_t others[2] = {UFORM_CPU_CLASS_INTEL_HASWELL, UFORM_CPU_CLASS_SERIAL};
    for (int c = 0; c < 2; ++c) {
        uform_ram_options_t forced = {.cpu_class = others[c]};
        out[c] = NULL;
        if (others[c] != detected && uform_executor_for_ram(&forced, 1, 0, &out[c], NULL) != UFORM_OK)
            printf("note: this CPU does not run the %s class; its search is not compared here\n", uform_cpu_class_name(others[c]));
    }
}

#endif
