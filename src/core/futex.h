/* Thin wrappers over Linux futexes on 32-bit words (private, process-local). */
#ifndef UFORM_CORE_FUTEX_H
#define UFORM_CORE_FUTEX_H

#include <stdint.h>

/* Sleeps while *word == expected (returns at once otherwise, or on a spurious wake-up). */
void uform__futex_wait(uint32_t *word, uint32_t expected);
void uform__futex_wake_all(uint32_t *word);
void uform__futex_wake_one(uint32_t *word);

/* A hint to the core while spinning (PAUSE on x86). */
static inline void uform__spin_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
