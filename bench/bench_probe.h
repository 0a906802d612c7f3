/*
 * Instruction peaks: how many operations per second the cores give for the instructions each
 * class's products use, measured now, so every GEMM figure can be read as a fraction of what the
 * cores gave in the same run (bench_gemm prints them; bench_peak.h picks the one a row is
 * measured against). An operation is a multiply or an add: an FMA lane counts 2, a BF16 pair 4,
 * an int8 quad 8.
 *
 *   kind          instructions                                  class that needs it
 *   f32 ymm       vfmadd231ps ymm (AVX2 + FMA)                   HASWELL (and SERIAL's vectorised loops)
 *   f32 zmm       vfmadd231ps zmm (AVX-512 F)                    SKYLAKE, ICELAKE, GENOA's F32
 *   bf16 zmm      vdpbf16ps zmm (AVX-512 BF16)                   GENOA's BF16
 *   i8 ymm        vpmaddwd + vpaddd ymm on int16 pairs (AVX2)    HASWELL's INT8 (int8 widened, gemm_i8_haswell.c)
 *   i8 zmm        vpmaddubsw + vpmaddwd + vpaddd zmm (AVX-512 BW) SKYLAKE's INT8
 *   i8 vnni       vpdpbusd zmm (AVX-512 VNNI)                    ICELAKE's and GENOA's INT8
 *
 * A peak is the best of three loops, because a loop that one core issues at full rate another may
 * not (a Zen 5 machine reported products at 157–195% of the first loop alone):
 *   chains   as many independent accumulators as the registers allow, one register operand;
 *   pairs    fewer accumulators over two different operand registers;
 *   memory   accumulators fed by a broadcast from memory, the form the GEMM tiles issue.
 * Each runs ≈0.1 s per call (the iteration count is calibrated first) and keeps its best of the
 * rounds; the peak is the fastest loop, so no product can honestly exceed it. SKYLAKE's integer
 * sequence counts the three instructions that make one dot product; its GEMM tile also spends a
 * sign instruction per product (gemm_i8.h), so it cannot reach 100%.
 */
#ifndef UFORM_BENCH_PROBE_H
#define UFORM_BENCH_PROBE_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <time.h>

#include "core/parallel.h"
#include "uform/uform.h"

#include "bench_clock.h"

typedef enum bench_probe_kind_t {
    BENCH_PROBE_F32_YMM = 0,
    BENCH_PROBE_F32_ZMM = 1,
    BENCH_PROBE_BF16_ZMM = 2,
    BENCH_PROBE_I8_YMM = 3,
    BENCH_PROBE_I8_ZMM = 4,
    BENCH_PROBE_I8_VNNI = 5,
    BENCH_PROBE_KINDS = 6
} bench_probe_kind_t;

static const char *const bench_probe_names[BENCH_PROBE_KINDS] = {
    "f32 fma ymm", "f32 fma zmm", "bf16 vdpbf16ps zmm", "i8 vpmaddwd ymm", "i8 vpmaddubsw zmm", "i8 vpdpbusd zmm"};
/* The class whose CPUs have the instructions. */
static const uform_cpu_class_t bench_probe_class[BENCH_PROBE_KINDS] = {
    UFORM_CPU_CLASS_INTEL_HASWELL, UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_AMD_GENOA,
    UFORM_CPU_CLASS_INTEL_HASWELL, UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE};

enum { BENCH_PROBE_LOOPS = 3 };
static const char *const bench_probe_loop_names[BENCH_PROBE_LOOPS] = {"chains", "pairs", "memory"};

typedef struct bench_probe_job_t {
    bench_probe_kind_t kind;
    int loop;
    long iterations;
    double operations; /* per thread per call, set by the prong */
    float sink[64];
    int32_t operands[16];
} bench_probe_job_t;

/* ---- The loops, one function per instruction set ---- */

/* The AVX2 loops (HASWELL's instructions), written like the AVX-512 ones below: local accumulators
 * indexed by constants only, so they stay in registers. */
__attribute__((target("avx2,fma"))) static double bench_probe_f32_ymm(int loop, long iterations, const int32_t *memory,
                                                                        float *sink) {
    __m256 sum[12];
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) sum[i] = _mm256_set1_ps((float)i * 1e-9f);
    __m256 a = _mm256_set1_ps(1.0000001f), b = _mm256_set1_ps(0.9999999f);
    double per_iteration;
    if (loop == 0) {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
            for (int i = 0; i < 12; ++i) sum[i] = _mm256_fmadd_ps(a, a, sum[i]);
            __asm__ volatile("" : "+x"(a));
        }
        per_iteration = 12 * 16.0;
    } else if (loop == 1) {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 10
            for (int i = 0; i < 10; ++i) sum[i] = _mm256_fmadd_ps(i % 2 ? a : b, i % 4 < 2 ? b : a, sum[i]);
            __asm__ volatile("" : "+x"(a), "+x"(b));
        }
        per_iteration = 10 * 16.0;
    } else {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 10
            for (int i = 0; i < 10; ++i) sum[i] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_set1_epi32(memory[i])), a, sum[i]);
            __asm__ volatile("" : "+x"(a), "+r"(memory));
        }
        per_iteration = 10 * 16.0;
    }
    __m256 total = sum[0];
#pragma GCC unroll 11
    for (int i = 1; i < 12; ++i) total = _mm256_add_ps(total, sum[i]);
    float lanes[8];
    _mm256_storeu_ps(lanes, total);
    *sink = lanes[0];
    return per_iteration;
}

/* vpmaddwd → vpaddd: 16 int16 pairs, 16 products (32 operations) per instruction. */
__attribute__((target("avx2,fma"))) static double bench_probe_i16_ymm(int loop, long iterations, const int32_t *memory,
                                                                        float *sink) {
    __m256i sum[12];
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) sum[i] = _mm256_set1_epi32(i);
    __m256i a = _mm256_set1_epi32(0x00010002), b = _mm256_set1_epi32(0x00030004);
    double per_iteration;
    if (loop == 0) {
        /* Ten chains over ten distinct operand pairs of four registers: nothing to share. */
        __m256i c = _mm256_set1_epi32(0x00050006), d = _mm256_set1_epi32(0x00070008);
        for (long it = 0; it < iterations; ++it) {
            sum[0] = _mm256_add_epi32(sum[0], _mm256_madd_epi16(a, a));
            sum[1] = _mm256_add_epi32(sum[1], _mm256_madd_epi16(a, b));
            sum[2] = _mm256_add_epi32(sum[2], _mm256_madd_epi16(a, c));
            sum[3] = _mm256_add_epi32(sum[3], _mm256_madd_epi16(a, d));
            sum[4] = _mm256_add_epi32(sum[4], _mm256_madd_epi16(b, b));
            sum[5] = _mm256_add_epi32(sum[5], _mm256_madd_epi16(b, c));
            sum[6] = _mm256_add_epi32(sum[6], _mm256_madd_epi16(b, d));
            sum[7] = _mm256_add_epi32(sum[7], _mm256_madd_epi16(c, c));
            sum[8] = _mm256_add_epi32(sum[8], _mm256_madd_epi16(c, d));
            sum[9] = _mm256_add_epi32(sum[9], _mm256_madd_epi16(d, d));
            __asm__ volatile("" : "+x"(a), "+x"(b), "+x"(c), "+x"(d));
        }
        per_iteration = 10 * 32.0;
    } else if (loop == 1) {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 8
            for (int i = 0; i < 8; ++i) {
                sum[i] = _mm256_add_epi32(sum[i], _mm256_madd_epi16(i % 2 ? a : b, i % 2 ? b : a));
                __asm__ volatile("" : "+x"(a), "+x"(b));
            }
        }
        per_iteration = 8 * 32.0;
    } else {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 10
            for (int i = 0; i < 10; ++i) sum[i] = _mm256_add_epi32(sum[i], _mm256_madd_epi16(_mm256_set1_epi32(memory[i]), a));
            __asm__ volatile("" : "+x"(a), "+r"(memory));
        }
        per_iteration = 10 * 32.0;
    }
    __m256i total = sum[0];
#pragma GCC unroll 11
    for (int i = 1; i < 12; ++i) total = _mm256_xor_si256(total, sum[i]);
    int32_t lanes[8];
    _mm256_storeu_si256((__m256i *)lanes, total);
    *sink = (float)lanes[0];
    return per_iteration;
}

static void bench_probe_ymm(bench_probe_job_t *job, size_t prong) {
    float sink = 0;
    double per_iteration = job->kind == BENCH_PROBE_F32_YMM
                               ? bench_probe_f32_ymm(job->loop, job->iterations, job->operands, &sink)
                               : bench_probe_i16_ymm(job->loop, job->iterations, job->operands, &sink);
    job->sink[prong % 64] = sink;
    job->operations = per_iteration * (double)job->iterations;
}

/* The AVX-512 loops: one function per instruction set (its own target), each loop written out.
 * `a` and `b` are opaque to the compiler across iterations (the empty asm), so nothing is hoisted. */
#define BENCH_ZMM_TARGET(extra) __attribute__((target("avx512f,avx512bw" extra)))

BENCH_ZMM_TARGET("") static double bench_probe_f32_zmm(int loop, long iterations, const int32_t *memory, float *sink) {
    __m512 sum[24];
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) sum[i] = _mm512_set1_ps((float)i * 1e-9f);
    double per_iteration;
    __m512 a = _mm512_set1_ps(1.0000001f), b = _mm512_set1_ps(0.9999999f);
    if (loop == 0) {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 24
            for (int i = 0; i < 24; ++i) sum[i] = _mm512_fmadd_ps(a, a, sum[i]);
            __asm__ volatile("" : "+v"(a));
        }
        per_iteration = 24 * 32.0;
    } else if (loop == 1) {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
            for (int i = 0; i < 16; ++i) sum[i] = _mm512_fmadd_ps(i % 2 ? a : b, i % 4 < 2 ? b : a, sum[i]);
            __asm__ volatile("" : "+v"(a), "+v"(b));
        }
        per_iteration = 16 * 32.0;
    } else {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
            for (int i = 0; i < 12; ++i) sum[i] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_set1_epi32(memory[i])), a, sum[i]);
            __asm__ volatile("" : "+v"(a), "+r"(memory));
        }
        per_iteration = 12 * 32.0;
    }
    __m512 total = sum[0];
#pragma GCC unroll 23
    for (int i = 1; i < 24; ++i) total = _mm512_add_ps(total, sum[i]);
    *sink = (float)_mm512_reduce_add_ps(total);
    return per_iteration;
}

BENCH_ZMM_TARGET(",avx512bf16") static double bench_probe_bf16_zmm(int loop, long iterations, const int32_t *memory,
                                                                  float *sink) {
    __m512 sum[24];
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) sum[i] = _mm512_set1_ps((float)i * 1e-9f);
    double per_iteration;
    __m512i a = _mm512_set1_epi32(0x3F803F80), b = _mm512_set1_epi32(0x3F7F3F7F);
    if (loop == 0) {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 24
            for (int i = 0; i < 24; ++i) sum[i] = _mm512_dpbf16_ps(sum[i], (__m512bh)a, (__m512bh)a);
            __asm__ volatile("" : "+v"(a));
        }
        per_iteration = 24 * 64.0;
    } else if (loop == 1) {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
            for (int i = 0; i < 16; ++i) sum[i] = _mm512_dpbf16_ps(sum[i], (__m512bh)(i % 2 ? a : b), (__m512bh)(i % 4 < 2 ? b : a));
            __asm__ volatile("" : "+v"(a), "+v"(b));
        }
        per_iteration = 16 * 64.0;
    } else {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
            for (int i = 0; i < 12; ++i) sum[i] = _mm512_dpbf16_ps(sum[i], (__m512bh)_mm512_set1_epi32(memory[i]), (__m512bh)a);
            __asm__ volatile("" : "+v"(a), "+r"(memory));
        }
        per_iteration = 12 * 64.0;
    }
    __m512 total = sum[0];
#pragma GCC unroll 23
    for (int i = 1; i < 24; ++i) total = _mm512_add_ps(total, sum[i]);
    *sink = (float)_mm512_reduce_add_ps(total);
    return per_iteration;
}

BENCH_ZMM_TARGET(",avx512vnni") static double bench_probe_i8_vnni(int loop, long iterations, const int32_t *memory,
                                                                 float *sink) {
    __m512i sum[24];
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) sum[i] = _mm512_set1_epi32(i);
    double per_iteration;
    __m512i a = _mm512_set1_epi32(0x01020304), b = _mm512_set1_epi32(0x05060708);
    if (loop == 0) {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 24
            for (int i = 0; i < 24; ++i) sum[i] = _mm512_dpbusd_epi32(sum[i], a, a);
            __asm__ volatile("" : "+v"(a));
        }
        per_iteration = 24 * 128.0;
    } else if (loop == 1) {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
            for (int i = 0; i < 16; ++i) sum[i] = _mm512_dpbusd_epi32(sum[i], i % 2 ? a : b, i % 4 < 2 ? b : a);
            __asm__ volatile("" : "+v"(a), "+v"(b));
        }
        per_iteration = 16 * 128.0;
    } else {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
            for (int i = 0; i < 12; ++i) sum[i] = _mm512_dpbusd_epi32(sum[i], a, _mm512_set1_epi32(memory[i]));
            __asm__ volatile("" : "+v"(a), "+r"(memory));
        }
        per_iteration = 12 * 128.0;
    }
    __m512i total = sum[0];
#pragma GCC unroll 23
    for (int i = 1; i < 24; ++i) total = _mm512_xor_si512(total, sum[i]);
    *sink = (float)_mm512_reduce_add_epi32(total);
    return per_iteration;
}

/* vpmaddubsw → vpmaddwd(ones) → vpaddd: 64 u8×s8 products (128 operations) per sequence. */
BENCH_ZMM_TARGET("") static double bench_probe_i8_zmm(int loop, long iterations, const int32_t *memory, float *sink) {
    __m512i sum[24];
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) sum[i] = _mm512_set1_epi32(i);
    double per_iteration;
    __m512i a = _mm512_set1_epi32(0x01020304), b = _mm512_set1_epi32(0x05060708), ones = _mm512_set1_epi16(1);
    if (loop == 0) {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
            for (int i = 0; i < 12; ++i) {
                sum[i] = _mm512_add_epi32(sum[i], _mm512_madd_epi16(_mm512_maddubs_epi16(a, a), ones));
                __asm__ volatile("" : "+v"(a)); /* no common subexpression across i */
            }
        }
        per_iteration = 12 * 128.0;
    } else if (loop == 1) {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 10
            for (int i = 0; i < 10; ++i) {
                sum[i] = _mm512_add_epi32(sum[i], _mm512_madd_epi16(_mm512_maddubs_epi16(i % 2 ? a : b, i % 2 ? b : a), ones));
                __asm__ volatile("" : "+v"(a), "+v"(b));
            }
        }
        per_iteration = 10 * 128.0;
    } else {
        for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 10
            for (int i = 0; i < 10; ++i)
                sum[i] = _mm512_add_epi32(sum[i], _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_set1_epi32(memory[i]), a), ones));
            __asm__ volatile("" : "+v"(a), "+r"(memory));
        }
        per_iteration = 10 * 128.0;
    }
    __m512i total = sum[0];
#pragma GCC unroll 23
    for (int i = 1; i < 24; ++i) total = _mm512_xor_si512(total, sum[i]);
    *sink = (float)_mm512_reduce_add_epi32(total);
    return per_iteration;
}

static void bench_probe_zmm(bench_probe_job_t *job, size_t prong) {
    double per_iteration = 0;
    float sink = 0;
    switch (job->kind) {
    case BENCH_PROBE_F32_ZMM: per_iteration = bench_probe_f32_zmm(job->loop, job->iterations, job->operands, &sink); break;
    case BENCH_PROBE_BF16_ZMM: per_iteration = bench_probe_bf16_zmm(job->loop, job->iterations, job->operands, &sink); break;
    case BENCH_PROBE_I8_VNNI: per_iteration = bench_probe_i8_vnni(job->loop, job->iterations, job->operands, &sink); break;
    default: per_iteration = bench_probe_i8_zmm(job->loop, job->iterations, job->operands, &sink); break;
    }
    job->sink[prong % 64] = sink;
    job->operations = per_iteration * (double)job->iterations;
}

static void bench_probe_prong(void *context, size_t thread, size_t prong) {
    (void)thread;
    bench_probe_job_t *job = context;
    bench_probe_job_t local = *job; /* each thread its own accumulators and count */
    if (job->kind == BENCH_PROBE_F32_YMM || job->kind == BENCH_PROBE_I8_YMM) bench_probe_ymm(&local, prong);
    else bench_probe_zmm(&local, prong);
    job->sink[prong % 64] = local.sink[prong % 64];
    if (prong == 0) job->operations = local.operations;
}

/* One loop's rate, in G operations per second over `threads` threads (one prong each), timed by
 * `clock` (CLOCK_THREAD_CPUTIME_ID when one thread computes on the calling thread, which other
 * processes on a shared machine cannot inflate; else CLOCK_MONOTONIC): calibrated to ≈0.1 s per
 * call, best of `rounds`. */
static double bench_probe_loop(bench_probe_kind_t kind, int loop, const uform__parallel_t *parallel, size_t threads,
                               int rounds, clockid_t clock) {
    bench_probe_job_t job = {.kind = kind, .loop = loop, .iterations = 20000};
    for (int i = 0; i < 16; ++i) job.operands[i] = 0x01010101 * (i + 1);
    double start = bench_clock_seconds(clock);
    uform__parallel_for(parallel, threads, bench_probe_prong, &job);
    double probe = bench_clock_seconds(clock) - start;
    job.iterations = (long)(20000.0 * 0.1 / (probe > 1e-6 ? probe : 1e-6));
    if (job.iterations < 20000) job.iterations = 20000;
    double best = 1e30;
    for (int round = 0; round < rounds; ++round) {
        start = bench_clock_seconds(clock);
        uform__parallel_for(parallel, threads, bench_probe_prong, &job);
        best = fmin(best, bench_clock_seconds(clock) - start);
    }
    return (double)threads * job.operations / best * 1e-9;
}

/* The peak of `kind` (the best of its loops; each loop's rate into `loops` when not NULL), or 0
 * when this CPU lacks the instructions. */
static double bench_probe_peak(bench_probe_kind_t kind, const uform__parallel_t *parallel, size_t threads, int rounds,
                               clockid_t clock, double loops[BENCH_PROBE_LOOPS]) {
    double best = 0;
    for (int loop = 0; loop < BENCH_PROBE_LOOPS; ++loop) {
        double rate = uform_cpu_class_supported(bench_probe_class[kind]) ? bench_probe_loop(kind, loop, parallel, threads, rounds, clock) : 0;
        if (loops) loops[loop] = rate;
        best = fmax(best, rate);
    }
    return best;
}

/* The peak a product is measured against: the instructions `cpu_class`'s kernels use for
 * `product` ("f32", "bf16" or "i8"); -1 for SERIAL (plain C has no instruction peak). BF16
 * products on classes without vdpbf16ps widen to F32 and run at the F32 rate. */
static bench_probe_kind_t bench_probe_kind_for(uform_cpu_class_t cpu_class, const char *product) {
    int avx512 = cpu_class == UFORM_CPU_CLASS_INTEL_SKYLAKE || cpu_class == UFORM_CPU_CLASS_INTEL_ICELAKE ||
                 cpu_class == UFORM_CPU_CLASS_AMD_GENOA || cpu_class == UFORM_CPU_CLASS_INTEL_SAPPHIRE ||
                 cpu_class == UFORM_CPU_CLASS_INTEL_GRANITE || cpu_class == UFORM_CPU_CLASS_INTEL_DIAMOND;
    int haswell = cpu_class == UFORM_CPU_CLASS_INTEL_HASWELL || cpu_class == UFORM_CPU_CLASS_INTEL_SIERRA;
    if (!avx512 && !haswell) return (bench_probe_kind_t)-1;
    if (product[0] == 'i') return haswell ? BENCH_PROBE_I8_YMM : cpu_class == UFORM_CPU_CLASS_INTEL_SKYLAKE ? BENCH_PROBE_I8_ZMM : BENCH_PROBE_I8_VNNI;
    if (product[0] == 'b' && avx512 && cpu_class != UFORM_CPU_CLASS_INTEL_SKYLAKE && cpu_class != UFORM_CPU_CLASS_INTEL_ICELAKE)
        return BENCH_PROBE_BF16_ZMM;
    return haswell ? BENCH_PROBE_F32_YMM : BENCH_PROBE_F32_ZMM;
}

#endif
