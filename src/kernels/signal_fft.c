/*
 * Real FFT of any length: a mixed-radix Stockham complex FFT plus the even-length split step.
 *
 * Stockham (self-sorting, out of place, ping-pong between two buffers), decimation in time: the
 * stage of radix p with `stride` = product of the radices already done reads
 * a_r = x[j + r·N/p] (r < p) for j < N/p, multiplies a_r by exp(−2πi·r·k / (stride·p)) with
 * k = j mod stride, takes the p-point DFT b_m, and writes b_m to
 * y[(j / stride)·stride·p + k + m·stride]. After the last stage y is the DFT in natural order.
 *
 * When M has a prime factor above 64, the M-point DFT runs as Bluestein's chirp-z convolution
 * instead: with c[n] = exp(−πi·n²/M), X[k] = c[k] · Σ_n (x[n]·c[n]) · conj(c[k − n]), a cyclic
 * convolution of length L >= 2M − 1 (L of radices 2, 3, 5) done with two Stockham FFTs of L and
 * the precomputed spectrum of conj(c) (the inverse FFT by conjugation). O(N log N) for any N.
 *
 * Shapes: complex data are interleaved float pairs (re, im); scratch is two buffers of the stage
 * length (M, or L under Bluestein).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "kernels/signal.h"

#define SIGNAL_PI 3.14159265358979323846

void uform__signal_fft_plan_free(uform__signal_fft_plan_t *plan) {
    if (!plan) return;
    free(plan->twiddles);
    free(plan->roots);
    free(plan->split);
    free(plan->chirp);
    free(plan->chirp_spectrum);
    memset(plan, 0, sizeof(*plan));
}

/* Factors n into radices (4 first, then 2, 3, 5, then other primes) and answers the largest prime
 * factor other than 2, 3, 5 (1 if none). */
static size_t factor(uform__signal_fft_plan_t *plan, size_t n) {
    size_t rest = n, largest = 1;
    plan->factor_count = 0;
    while (rest % 4 == 0) plan->factors[plan->factor_count++] = 4, rest /= 4;
    static const size_t small[] = {2, 3, 5};
    for (size_t i = 0; i < 3; ++i)
        while (rest % small[i] == 0) plan->factors[plan->factor_count++] = small[i], rest /= small[i];
    for (size_t p = 7; rest > 1; p += 2) {
        if (p * p > rest) p = rest; /* what is left is prime */
        while (rest % p == 0) {
            plan->factors[plan->factor_count++] = p;
            rest /= p;
            largest = p;
        }
    }
    return largest;
}

static void stockham(const uform__signal_fft_plan_t *plan, float **x, float **y);

uform_status_t uform__signal_fft_plan_init(uform__signal_fft_plan_t *plan, size_t length, uform_outcome_t *outcome) {
    if (!plan) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "plan is NULL");
    memset(plan, 0, sizeof(*plan));
    if (length == 0 || length > ((size_t)1 << 28))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "FFT length %zu is outside [1, 2^28]", length);
    plan->length = length;
    plan->complex_length = (length % 2 == 0) ? length / 2 : length;
    plan->stage_length = plan->complex_length;
    const size_t m = plan->complex_length;
    if (factor(plan, m) > 64) {
        /* Bluestein: the smallest L >= 2M − 1 whose factors are 2, 3 and 5. */
        size_t best = (size_t)-1;
        for (size_t two = 1; two < 4 * m; two *= 2)
            for (size_t three = two; three < 4 * m; three *= 3)
                for (size_t five = three; five < 4 * m; five *= 5)
                    if (five >= 2 * m - 1 && five < best) best = five;
        plan->stage_length = best;
        factor(plan, best);
    }
    const size_t n = plan->stage_length;

    /* Twiddles: stage s holds [stride, p - 1] complex exp(−2πi·r·k / (stride·p)), r = 1..p-1.
     * Stages of a radix without a hand-written butterfly also get its p roots exp(−2πi·t / p). */
    size_t total = 0, roots = 0, stride = 1;
    for (size_t s = 0; s < plan->factor_count; ++s) {
        const size_t p = plan->factors[s];
        plan->twiddle_offsets[s] = total;
        plan->root_offsets[s] = roots;
        total += stride * (p - 1) * 2;
        if (p > 5) roots += 2 * p;
        stride *= p;
    }
    plan->twiddles = malloc((total ? total : 1) * sizeof(float));
    plan->roots = malloc((roots ? roots : 1) * sizeof(float));
    plan->split = malloc((length / 2 + 1) * 2 * sizeof(float));
    if (n != m) {
        plan->chirp = malloc(2 * m * sizeof(float));
        plan->chirp_spectrum = malloc(2 * n * sizeof(float));
    }
    if (!plan->twiddles || !plan->roots || !plan->split || (n != m && (!plan->chirp || !plan->chirp_spectrum))) {
        uform__signal_fft_plan_free(plan);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate the FFT plan tables for length %zu", length);
    }
    stride = 1;
    for (size_t s = 0; s < plan->factor_count; ++s) {
        const size_t p = plan->factors[s];
        float *twiddle = plan->twiddles + plan->twiddle_offsets[s];
        for (size_t k = 0; k < stride; ++k)
            for (size_t r = 1; r < p; ++r) {
                const double angle = -2.0 * SIGNAL_PI * (double)(r * k) / (double)(stride * p);
                twiddle[(k * (p - 1) + r - 1) * 2 + 0] = (float)cos(angle);
                twiddle[(k * (p - 1) + r - 1) * 2 + 1] = (float)sin(angle);
            }
        if (p > 5)
            for (size_t t = 0; t < p; ++t) {
                const double angle = -2.0 * SIGNAL_PI * (double)t / (double)p;
                plan->roots[plan->root_offsets[s] + 2 * t + 0] = (float)cos(angle);
                plan->roots[plan->root_offsets[s] + 2 * t + 1] = (float)sin(angle);
            }
        stride *= p;
    }
    for (size_t k = 0; k <= length / 2; ++k) {
        const double angle = -2.0 * SIGNAL_PI * (double)k / (double)length;
        plan->split[2 * k + 0] = (float)cos(angle);
        plan->split[2 * k + 1] = (float)sin(angle);
    }
    if (n != m) {
        /* chirp[t] = exp(−πi·t²/M), with t² reduced mod 2M so the angle stays exact; the kernel
         * conj(chirp) is laid out cyclically (t and L − t) and transformed once, with 1/L folded in. */
        float *buffer = calloc(4 * n, sizeof(float));
        if (!buffer) {
            uform__signal_fft_plan_free(plan);
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "Bluestein kernel for length %zu", length);
        }
        float *x = buffer, *y = buffer + 2 * n;
        for (size_t t = 0; t < m; ++t) {
            const unsigned long long square = (unsigned long long)t * t % (2ull * m);
            const double angle = -SIGNAL_PI * (double)square / (double)m;
            plan->chirp[2 * t] = (float)cos(angle);
            plan->chirp[2 * t + 1] = (float)sin(angle);
            x[2 * t] = (float)cos(angle), x[2 * t + 1] = (float)-sin(angle);
            if (t) x[2 * (n - t)] = x[2 * t], x[2 * (n - t) + 1] = x[2 * t + 1];
        }
        stockham(plan, &x, &y);
        for (size_t k = 0; k < 2 * n; ++k) plan->chirp_spectrum[k] = x[k] / (float)n;
        free(buffer);
    }
    return UFORM_OK;
}

size_t uform__signal_fft_scratch_floats(const uform__signal_fft_plan_t *plan) { return 4 * plan->stage_length; }

/* One Stockham stage of radix p: x [n] complex → y [n] complex (see the file comment). */
static void stage(const uform__signal_fft_plan_t *plan, size_t s, size_t stride, const float *x, float *y) {
    const size_t n = plan->stage_length, p = plan->factors[s], quarter = n / p;
    const float *twiddles = plan->twiddles + plan->twiddle_offsets[s];
    const float *roots = plan->roots + plan->root_offsets[s];
    float a[2 * 64], b[2 * 64];
    /* Radices are at most 64: larger prime factors go through Bluestein (plan init). */
    for (size_t j = 0; j < quarter; ++j) {
        const size_t k = j % stride;
        const float *twiddle = twiddles + k * (p - 1) * 2;
        float *out = y + 2 * ((j - k) * p + k);
        a[0] = x[2 * j];
        a[1] = x[2 * j + 1];
        for (size_t r = 1; r < p; ++r) {
            const float *in = x + 2 * (j + r * quarter), *w = twiddle + 2 * (r - 1);
            a[2 * r] = in[0] * w[0] - in[1] * w[1];
            a[2 * r + 1] = in[0] * w[1] + in[1] * w[0];
        }
        switch (p) {
        case 2:
            b[0] = a[0] + a[2], b[1] = a[1] + a[3];
            b[2] = a[0] - a[2], b[3] = a[1] - a[3];
            break;
        case 4: {
            const float t0r = a[0] + a[4], t0i = a[1] + a[5], t1r = a[0] - a[4], t1i = a[1] - a[5];
            const float t2r = a[2] + a[6], t2i = a[3] + a[7], t3r = a[2] - a[6], t3i = a[3] - a[7];
            b[0] = t0r + t2r, b[1] = t0i + t2i;
            b[4] = t0r - t2r, b[5] = t0i - t2i;
            b[2] = t1r + t3i, b[3] = t1i - t3r; /* t1 − i·t3 */
            b[6] = t1r - t3i, b[7] = t1i + t3r; /* t1 + i·t3 */
            break;
        }
        case 3: {
            const float s3 = 0.866025403784438646763723f;
            const float t1r = a[2] + a[4], t1i = a[3] + a[5], t2r = a[2] - a[4], t2i = a[3] - a[5];
            const float mr = a[0] - 0.5f * t1r, mi = a[1] - 0.5f * t1i;
            b[0] = a[0] + t1r, b[1] = a[1] + t1i;
            b[2] = mr + s3 * t2i, b[3] = mi - s3 * t2r; /* m − i·s·t2 */
            b[4] = mr - s3 * t2i, b[5] = mi + s3 * t2r;
            break;
        }
        case 5: {
            const float c1 = 0.309016994374947424102293f, c2 = -0.809016994374947424102293f;
            const float s1 = 0.951056516295153572116439f, s2 = 0.587785252292473129168706f;
            const float t1r = a[2] + a[8], t1i = a[3] + a[9], t3r = a[2] - a[8], t3i = a[3] - a[9];
            const float t2r = a[4] + a[6], t2i = a[5] + a[7], t4r = a[4] - a[6], t4i = a[5] - a[7];
            const float m1r = a[0] + c1 * t1r + c2 * t2r, m1i = a[1] + c1 * t1i + c2 * t2i;
            const float m2r = a[0] + c2 * t1r + c1 * t2r, m2i = a[1] + c2 * t1i + c1 * t2i;
            const float u1r = s1 * t3r + s2 * t4r, u1i = s1 * t3i + s2 * t4i; /* b1 = m1 − i·u1 */
            const float u2r = s2 * t3r - s1 * t4r, u2i = s2 * t3i - s1 * t4i; /* b2 = m2 − i·u2 */
            b[0] = a[0] + t1r + t2r, b[1] = a[1] + t1i + t2i;
            b[2] = m1r + u1i, b[3] = m1i - u1r;
            b[8] = m1r - u1i, b[9] = m1i + u1r;
            b[4] = m2r + u2i, b[5] = m2i - u2r;
            b[6] = m2r - u2i, b[7] = m2i + u2r;
            break;
        }
        default:
            for (size_t m = 0; m < p; ++m) {
                float re = a[0], im = a[1];
                for (size_t r = 1; r < p; ++r) {
                    const float *root = roots + 2 * ((r * m) % p);
                    re += a[2 * r] * root[0] - a[2 * r + 1] * root[1];
                    im += a[2 * r] * root[1] + a[2 * r + 1] * root[0];
                }
                b[2 * m] = re, b[2 * m + 1] = im;
            }
            break;
        }
        for (size_t m = 0; m < p; ++m) {
            out[2 * m * stride] = b[2 * m];
            out[2 * m * stride + 1] = b[2 * m + 1];
        }
    }
}

/* Runs every stage over *x, ping-ponging with *y; on return *x holds the DFT. */
static void stockham(const uform__signal_fft_plan_t *plan, float **x, float **y) {
    size_t stride = 1;
    for (size_t s = 0; s < plan->factor_count; ++s) {
        stage(plan, s, stride, *x, *y);
        stride *= plan->factors[s];
        float *swap = *x;
        *x = *y, *y = swap;
    }
}

void uform__signal_rfft_f32(const uform__signal_fft_plan_t *plan, const float *input, float *output, float *scratch) {
    const size_t m = plan->complex_length, n = plan->stage_length, length = plan->length;
    float *x = scratch, *y = scratch + 2 * n;
    /* Even N: z[t] = x[2t] + i·x[2t+1] is exactly the interleaved input. Odd N: imaginary zero. */
    if (m != length) memcpy(x, input, length * sizeof(float));
    else
        for (size_t t = 0; t < m; ++t) x[2 * t] = input[t], x[2 * t + 1] = 0.0f;
    if (n != m) {
        /* Bluestein: x·chirp zero-padded to L, times the kernel's spectrum, inverse FFT by
         * conjugation (conj(FFT(conj(.))), 1/L already in the spectrum), times chirp. */
        for (size_t t = 0; t < m; ++t) {
            const float re = x[2 * t], im = x[2 * t + 1], *c = plan->chirp + 2 * t;
            x[2 * t] = re * c[0] - im * c[1];
            x[2 * t + 1] = re * c[1] + im * c[0];
        }
        memset(x + 2 * m, 0, 2 * (n - m) * sizeof(float));
        stockham(plan, &x, &y);
        for (size_t k = 0; k < n; ++k) {
            const float re = x[2 * k], im = x[2 * k + 1], *b = plan->chirp_spectrum + 2 * k;
            x[2 * k] = re * b[0] - im * b[1];
            x[2 * k + 1] = -(re * b[1] + im * b[0]);
        }
        stockham(plan, &x, &y);
        for (size_t k = 0; k < m; ++k) {
            const float re = x[2 * k], im = -x[2 * k + 1], *c = plan->chirp + 2 * k;
            x[2 * k] = re * c[0] - im * c[1];
            x[2 * k + 1] = re * c[1] + im * c[0];
        }
    } else
        stockham(plan, &x, &y);
    if (m == length) {
        memcpy(output, x, (length / 2 + 1) * 2 * sizeof(float));
        return;
    }
    /* Split step (N = 2M): E = (Z[k] + conj Z[M−k]) / 2, O = −i (Z[k] − conj Z[M−k]) / 2,
     * X[k] = E + exp(−2πi k/N)·O for k = 0..M, indices of Z taken mod M. */
    for (size_t k = 0; k <= m; ++k) {
        const float *zk = x + 2 * (k % m), *zc = x + 2 * ((m - k) % m);
        const float er = 0.5f * (zk[0] + zc[0]), ei = 0.5f * (zk[1] - zc[1]);
        const float or_ = 0.5f * (zk[1] + zc[1]), oi = -0.5f * (zk[0] - zc[0]);
        const float *w = plan->split + 2 * k;
        output[2 * k] = er + (or_ * w[0] - oi * w[1]);
        output[2 * k + 1] = ei + (or_ * w[1] + oi * w[0]);
    }
}
