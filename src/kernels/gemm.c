/*
 * GEMM dispatch: one static table per CPU class, so choosing kernels once per executor is a
 * pointer lookup. Compiled for the baseline CPU; the tables live in gemm_<class>.c.
 */
#include "kernels/gemm.h"

const uform__gemm_kernels_t *uform__gemm_kernels(uform_cpu_class_t cpu_class) {
    switch (cpu_class) {
    case UFORM_CPU_CLASS_INTEL_HASWELL:
    case UFORM_CPU_CLASS_INTEL_SIERRA: /* Haswell + AVX-VNNI: nothing VNNI helps in float products */
        return &uform__gemm_kernels_haswell;
    case UFORM_CPU_CLASS_INTEL_SKYLAKE:
        return &uform__gemm_kernels_skylake;
    case UFORM_CPU_CLASS_INTEL_ICELAKE:
        return &uform__gemm_kernels_icelake;
    case UFORM_CPU_CLASS_AMD_GENOA:
    case UFORM_CPU_CLASS_INTEL_SAPPHIRE: /* AMX tiles would beat vdpbf16ps there; not written yet */
    case UFORM_CPU_CLASS_INTEL_GRANITE:
    case UFORM_CPU_CLASS_INTEL_DIAMOND:
        return &uform__gemm_kernels_genoa;
    default: /* SERIAL, UNKNOWN, MONOVERSIONED and the non-x86 classes */
        return &uform__gemm_kernels_serial;
    }
}
