/*
 * The contrastive loss (docs/training.md, "Losses"), forward and backward, in double precision: the
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
 *
 * The loss works on a view of bags (uform__train_bags_t): the step's own, or over a mesh the global
 * batch's, of which this member owns a range of bags and computes the terms of its own relations.
 * A process alone runs each prefix's forward and backward together; a mesh member runs every
 * prefix's forward, sums d e over the members (mesh_step.c), then the backward of its own bags.
 */
#include <math.h>
#include <string.h>

#include "train/work.h"

#define NORM_EPS 1e-12

typedef struct contrastive_t {
    const uform__train_bags_t *bags;
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

/* Forward of the bag embeddings at prefix P from the view's embeddings [N, E] (row stride E). */
static void bag_embeddings(contrastive_t *c, size_t E) {
    const float *embeddings = c->bags->embeddings;
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
        size_t begin = c->bags->offsets[b], end = c->bags->offsets[b + 1];
        for (size_t j = begin; j < end; ++j) {
            const double *u = c->u + c->bags->members[j] * P;
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
    if (c->bags->have_sides) return c->bags->sides[other] != c->bags->sides[anchor];
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
 * contents' normalisation: for y/|y|, dy = (dv − v⟨v, dv⟩) / |y|. Only the view's own bags, whose
 * rows land at d_embeddings[i − own_first_row]. `de` is [B, P]. */
static void backward_to_embeddings(contrastive_t *c, const double *de_all, float *d_embeddings, size_t E) {
    size_t P = c->P;
    double *dm = c->dm, *du = c->du;
    const uform__train_bags_t *bags = c->bags;
    for (size_t b = bags->own_first_bag; b < bags->own_first_bag + bags->own_bags; ++b) {
        const double *e = c->e + b * P, *de = de_all + b * P;
        double projection = dot(e, de, P);
        for (size_t k = 0; k < P; ++k) dm[k] = (de[k] - e[k] * projection) / c->bag_norm[b];
        size_t begin = bags->offsets[b], end = bags->offsets[b + 1];
        for (size_t j = begin; j < end; ++j) {
            size_t i = bags->members[j];
            const double *u = c->u + i * P;
            for (size_t k = 0; k < P; ++k) du[k] = dm[k] / (double)(end - begin);
            double along = dot(u, du, P);
            float *dy = d_embeddings + (i - bags->own_first_row) * E;
            for (size_t k = 0; k < P; ++k) dy[k] += (float)((du[k] - u[k] * along) / c->unit_norm[i]);
        }
    }
}

size_t uform__train_contrastive_doubles(size_t sequences, size_t bags, size_t embedding, size_t groups) {
    return sequences * embedding + sequences + 2 * bags * embedding + 2 * bags + 2 * embedding + groups + 8;
}

size_t uform__train_contrastive_prefix_sum(const uform__model_config_t *config) {
    size_t sum = 0;
    for (size_t p = 0; p < config->matryoshka_count; ++p) sum += config->matryoshka[p];
    return sum;
}

/* Carves the scratch (uform__train_contrastive_doubles of the view's N and B, at width E). */
static double *contrastive_begin(contrastive_t *c, const uform__train_bags_t *bags, size_t E, double *scratch) {
    memset(c, 0, sizeof *c);
    c->bags = bags, c->B = bags->B, c->N = bags->N;
    size_t N = c->N, B = c->B;
    double *cursor = scratch;
    c->u = cursor, cursor += N * E;
    c->unit_norm = cursor, cursor += N;
    c->e = cursor, cursor += B * E;
    c->bag_norm = cursor, cursor += B;
    c->de = cursor, cursor += B * E;
    c->logits = cursor, cursor += B;
    c->dm = cursor, cursor += E;
    c->du = cursor, cursor += E;
    return cursor; /* [groups] for the temperatures' d s */
}

/* The full-width bag embeddings of the view's own bags ([own_bags, E], the step's output). */
static void own_bag_embeddings(contrastive_t *c, size_t E, float *out) {
    c->P = E;
    bag_embeddings(c, E);
    const double *first = c->e + c->bags->own_first_bag * E;
    for (size_t i = 0; i < c->bags->own_bags * E; ++i) out[i] = (float)first[i];
}

/* The view's relations at the current prefix: d e into de [B, P] (zeroed here), d s per group into
 * d_scales. Answers the sum of this view's terms of the loss's mean at this prefix. */
static double prefix_forward(contrastive_t *c, const float *temperatures, double factor, double *de,
                             double *d_scales) {
    const uform__train_bags_t *bags = c->bags;
    memset(de, 0, c->B * c->P * sizeof(double));
    double *saved = c->de;
    c->de = de;
    double sum = 0;
    for (size_t r = 0; r < bags->relations; ++r) {
        size_t g = bags->groups ? bags->groups[r] : 0;
        double s = fmin(exp((double)temperatures[g]), 100.0), d_scale = 0;
        sum += direction(c, bags->lefts[r], bags->rights[r], s, factor, &d_scale);
        sum += direction(c, bags->rights[r], bags->lefts[r], s, factor, &d_scale);
        d_scales[g] += d_scale;
    }
    c->de = saved;
    return 0.5 * sum / (double)bags->relations_total;
}

/* d t = d s · exp(t) where exp(t) ≤ 100, else 0 (torch.clamp's gradient). */
static void temperature_gradients(const double *d_scales, const float *temperatures, size_t groups,
                                  float *d_temperatures) {
    for (size_t g = 0; g < groups; ++g) {
        double scale = exp((double)temperatures[g]);
        if (scale <= 100.0) d_temperatures[g] += (float)(d_scales[g] * scale);
    }
}

double uform__train_contrastive(uform__train_work_t *work, double weight) {
    const uform__batch_plan_t *plan = work->plan;
    const uform__model_config_t *config = &work->trainer->config;
    size_t E = config->embedding, N = plan->embeddings;
    memset(work->d_embeddings, 0, N * E * sizeof(float));
    uform__train_bags_t bags;
    memset(&bags, 0, sizeof bags);
    bags.embeddings = work->embeddings, bags.N = N, bags.B = plan->bags;
    bags.offsets = plan->bag_offsets, bags.members = plan->bag_members;
    bags.sides = plan->sides, bags.have_sides = plan->have_sides;
    bags.relations = plan->relations, bags.relations_total = plan->relations;
    bags.lefts = plan->lefts, bags.rights = plan->rights, bags.groups = plan->groups;
    bags.own_bags = plan->bags, bags.own_rows = N;
    contrastive_t c;
    double *d_scales = contrastive_begin(&c, &bags, E, work->contrastive_scratch);
    memset(d_scales, 0, config->temperature_groups * sizeof *d_scales);
    own_bag_embeddings(&c, E, work->bag_embeddings);
    size_t prefixes = config->matryoshka_count, R = plan->relations;
    const float *temperatures = work->trainer->view.temperatures;
    double total = 0;
    for (size_t p = 0; R && p < prefixes; ++p) {
        c.P = config->matryoshka[p];
        bag_embeddings(&c, E);
        double factor = weight * 0.5 / ((double)R * (double)prefixes);
        total += prefix_forward(&c, temperatures, factor, c.de, d_scales);
        backward_to_embeddings(&c, c.de, work->d_embeddings, E);
    }
    temperature_gradients(d_scales, temperatures, config->temperature_groups, work->d_temperatures);
    return prefixes && R ? total / (double)prefixes : 0.0;
}

double uform__train_contrastive_forward(const uform__train_bags_t *bags, const uform__model_config_t *config,
                                        const float *temperatures, double weight, double *scratch, double *de_all,
                                        float *d_temperatures, float *own_embeddings) {
    size_t E = config->embedding, prefixes = config->matryoshka_count;
    contrastive_t c;
    double *d_scales = contrastive_begin(&c, bags, E, scratch);
    memset(d_scales, 0, config->temperature_groups * sizeof *d_scales);
    own_bag_embeddings(&c, E, own_embeddings);
    memset(de_all, 0, bags->B * uform__train_contrastive_prefix_sum(config) * sizeof(double));
    if (!bags->relations_total || !prefixes) return 0.0;
    double total = 0;
    double *de = de_all;
    for (size_t p = 0; p < prefixes; ++p) {
        c.P = config->matryoshka[p];
        bag_embeddings(&c, E);
        double factor = weight * 0.5 / ((double)bags->relations_total * (double)prefixes);
        total += prefix_forward(&c, temperatures, factor, de, d_scales);
        de += bags->B * c.P;
    }
    temperature_gradients(d_scales, temperatures, config->temperature_groups, d_temperatures);
    return total / (double)prefixes;
}

void uform__train_contrastive_backward(const uform__train_bags_t *bags, const uform__model_config_t *config,
                                       double *scratch, const double *de_all, float *d_embeddings) {
    size_t E = config->embedding;
    memset(d_embeddings, 0, bags->own_rows * E * sizeof(float));
    if (!bags->relations_total) return;
    contrastive_t c;
    contrastive_begin(&c, bags, E, scratch);
    const double *de = de_all;
    for (size_t p = 0; p < config->matryoshka_count; ++p) {
        c.P = config->matryoshka[p];
        bag_embeddings(&c, E);
        backward_to_embeddings(&c, de, d_embeddings, E);
        de += bags->B * c.P;
    }
}
