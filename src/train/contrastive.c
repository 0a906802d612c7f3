/*
 * The contrastive loss (training.md, "Losses"), forward and backward, in double precision: the
 * batch's bags and relations are few (a few hundred vectors), so this costs nothing next to the
 * trunk and keeps the loss exact to float rounding of its inputs.
 *
 * For every Matryoshka prefix P: u_i = y_i / |y_i| with y_i the first P columns of embedding
 * sequence i's projection; bag b: e_b = m_b / |m_b|, m_b the mean of its contents' u_i. For relation
 * r = (l, q) in group g, s = min(exp(t_g), 100):
 *     loss_r = ½ [CE(s·⟨e_l, e_c⟩ over c ∈ C(l), target q) + CE(s·⟨e_q, e_c⟩ over c ∈ C(q), target l)]
 * with C(l) the bags on the side opposite l (every bag but l without sides). The loss is the mean
 * over prefixes of the mean over relations. Norms are clamped below at 1e-12
 * (torch.nn.functional.normalize's eps).
 */
#include <math.h>
#include <string.h>

#include "train/work.h"

#define NORM_EPS 1e-12

typedef struct contrastive_t {
    const uform__batch_plan_t *plan;
    size_t P, B, N;
    double *u, *unit_norm;   /* [N, P], [N] */
    double *e, *bag_norm;    /* [B, P], [B] */
    double *de;              /* [B, P] */
    double *logits;          /* [B] */
    double *dm, *du;         /* [P] each */
} contrastive_t;

static double dot(const double *a, const double *b, size_t n) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

/* Forward of the bag embeddings at prefix P from embeddings [N, E] (row stride E). */
static void bag_embeddings(contrastive_t *c, const float *embeddings, size_t E) {
    size_t P = c->P;
    for (size_t i = 0; i < c->N; ++i) {
        double *u = c->u + i * P, norm = 0;
        for (size_t k = 0; k < P; ++k) u[k] = embeddings[i * E + k], norm += u[k] * u[k];
        norm = fmax(sqrt(norm), NORM_EPS);
        c->unit_norm[i] = norm;
        for (size_t k = 0; k < P; ++k) u[k] /= norm;
    }
    for (size_t b = 0; b < c->B; ++b) {
        double *e = c->e + b * P;
        memset(e, 0, P * sizeof *e);
        size_t begin = c->plan->bag_offsets[b], end = c->plan->bag_offsets[b + 1];
        for (size_t j = begin; j < end; ++j) {
            const double *u = c->u + c->plan->bag_members[j] * P;
            for (size_t k = 0; k < P; ++k) e[k] += u[k];
        }
        double norm = 0;
        for (size_t k = 0; k < P; ++k) e[k] /= (double)(end - begin), norm += e[k] * e[k];
        norm = fmax(sqrt(norm), NORM_EPS);
        c->bag_norm[b] = norm;
        for (size_t k = 0; k < P; ++k) e[k] /= norm;
    }
}

static int candidate(const contrastive_t *c, size_t anchor, size_t other) {
    if (c->plan->have_sides) return c->plan->sides[other] != c->plan->sides[anchor];
    return other != anchor;
}

/* One direction of a relation: CE(s·⟨e_a, e_c⟩ over C(a), target t) times `weight`; accumulates
 * d e (into c->de) and d s (answered through *d_scale). Answers the unweighted cross-entropy. */
static double direction(contrastive_t *c, size_t a, size_t t, double s, double weight, double *d_scale) {
    size_t P = c->P;
    const double *ea = c->e + a * P;
    double largest = -INFINITY;
    for (size_t b = 0; b < c->B; ++b) {
        if (!candidate(c, a, b)) continue;
        c->logits[b] = dot(ea, c->e + b * P, P);
        largest = fmax(largest, s * c->logits[b]);
    }
    double sum = 0;
    for (size_t b = 0; b < c->B; ++b)
        if (candidate(c, a, b)) sum += exp(s * c->logits[b] - largest);
    double log_sum = largest + log(sum);
    double loss = log_sum - s * c->logits[t];
    double *dea = c->de + a * P;
    for (size_t b = 0; b < c->B; ++b) {
        if (!candidate(c, a, b)) continue;
        double dz = (exp(s * c->logits[b] - log_sum) - (b == t)) * weight; /* d loss / d z_b */
        *d_scale += dz * c->logits[b];
        double *deb = c->de + b * P;
        const double *eb = c->e + b * P;
        for (size_t k = 0; k < P; ++k) dea[k] += s * dz * eb[k], deb[k] += s * dz * ea[k];
    }
    return loss;
}

/* d e_b → d y_i (first P columns of d embeddings), through the bag's normalisation and mean and the
 * contents' normalisation: for y/|y|, dy = (dv − v⟨v, dv⟩) / |y|. */
static void backward_to_embeddings(contrastive_t *c, float *d_embeddings, size_t E) {
    size_t P = c->P;
    double *dm = c->dm, *du = c->du;
    for (size_t b = 0; b < c->B; ++b) {
        const double *e = c->e + b * P, *de = c->de + b * P;
        double projection = dot(e, de, P);
        for (size_t k = 0; k < P; ++k) dm[k] = (de[k] - e[k] * projection) / c->bag_norm[b];
        size_t begin = c->plan->bag_offsets[b], end = c->plan->bag_offsets[b + 1];
        for (size_t j = begin; j < end; ++j) {
            size_t i = c->plan->bag_members[j];
            const double *u = c->u + i * P;
            for (size_t k = 0; k < P; ++k) du[k] = dm[k] / (double)(end - begin);
            double along = dot(u, du, P);
            float *dy = d_embeddings + i * E;
            for (size_t k = 0; k < P; ++k) dy[k] += (float)((du[k] - u[k] * along) / c->unit_norm[i]);
        }
    }
}

size_t uform__train_contrastive_doubles(size_t sequences, size_t bags, size_t embedding, size_t groups) {
    return sequences * embedding + sequences + 2 * bags * embedding + 2 * bags + 2 * embedding + groups + 8;
}

double uform__train_contrastive(uform__train_work_t *work, double weight) {
    const uform__batch_plan_t *plan = work->plan;
    const uform__model_config_t *config = &work->trainer->config;
    size_t E = config->embedding, N = plan->embeddings, B = plan->bags;
    memset(work->d_embeddings, 0, N * E * sizeof(float));
    contrastive_t c;
    memset(&c, 0, sizeof c);
    c.plan = plan, c.B = B, c.N = N;
    /* Scratch for the widest prefix (E), from the work memory: the bag embeddings output is
     * computed at E too. */
    double *cursor = work->contrastive_scratch;
    c.u = cursor, cursor += N * E;
    c.unit_norm = cursor, cursor += N;
    c.e = cursor, cursor += B * E;
    c.bag_norm = cursor, cursor += B;
    c.de = cursor, cursor += B * E;
    c.logits = cursor, cursor += B;
    c.dm = cursor, cursor += E;
    c.du = cursor, cursor += E;
    double *d_scales = cursor;
    memset(d_scales, 0, config->temperature_groups * sizeof *d_scales);
    /* The full-width bag embeddings (the step's output). */
    c.P = E;
    bag_embeddings(&c, work->embeddings, E);
    for (size_t i = 0; i < B * E; ++i) work->bag_embeddings[i] = (float)c.e[i];
    double total = 0;
    size_t prefixes = config->matryoshka_count, R = plan->relations;
    const float *temperatures = work->trainer->view.temperatures;
    for (size_t p = 0; R && p < prefixes; ++p) {
        c.P = config->matryoshka[p];
        bag_embeddings(&c, work->embeddings, E);
        memset(c.de, 0, B * c.P * sizeof(double));
        double factor = weight * 0.5 / ((double)R * (double)prefixes), sum = 0;
        for (size_t r = 0; r < R; ++r) {
            size_t g = plan->groups ? plan->groups[r] : 0;
            double s = fmin(exp((double)temperatures[g]), 100.0), d_scale = 0;
            sum += direction(&c, plan->lefts[r], plan->rights[r], s, factor, &d_scale);
            sum += direction(&c, plan->rights[r], plan->lefts[r], s, factor, &d_scale);
            d_scales[g] += d_scale;
        }
        total += 0.5 * sum / (double)R;
        backward_to_embeddings(&c, work->d_embeddings, E);
    }
    /* d t = d s · exp(t) where exp(t) ≤ 100, else 0 (torch.clamp's gradient). */
    for (size_t g = 0; g < config->temperature_groups; ++g) {
        double scale = exp((double)temperatures[g]);
        if (scale <= 100.0) work->d_temperatures[g] += (float)(d_scales[g] * scale);
    }
    return prefixes && R ? total / (double)prefixes : 0.0;
}
