/*
 * STFT power spectrum, Slaney mel filterbank and Whisper's log-mel spectrogram (see signal.h).
 *
 * References: torch.stft (center=True, pad_mode='reflect', periodic Hann window from
 * torch.hann_window), librosa.filters.mel(htk=False, norm='slaney') and Whisper's
 * `log_mel_spectrogram` (whisper/audio.py).
 *
 * Shapes: samples [count]; padded frames read samples through reflection; power
 * [frames, n_fft/2 + 1]; log-mel [frames − 1, mels].
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "kernels/signal.h"

#define SIGNAL_PI 3.14159265358979323846

/* librosa.hz_to_mel with htk=False (Slaney): linear below 1 kHz, logarithmic above. */
static double hz_to_mel(double hz) {
    const double f_sp = 200.0 / 3.0, min_log_hz = 1000.0, min_log_mel = min_log_hz / f_sp;
    const double logstep = log(6.4) / 27.0;
    if (hz >= min_log_hz) return min_log_mel + log(hz / min_log_hz) / logstep;
    return hz / f_sp;
}

/* librosa.mel_to_hz with htk=False, its inverse. */
static double mel_to_hz(double mel) {
    const double f_sp = 200.0 / 3.0, min_log_hz = 1000.0, min_log_mel = min_log_hz / f_sp;
    const double logstep = log(6.4) / 27.0;
    if (mel >= min_log_mel) return min_log_hz * exp(logstep * (mel - min_log_mel));
    return f_sp * mel;
}

void uform__signal_mel_plan_free(uform__signal_mel_plan_t *plan) {
    if (!plan) return;
    uform__signal_fft_plan_free(&plan->fft);
    free(plan->window);
    free(plan->filter_first);
    free(plan->filter_size);
    free(plan->filters);
    memset(plan, 0, sizeof(*plan));
}

uform_status_t uform__signal_mel_plan_init(uform__signal_mel_plan_t *plan, size_t sample_rate, size_t n_fft,
                                           size_t hop, size_t mels, double fmin, double fmax,
                                           uform_outcome_t *outcome) {
    if (!plan) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "plan is NULL");
    memset(plan, 0, sizeof(*plan));
    if (fmax == 0.0) fmax = (double)sample_rate / 2.0;
    if (sample_rate == 0 || n_fft < 2 || hop == 0 || mels == 0 || n_fft > ((size_t)1 << 24) || mels > 65536)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "need sample_rate >= 1, 2 <= n_fft <= 2^24, hop >= 1, 1 <= mels <= 65536; got %zu, %zu, "
                           "%zu, %zu",
                           sample_rate, n_fft, hop, mels);
    if (!(fmin >= 0.0) || !(fmax > fmin) || !(fmax <= (double)sample_rate / 2.0))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "need 0 <= fmin < fmax <= sample_rate / 2; got fmin %g, fmax %g, sample_rate %zu", fmin,
                           fmax, sample_rate);
    uform_status_t status = uform__signal_fft_plan_init(&plan->fft, n_fft, outcome);
    if (status != UFORM_OK) return status;
    plan->sample_rate = sample_rate;
    plan->n_fft = n_fft;
    plan->hop = hop;
    plan->mels = mels;
    const size_t bins = n_fft / 2 + 1;
    plan->window = malloc(n_fft * sizeof(float));
    plan->filter_first = malloc(mels * sizeof(size_t));
    plan->filter_size = malloc(mels * sizeof(size_t));
    plan->filters = calloc(mels * bins, sizeof(float));
    double *edges = malloc((mels + 2) * sizeof(double));
    if (!plan->window || !plan->filter_first || !plan->filter_size || !plan->filters || !edges) {
        free(edges);
        uform__signal_mel_plan_free(plan);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate the mel plan for n_fft %zu, %zu mels", n_fft, mels);
    }

    /* torch.hann_window(n_fft, periodic=True) in float: 0.5 − 0.5·cos(n · (2π / n_fft)), the angle
     * formed in float as ATen's hamming_window does (arange · scalar, then cos). */
    const float step = (float)(2.0 * SIGNAL_PI / (double)n_fft);
    for (size_t n = 0; n < n_fft; ++n) plan->window[n] = cosf((float)n * step) * -0.5f + 0.5f;

    /* mel_frequencies(mels + 2, fmin, fmax): np.linspace over the mel scale (i·step + start, the
     * last point exactly stop), mapped back to Hz. */
    const double low = hz_to_mel(fmin), high = hz_to_mel(fmax), spacing = (high - low) / (double)(mels + 1);
    for (size_t i = 0; i < mels + 2; ++i) edges[i] = mel_to_hz(i == mels + 1 ? high : (double)i * spacing + low);

    /* Triangles over the rfft bin frequencies k · sr / n_fft (np.fft.rfftfreq), stored in float32
     * and then scaled by the Slaney norm 2 / (right − left) in double and stored again, as
     * librosa's float32 `weights *= enorm` does. */
    const double bin_hz = 1.0 / ((double)n_fft * (1.0 / (double)sample_rate));
    for (size_t m = 0; m < mels; ++m) {
        const double enorm = 2.0 / (edges[m + 2] - edges[m]);
        float *filter = plan->filters + m * bins;
        size_t first = bins, last = 0;
        for (size_t k = 0; k < bins; ++k) {
            const double hz = (double)k * bin_hz;
            const double lower = -(edges[m] - hz) / (edges[m + 1] - edges[m]);
            const double upper = (edges[m + 2] - hz) / (edges[m + 2] - edges[m + 1]);
            double weight = lower < upper ? lower : upper;
            if (weight < 0.0) weight = 0.0;
            filter[k] = (float)((double)(float)weight * enorm);
            if (filter[k] != 0.0f) {
                if (first == bins) first = k;
                last = k;
            }
        }
        plan->filter_first[m] = first == bins ? 0 : first;
        plan->filter_size[m] = first == bins ? 0 : last - first + 1;
    }
    free(edges);
    return UFORM_OK;
}

size_t uform__signal_stft_frames(const uform__signal_mel_plan_t *plan, size_t samples) {
    return 1 + samples / plan->hop;
}

/* Per-thread scratch layout: frame [n_fft], spectrum [bins, 2], power [bins], FFT scratch. */
static size_t thread_floats(const uform__signal_mel_plan_t *plan) {
    const size_t bins = plan->n_fft / 2 + 1;
    return plan->n_fft + 3 * bins + uform__signal_fft_scratch_floats(&plan->fft);
}

/* power [bins] of frame `t` of the centred, reflect-padded signal. */
static void frame_power(const uform__signal_mel_plan_t *plan, const float *samples, size_t count, size_t t,
                        float *scratch, float *power) {
    const size_t n_fft = plan->n_fft, bins = n_fft / 2 + 1, pad = n_fft / 2;
    float *frame = scratch, *spectrum = scratch + n_fft, *fft_scratch = spectrum + 2 * bins + bins;
    for (size_t n = 0; n < n_fft; ++n) {
        /* Padded index t·hop + n is sample t·hop + n − pad, reflected at both ends (no edge repeat). */
        long long i = (long long)(t * plan->hop + n) - (long long)pad;
        if (i < 0) i = -i;
        if (i >= (long long)count) i = 2 * ((long long)count - 1) - i;
        frame[n] = samples[i] * plan->window[n];
    }
    uform__signal_rfft_f32(&plan->fft, frame, spectrum, fft_scratch);
    for (size_t k = 0; k < bins; ++k) power[k] = spectrum[2 * k] * spectrum[2 * k] + spectrum[2 * k + 1] * spectrum[2 * k + 1];
}

typedef struct stft_context_t {
    const uform__signal_mel_plan_t *plan;
    const float *samples;
    size_t count, frames, prongs;
    float *target;   /* power [frames, bins] or log-mel [frames, mels] */
    float *scratch;  /* [threads, thread_floats] */
    float *maxima;   /* [prongs] log-mel only */
} stft_context_t;

static void power_prong(void *opaque, size_t thread, size_t prong) {
    const stft_context_t *context = opaque;
    const size_t bins = context->plan->n_fft / 2 + 1;
    float *scratch = context->scratch + thread * thread_floats(context->plan);
    size_t begin, end;
    uform__split_range(context->frames, context->prongs, prong, &begin, &end);
    for (size_t t = begin; t < end; ++t)
        frame_power(context->plan, context->samples, context->count, t, scratch, context->target + t * bins);
}

/* log10(max(filters · power, 1e-10)) for this prong's frames, and their maximum. */
static void log_mel_prong(void *opaque, size_t thread, size_t prong) {
    const stft_context_t *context = opaque;
    const uform__signal_mel_plan_t *plan = context->plan;
    const size_t bins = plan->n_fft / 2 + 1;
    float *scratch = context->scratch + thread * thread_floats(plan);
    float *power = scratch + plan->n_fft + 2 * bins;
    float maximum = -INFINITY;
    size_t begin, end;
    uform__split_range(context->frames, context->prongs, prong, &begin, &end);
    for (size_t t = begin; t < end; ++t) {
        frame_power(plan, context->samples, context->count, t, scratch, power);
        float *row = context->target + t * plan->mels;
        for (size_t m = 0; m < plan->mels; ++m) {
            const float *filter = plan->filters + m * bins;
            float mel = 0.0f;
            for (size_t k = plan->filter_first[m], e = k + plan->filter_size[m]; k < e; ++k) mel += filter[k] * power[k];
            const float value = log10f(mel > 1e-10f ? mel : 1e-10f);
            row[m] = value;
            if (value > maximum) maximum = value;
        }
    }
    context->maxima[prong] = maximum;
}

static uform_status_t stft_prepare(const uform__signal_mel_plan_t *plan, const float *samples, size_t count,
                                   const void *target, const uform__parallel_t *parallel, stft_context_t *context,
                                   const char *function, uform_outcome_t *outcome) {
    if (!plan || !plan->window)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "plan is NULL or not initialised");
    if (!samples || !target)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", samples ? "target" : "samples");
    if (count <= plan->n_fft / 2)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "%zu samples are too few for reflect padding by %zu (need more than %zu)", count,
                           plan->n_fft / 2, plan->n_fft / 2);
    const size_t threads = uform__parallel_threads(parallel);
    memset(context, 0, sizeof(*context));
    context->plan = plan;
    context->samples = samples;
    context->count = count;
    context->scratch = malloc(threads * thread_floats(plan) * sizeof(float));
    context->maxima = malloc(threads * sizeof(float));
    if (!context->scratch || !context->maxima) {
        free(context->scratch);
        free(context->maxima);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate STFT scratch for %zu threads", threads);
    }
    return UFORM_OK;
}

uform_status_t uform__signal_stft_power_f32(const uform__signal_mel_plan_t *plan, const float *samples, size_t count,
                                            float *power, const uform__parallel_t *parallel,
                                            uform_outcome_t *outcome) {
    stft_context_t context;
    uform_status_t status = stft_prepare(plan, samples, count, power, parallel, &context, __func__, outcome);
    if (status != UFORM_OK) return status;
    const size_t threads = uform__parallel_threads(parallel);
    context.frames = uform__signal_stft_frames(plan, count);
    context.prongs = threads < context.frames ? threads : context.frames;
    context.target = power;
    uform__parallel_for(parallel, context.prongs, power_prong, &context);
    free(context.scratch);
    free(context.maxima);
    return UFORM_OK;
}

uform_status_t uform__signal_log_mel_f32(const uform__signal_mel_plan_t *plan, const float *samples, size_t count,
                                         float *target, const uform__parallel_t *parallel, uform_outcome_t *outcome) {
    stft_context_t context;
    uform_status_t status = stft_prepare(plan, samples, count, target, parallel, &context, __func__, outcome);
    if (status != UFORM_OK) return status;
    const size_t threads = uform__parallel_threads(parallel);
    /* Whisper drops the last STFT frame (stft[..., :-1]); count > n_fft/2 >= hop is not implied, so
     * frames − 1 may be 0 only when count < hop, which leaves an empty output. */
    context.frames = uform__signal_stft_frames(plan, count) - 1;
    context.prongs = threads < context.frames ? threads : context.frames;
    context.target = target;
    uform__parallel_for(parallel, context.prongs, log_mel_prong, &context);
    /* The maximum over the whole spectrogram, combined in prong order (max is exact anyway). */
    float maximum = -INFINITY;
    for (size_t p = 0; p < context.prongs; ++p)
        if (context.maxima[p] > maximum) maximum = context.maxima[p];
    const float floor = maximum - 8.0f;
    for (size_t i = 0, n = context.frames * plan->mels; i < n; ++i) {
        const float value = target[i] > floor ? target[i] : floor;
        target[i] = (value + 4.0f) / 4.0f;
    }
    free(context.scratch);
    free(context.maxima);
    return UFORM_OK;
}
