/*
 * Windowed-sinc polyphase resampler, torchaudio 0.13's `functional.resample` with its defaults
 * (see signal.h for the formula). The kernel bank is computed in float with torchaudio's own
 * sequence of float operations (its `_get_sinc_resample_kernel` runs in the waveform's dtype), so
 * the taps agree with torchaudio's to an ulp or two of sinf/cosf. Only each phase's span inside the
 * window (|t| < 6) is applied: that is ~34 of 475 taps for 44.1 kHz -> 16 kHz.
 *
 * Shapes: kernels [next, taps] with taps = 2·width + orig; the source is read as if padded with
 * `width` zeros before and `width + orig` after (F.pad), output block q (next samples) is the
 * stride-orig correlation of the padded source with each phase (F.conv1d, stride orig).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "kernels/signal.h"

#define SIGNAL_PI 3.14159265358979323846

static size_t gcd(size_t a, size_t b) {
    while (b) {
        const size_t r = a % b;
        a = b, b = r;
    }
    return a;
}

void uform__signal_resample_plan_free(uform__signal_resample_plan_t *plan) {
    if (!plan) return;
    free(plan->first);
    free(plan->size);
    free(plan->kernels);
    memset(plan, 0, sizeof(*plan));
}

uform_status_t uform__signal_resample_plan_init(uform__signal_resample_plan_t *plan, size_t source_rate,
                                                size_t target_rate, uform_outcome_t *outcome) {
    if (!plan) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "plan is NULL");
    memset(plan, 0, sizeof(*plan));
    if (source_rate == 0 || target_rate == 0 || source_rate > 100000000 || target_rate > 100000000)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "sample rates must be in [1, 10^8] Hz; got %zu -> %zu", source_rate, target_rate);
    const size_t divisor = gcd(source_rate, target_rate);
    plan->source_rate = source_rate;
    plan->target_rate = target_rate;
    plan->orig = source_rate / divisor;
    plan->next = target_rate / divisor;
    if (plan->orig == plan->next) return UFORM_OK; /* torchaudio returns the waveform itself */
    const size_t orig = plan->orig, next = plan->next;
    const int lowpass_filter_width = 6;
    const double base_freq = (double)(orig < next ? orig : next) * 0.99;
    plan->width = (size_t)ceil((double)lowpass_filter_width * (double)orig / base_freq);
    plan->taps = 2 * plan->width + orig;
    if ((double)next * (double)plan->taps > 64.0 * 1024 * 1024) {
        const size_t taps = plan->taps;
        memset(plan, 0, sizeof(*plan));
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "rates %zu -> %zu reduce to %zu/%zu, whose polyphase bank of %zu x %zu taps exceeds 64 M",
                           source_rate, target_rate, next, orig, next, taps);
    }
    plan->first = malloc(next * sizeof(size_t));
    plan->size = malloc(next * sizeof(size_t));
    plan->kernels = calloc(next * plan->taps, sizeof(float));
    if (!plan->first || !plan->size || !plan->kernels) {
        uform__signal_resample_plan_free(plan);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate a resampler bank of %zu x %zu taps", next,
                           plan->taps);
    }
    /* torchaudio, in float: idx = arange(−width, width + orig) / orig; t = arange(0, −next, −1) / next
     * + idx; t *= base_freq; clamp to ±6; window = cos(t·π / 6 / 2)²; t *= π;
     * kernel = (t == 0 ? 1 : sin(t) / t) · (window · (base_freq / orig)). Scalars are rounded to float
     * before each operation, as ATen's float kernels do. */
    const float base = (float)base_freq, pi = (float)SIGNAL_PI, scale = (float)(base_freq / (double)orig);
    for (size_t i = 0; i < next; ++i) {
        float *kernel = plan->kernels + i * plan->taps;
        const float phase = (float)(-(long long)i) / (float)next;
        size_t first = plan->taps, last = 0;
        for (size_t j = 0; j < plan->taps; ++j) {
            const float idx = (float)((long long)j - (long long)plan->width) / (float)orig;
            float t = (phase + idx) * base;
            /* Taps clamped to ±6 sit where the window is zero; in float cos(π/2)² is ~1e-15 and
             * sin(6π) ~1e-6, so torchaudio keeps ~1e-22 there. They are dropped from the phase's
             * span below, which moves a sum by < 1e-20 of the signal, far under float rounding. */
            const int outside = !(t > -(float)lowpass_filter_width && t < (float)lowpass_filter_width);
            if (t < -(float)lowpass_filter_width) t = -(float)lowpass_filter_width;
            if (t > (float)lowpass_filter_width) t = (float)lowpass_filter_width;
            const float cosine = cosf(t * pi / (float)lowpass_filter_width / 2.0f);
            const float window = cosine * cosine;
            t *= pi;
            const float sinc = (t == 0.0f) ? 1.0f : sinf(t) / t;
            kernel[j] = sinc * (window * scale);
            if (!outside && kernel[j] != 0.0f) {
                if (first == plan->taps) first = j;
                last = j;
            }
        }
        plan->first[i] = first == plan->taps ? 0 : first;
        plan->size[i] = first == plan->taps ? 0 : last - first + 1;
    }
    return UFORM_OK;
}

size_t uform__signal_resample_length(const uform__signal_resample_plan_t *plan, size_t count) {
    if (plan->orig == plan->next) return count;
    return (plan->next * count + plan->orig - 1) / plan->orig;
}

size_t uform__signal_resample_source_needed(const uform__signal_resample_plan_t *plan, size_t outputs) {
    if (plan->orig == plan->next || outputs == 0) return outputs;
    /* Output m = q·next + i reads source [q·orig + first[i] − width, + size[i]); take the furthest. */
    size_t needed = 0;
    const size_t last_block = (outputs - 1) / plan->next;
    for (size_t m = last_block * plan->next; m < outputs; ++m) {
        const size_t i = m % plan->next;
        const size_t end = last_block * plan->orig + plan->first[i] + plan->size[i];
        const size_t reach = end > plan->width ? end - plan->width : 0;
        if (reach > needed) needed = reach;
    }
    /* Earlier blocks end at most orig samples earlier per block, so the last block decides, except
     * for phases the last block does not reach: check the block before it too. */
    if (last_block > 0)
        for (size_t i = 0; i < plan->next; ++i) {
            const size_t end = (last_block - 1) * plan->orig + plan->first[i] + plan->size[i];
            const size_t reach = end > plan->width ? end - plan->width : 0;
            if (reach > needed) needed = reach;
        }
    return needed;
}

typedef struct resample_context_t {
    const uform__signal_resample_plan_t *plan;
    const uform__signal_kernels_t *kernels;
    const float *source;
    size_t count, outputs, prongs;
    float *target;
} resample_context_t;

static void resample_prong(void *opaque, size_t thread, size_t prong) {
    const resample_context_t *context = opaque;
    const uform__signal_resample_plan_t *plan = context->plan;
    const float *source = context->source;
    const long long count = (long long)context->count;
    float padded[512];
    size_t begin, end;
    uform__split_range(context->outputs, context->prongs, prong, &begin, &end);
    for (size_t m = begin; m < end; ++m) {
        const size_t q = m / plan->next, i = m % plan->next;
        const float *kernel = plan->kernels + i * plan->taps + plan->first[i];
        size_t size = plan->size[i];
        /* Source index of tap j: q·orig + j − width; taps outside the signal read padding zeros. */
        const long long start = (long long)(q * plan->orig + plan->first[i]) - (long long)plan->width;
        if (start >= 0 && start + (long long)size <= count) {
            context->target[m] = context->kernels->dot_f32(kernel, source + start, size);
            continue;
        }
        /* Near the edges: copy the window with its zeros, so the sum runs in the same tap order. */
        float sum = 0.0f;
        for (size_t done = 0; done < size; done += 512) {
            const size_t chunk = size - done < 512 ? size - done : 512;
            for (size_t j = 0; j < chunk; ++j) {
                const long long at = start + (long long)(done + j);
                padded[j] = (at >= 0 && at < count) ? source[at] : 0.0f;
            }
            const float part = context->kernels->dot_f32(kernel + done, padded, chunk);
            sum = done == 0 ? part : sum + part;
        }
        context->target[m] = sum;
    }
}

void uform__signal_resample_f32(const uform__signal_resample_plan_t *plan, const float *source, size_t count,
                                float *target, const uform__signal_kernels_t *kernels,
                                const uform__parallel_t *parallel) {
    if (plan->orig == plan->next) {
        if (target != source) memmove(target, source, count * sizeof(float));
        return;
    }
    resample_context_t context = {
        .plan = plan,
        .kernels = kernels ? kernels : uform__signal_kernels(UFORM_CPU_CLASS_SERIAL),
        .source = source,
        .count = count,
        .outputs = uform__signal_resample_length(plan, count),
        .target = target,
    };
    const size_t threads = uform__parallel_threads(parallel);
    context.prongs = threads < context.outputs ? threads : context.outputs;
    uform__parallel_for(parallel, context.prongs, resample_prong, &context);
}
