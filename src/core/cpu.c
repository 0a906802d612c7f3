/*
 * CPU classes: CPUID says what the core implements, XGETBV says whether the operating system saves
 * the registers those instructions use. Both must agree before a class counts as supported —
 * a kernel using ZMM registers on a kernel that does not save them corrupts other processes' state.
 */
#include "core/cpu.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define UFORM_X86 1
#endif

static const char *const class_names[] = {
    "unknown",       "serial",         "intel_haswell", "intel_sierra", "intel_skylake",
    "intel_icelake", "amd_genoa",      "intel_sapphire", "intel_granite", "intel_diamond",
    "aws_g2",        "apple_m2",       "apple_m4",      "aws_g5",       "nvidia_vera",
    "alibaba_c930",  "wasm32_v128",    "wasm64_extended", "monoversioned",
};
enum { class_count = sizeof class_names / sizeof class_names[0] };

UFORM_API const char *uform_cpu_class_name(uform_cpu_class_t cpu_class) {
    size_t index = (size_t)cpu_class;
    return index < class_count ? class_names[index] : "unknown";
}

/* Bit flags of the features the x86 classes need. */
enum {
    has_avx2_fma_f16c = 1 << 0, /* plus OS support for YMM */
    has_avx_vnni = 1 << 1,
    has_avx512_skylake = 1 << 2, /* F, CD, BW, DQ, VL plus OS support for ZMM and opmasks */
    has_avx512_icelake = 1 << 3, /* VNNI, VPOPCNTDQ, VBMI, VBMI2, BITALG */
    has_avx512_bf16 = 1 << 4,
    has_avx512_fp16_amx = 1 << 5, /* AVX-512 FP16, AMX tile/BF16/INT8 plus OS support for tiles */
    has_amx_fp16 = 1 << 6,
};

static unsigned detect_features(void) {
    unsigned features = 0;
#if defined(UFORM_X86)
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return 0;
    unsigned max_leaf = eax;
    if (max_leaf < 1) return 0;
    __cpuid_count(1, 0, eax, ebx, ecx, edx);
    int fma = (ecx >> 12) & 1, osxsave = (ecx >> 27) & 1, avx = (ecx >> 28) & 1, f16c = (ecx >> 29) & 1;
    if (!osxsave || !avx) return 0;
    unsigned xcr0_low, xcr0_high;
    __asm__ __volatile__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    uint64_t xcr0 = ((uint64_t)xcr0_high << 32) | xcr0_low;
    int os_ymm = (xcr0 & 0x6) == 0x6;           /* SSE and AVX state */
    int os_zmm = os_ymm && (xcr0 & 0xE0) == 0xE0; /* opmask, ZMM0-15 upper halves, ZMM16-31 */
    int os_tiles = (xcr0 & 0x60000) == 0x60000;  /* XTILECFG and XTILEDATA */
    if (max_leaf < 7) return 0;
    unsigned b7, c7, d7, a7_1 = 0, tmp;
    __cpuid_count(7, 0, eax, b7, c7, d7);
    unsigned max_subleaf = eax;
    if (max_subleaf >= 1) __cpuid_count(7, 1, a7_1, tmp, tmp, tmp);
    int avx2 = (b7 >> 5) & 1;
    if (os_ymm && avx2 && fma && f16c) features |= has_avx2_fma_f16c;
    if ((features & has_avx2_fma_f16c) && ((a7_1 >> 4) & 1)) features |= has_avx_vnni;
    int f = (b7 >> 16) & 1, dq = (b7 >> 17) & 1, cd = (b7 >> 28) & 1, bw = (b7 >> 30) & 1, vl = (b7 >> 31) & 1;
    if (os_zmm && (features & has_avx2_fma_f16c) && f && dq && cd && bw && vl) features |= has_avx512_skylake;
    int vbmi = (c7 >> 1) & 1, vbmi2 = (c7 >> 6) & 1, vnni = (c7 >> 11) & 1, bitalg = (c7 >> 12) & 1,
        vpopcntdq = (c7 >> 14) & 1;
    if ((features & has_avx512_skylake) && vbmi && vbmi2 && vnni && bitalg && vpopcntdq)
        features |= has_avx512_icelake;
    if ((features & has_avx512_icelake) && ((a7_1 >> 5) & 1)) features |= has_avx512_bf16;
    int fp16 = (d7 >> 23) & 1, amx_bf16 = (d7 >> 22) & 1, amx_tile = (d7 >> 24) & 1, amx_int8 = (d7 >> 25) & 1;
    if ((features & has_avx512_bf16) && fp16 && amx_bf16 && amx_tile && amx_int8 && os_tiles)
        features |= has_avx512_fp16_amx;
    if ((features & has_avx512_fp16_amx) && ((a7_1 >> 21) & 1)) features |= has_amx_fp16;
#endif
    return features;
}

static unsigned cached_features(void) {
    /* Racing first calls compute the same value; the flag bit makes 0 features cacheable too. */
    static unsigned cache = 0;
    unsigned value = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
    if (value) return value & ~0x80000000u;
    value = detect_features() | 0x80000000u;
    __atomic_store_n(&cache, value, __ATOMIC_RELEASE);
    return value & ~0x80000000u;
}

UFORM_API int uform_cpu_class_supported(uform_cpu_class_t cpu_class) {
    unsigned features = cached_features();
    switch (cpu_class) {
    case UFORM_CPU_CLASS_SERIAL:
    case UFORM_CPU_CLASS_MONOVERSIONED: return 1;
    case UFORM_CPU_CLASS_INTEL_HASWELL: return (features & has_avx2_fma_f16c) != 0;
    case UFORM_CPU_CLASS_INTEL_SIERRA: return (features & has_avx_vnni) != 0;
    case UFORM_CPU_CLASS_INTEL_SKYLAKE: return (features & has_avx512_skylake) != 0;
    case UFORM_CPU_CLASS_INTEL_ICELAKE: return (features & has_avx512_icelake) != 0;
    case UFORM_CPU_CLASS_AMD_GENOA: return (features & has_avx512_bf16) != 0;
    case UFORM_CPU_CLASS_INTEL_SAPPHIRE: return (features & has_avx512_fp16_amx) != 0;
    case UFORM_CPU_CLASS_INTEL_GRANITE: return (features & has_amx_fp16) != 0;
    default: return 0; /* Diamond is not detected yet; Arm, RISC-V and WebAssembly need other builds. */
    }
}

/* F32 on every class: see uform.h and docs/abi.md for the measurements. A class on which BF16 (or a
 * later compute) measures faster answers it here, and every entry point follows. */
UFORM_API uform_compute_t uform_compute_best(uform_cpu_class_t cpu_class) {
    (void)cpu_class;
    return UFORM_COMPUTE_F32;
}

uform_cpu_class_t uform__cpu_class_hardware(void) {
    static const uform_cpu_class_t best_first[] = {
        UFORM_CPU_CLASS_INTEL_GRANITE, UFORM_CPU_CLASS_INTEL_SAPPHIRE, UFORM_CPU_CLASS_AMD_GENOA,
        UFORM_CPU_CLASS_INTEL_ICELAKE, UFORM_CPU_CLASS_INTEL_SKYLAKE,  UFORM_CPU_CLASS_INTEL_SIERRA,
        UFORM_CPU_CLASS_INTEL_HASWELL,
    };
    for (size_t i = 0; i < sizeof best_first / sizeof best_first[0]; ++i)
        if (uform_cpu_class_supported(best_first[i])) return best_first[i];
    return UFORM_CPU_CLASS_SERIAL;
}

uform_cpu_class_t uform__cpu_class_parse(const char *text) {
    if (!text || !*text) return UFORM_CPU_CLASS_UNKNOWN;
    char lower[32];
    size_t length = strlen(text);
    if (length >= sizeof lower) return UFORM_CPU_CLASS_UNKNOWN;
    for (size_t i = 0; i <= length; ++i) lower[i] = (char)tolower((unsigned char)text[i]);
    char *end = NULL;
    long number = strtol(lower, &end, 10);
    if (end && *end == 0 && end != lower) return (number > 0 && number < class_count) ? (uform_cpu_class_t)number : UFORM_CPU_CLASS_UNKNOWN;
    for (int i = 1; i < class_count; ++i) {
        const char *name = class_names[i];
        if (strcmp(lower, name) == 0) return (uform_cpu_class_t)i;
        const char *underscore = strchr(name, '_'); /* "genoa" for "amd_genoa" */
        if (underscore && strcmp(lower, underscore + 1) == 0) return (uform_cpu_class_t)i;
    }
    return UFORM_CPU_CLASS_UNKNOWN;
}

uform_status_t uform__cpu_class_resolve(uform_cpu_class_t requested, uform_cpu_class_t *resolved,
                                        uform_outcome_t *outcome, const char *function) {
    *resolved = UFORM_CPU_CLASS_UNKNOWN;
    if (requested == UFORM_CPU_CLASS_UNKNOWN) {
        const char *variable = getenv("UFORM_CPU_CLASS");
        if (!variable || !*variable) {
            *resolved = uform__cpu_class_hardware();
            return UFORM_OK;
        }
        uform_cpu_class_t parsed = uform__cpu_class_parse(variable);
        if (parsed == UFORM_CPU_CLASS_UNKNOWN)
            return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                               "UFORM_CPU_CLASS='%.64s' names no CPU class (try 'serial', 'haswell', 'genoa')", variable);
        if (!uform_cpu_class_supported(parsed))
            return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                               "UFORM_CPU_CLASS='%.64s' asks for %s, which this CPU cannot run (best: %s)", variable,
                               uform_cpu_class_name(parsed), uform_cpu_class_name(uform__cpu_class_hardware()));
        *resolved = parsed;
        return UFORM_OK;
    }
    if ((size_t)requested >= class_count)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "cpu_class %d is not a uform_cpu_class_t",
                           (int)requested);
    if (!uform_cpu_class_supported(requested))
        return uform__fail(outcome, UFORM_UNSUPPORTED, function, "cpu_class %s cannot run on this CPU (best: %s)",
                           uform_cpu_class_name(requested), uform_cpu_class_name(uform__cpu_class_hardware()));
    *resolved = requested;
    return UFORM_OK;
}

UFORM_API uform_cpu_class_t uform_cpu_class_detect(void) {
    uform_cpu_class_t resolved;
    if (uform__cpu_class_resolve(UFORM_CPU_CLASS_UNKNOWN, &resolved, NULL, __func__) != UFORM_OK)
        return uform__cpu_class_hardware();
    return resolved;
}

UFORM_API uform_status_t uform_gpu_devices(uform_gpu_device_t *devices, size_t capacity, size_t *count) {
    (void)devices;
    (void)capacity;
    if (!count) return UFORM_INVALID_ARGUMENT;
    *count = 0; /* this build has no GPU support */
    return UFORM_OK;
}
