/*
 * The exchanges of a step over a mesh (mesh_step.h).
 *
 * The global batch is the members' batches end to end in member order: member j's bags are global
 * bags bag_base(j) .. and its embedding sequences global rows row_base(j) .. . Relations stay with
 * the member that passed them (their bags are its own), but their candidates are every global bag.
 * The gradient of the losses with respect to a bag's embedding collects terms from every member's
 * relations; the all-reduce of d e in double precision gives every member the sum, and each member
 * carries its own bags' part back through its trunk. The parameter gradients are then sums over the
 * members, each member's terms already divided by the global counts (relations, choices), so the
 * all-reduced gradient is the global batch's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/outcome.h"
#include "core/clock.h"
#include "train/exchange.h"

#define MESSAGE_BYTES 256

/* Fixed-size: every member sends one, so its size can never disagree (UFORM__MESH_PROTOCOL). */
struct uform__mesh_shape_t {
    uint32_t status;
    uint32_t have_sides;
    uint64_t steps;
    uint64_t bags, rows, relations, choices;
    double learning_rate_override;
    uint64_t failed_content; /* the member's own content that failed, or UINT64_MAX */
    char message[MESSAGE_BYTES];
};

static const char *function_of(const uform__train_work_t *work) { return work->context->function; }

/* The step failed on `member` (its status): every member now fails it. */
static uform_status_t agreed_failure(uform__train_mesh_step_t *step, uform__train_work_t *work, uform_status_t local,
                                     size_t member, uform_status_t status, const char *message) {
    step->settled = 1;
    if (local != UFORM_OK) return local; /* our own message is already in the outcome */
    return uform__fail(work->context->outcome, status, function_of(work),
                       "member %zu of %zu: %s; every member's step failed and every trainer is unchanged", member,
                       step->members, message);
}

static uform_status_t begin(uform__train_mesh_step_t *step, uform__train_work_t *work, uform_status_t status) {
    uform_trainer_t trainer = work->trainer;
    uform__call_context_t *context = work->context;
    memset(step, 0, sizeof *step);
    step->mesh = trainer->mesh, step->members = trainer->mesh->count, step->me = trainer->mesh->index;
    step->trainer = trainer;
    step->buckets = trainer->buckets, step->bucket_count = trainer->bucket_count;
    step->overlap = trainer->buckets && trainer->mesh->overlap == UFORM_MESH_OVERLAP_BACKWARD;
    uform_status_t taken = uform__mesh_acquire(step->mesh, context->outcome, context->function);
    if (taken != UFORM_OK) {
        step->settled = 1;
        return status != UFORM_OK ? status : taken;
    }
    step->held = 1;
    step->shapes = calloc(step->members + 1, sizeof *step->shapes);
    uform__mesh_shape_t mine;
    memset(&mine, 0, sizeof mine);
    if (!step->shapes && status == UFORM_OK)
        status = uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate %zu shapes",
                             step->members);
    if (!step->shapes) {
        /* Without room for the others' shapes we cannot take part: the others time out. */
        step->settled = 1;
        return status;
    }
    const uform__batch_plan_t *plan = work->plan;
    mine.status = (uint32_t)status;
    mine.steps = trainer->steps;
    mine.failed_content = work->failed_content == SIZE_MAX ? UINT64_MAX : (uint64_t)work->failed_content;
    if (status == UFORM_OK) {
        mine.have_sides = (uint32_t)plan->have_sides;
        mine.bags = plan->bags, mine.rows = plan->embeddings;
        mine.relations = plan->relations, mine.choices = plan->choices;
        mine.learning_rate_override = work->request->learning_rate_override;
    } else {
        memcpy(mine.message, context->outcome->message, MESSAGE_BYTES - 1);
    }
    size_t *bytes = calloc(step->members, sizeof *bytes);
    if (!bytes) {
        step->settled = 1;
        return status != UFORM_OK ? status
                                  : uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                                                "cannot allocate %zu sizes", step->members);
    }
    for (size_t j = 0; j < step->members; ++j) bytes[j] = sizeof mine;
    uform_outcome_t exchange;
    memset(&exchange, 0, sizeof exchange);
    uform_status_t exchanged = uform__mesh_allgather(step->mesh, &mine, step->shapes, bytes, "the batches' shapes",
                                                     &exchange, context->function);
    free(bytes);
    if (exchanged != UFORM_OK) {
        step->settled = 1;
        if (status != UFORM_OK) return status;
        uform__outcome_copy_text(context->outcome, &exchange);
        return uform__fail(context->outcome, exchanged, context->function, "%s", exchange.message);
    }
    for (size_t j = 0; j < step->members; ++j) {
        const uform__mesh_shape_t *shape = &step->shapes[j];
        if (shape->status != UFORM_OK && j != step->me) {
            char message[MESSAGE_BYTES + 1];
            memcpy(message, shape->message, MESSAGE_BYTES);
            message[MESSAGE_BYTES] = 0;
            if (status == UFORM_OK) {
                work->failed_member = j;
                work->failed_content = shape->failed_content == UINT64_MAX ? SIZE_MAX : (size_t)shape->failed_content;
            }
            return agreed_failure(step, work, status, j, (uform_status_t)shape->status, message);
        }
    }
    if (status != UFORM_OK) {
        step->settled = 1;
        return status;
    }
    /* Sides matter only to members with bags: the first of those sets the rule for all. */
    size_t rule = step->members;
    for (size_t j = 0; j < step->members && rule == step->members; ++j)
        if (step->shapes[j].bags) rule = j;
    for (size_t j = 0; j < step->members; ++j) {
        const uform__mesh_shape_t *shape = &step->shapes[j];
        if (shape->steps != trainer->steps) {
            step->settled = 1;
            return uform__fail(context->outcome, UFORM_INTERNAL, context->function,
                               "member %zu has taken %llu steps and this member (%zu) %llu: the members are out of step",
                               j, (unsigned long long)shape->steps, step->me, (unsigned long long)trainer->steps);
        }
        if (shape->bags && shape->have_sides != step->shapes[rule].have_sides) {
            step->settled = 1;
            return uform__fail(context->outcome, UFORM_INVALID_ARGUMENT, context->function,
                               "member %zu %s sides and member %zu %s: over a mesh every member with bags passes "
                               "sides, or none does",
                               rule, step->shapes[rule].have_sides ? "passes" : "does not pass", j,
                               shape->have_sides ? "does" : "does not");
        }
        if (j == step->me) step->bag_base = step->bags, step->row_base = step->rows;
        step->bags += shape->bags, step->rows += shape->rows;
        step->relations += shape->relations, step->choices += shape->choices;
    }
    step->have_sides = rule < step->members && step->shapes[rule].have_sides;
    step->learning_rate_override = step->shapes[0].learning_rate_override;
    return UFORM_OK;
}

static size_t padded(size_t bytes) { return (bytes + 7) / 8 * 8; }

/* What member j sends in the embeddings' all-gather: its status, its embeddings [rows, E] (F32),
 * its bags' offsets [bags + 1] and members [rows] (uint64, local) and sides [bags] (bytes). */
static size_t payload_bytes(const uform__mesh_shape_t *shape, size_t E) {
    return 8 + padded(shape->rows * E * sizeof(float)) + (shape->bags + 1) * 8 + shape->rows * 8 + padded(shape->bags);
}

typedef struct global_view_t {
    unsigned char *gathered;        /* every member's payload end to end */
    size_t *offsets, *members;      /* [bags + 1], [rows] global */
    uint8_t *sides;                 /* [bags] */
    float *embeddings;              /* [rows, E] */
    size_t *lefts, *rights;         /* [own relations] global bag indices */
    double *scratch;                /* the loss's scratch */
    double *sums;                   /* [members + 2 + bags·ΣP]: statuses, the two losses, d e */
} global_view_t;

static void view_free(global_view_t *view) {
    free(view->gathered), free(view->offsets), free(view->members), free(view->sides), free(view->embeddings);
    free(view->lefts), free(view->rights), free(view->scratch), free(view->sums);
}

static void pack(const uform__train_work_t *work, uform_status_t status, unsigned char *out, size_t E) {
    const uform__batch_plan_t *plan = work->plan;
    uint32_t word = (uint32_t)status;
    memset(out, 0, 8);
    memcpy(out, &word, sizeof word);
    if (status != UFORM_OK) return; /* the rest is never read */
    unsigned char *cursor = out + 8;
    memcpy(cursor, work->embeddings, plan->embeddings * E * sizeof(float));
    cursor += padded(plan->embeddings * E * sizeof(float));
    for (size_t b = 0; b <= plan->bags; ++b, cursor += 8) {
        uint64_t value = plan->bag_offsets[b];
        memcpy(cursor, &value, 8);
    }
    for (size_t i = 0; i < plan->embeddings; ++i, cursor += 8) {
        uint64_t value = plan->bag_members[i];
        memcpy(cursor, &value, 8);
    }
    memcpy(cursor, plan->sides, plan->bags);
}

/* Unpacks every member's payload into the global view. */
static void unpack(const uform__train_mesh_step_t *step, global_view_t *view, size_t E) {
    const unsigned char *cursor = view->gathered;
    size_t bag_base = 0, row_base = 0;
    view->offsets[0] = 0;
    for (size_t j = 0; j < step->members; ++j) {
        const uform__mesh_shape_t *shape = &step->shapes[j];
        const unsigned char *at = cursor + 8;
        memcpy(view->embeddings + row_base * E, at, shape->rows * E * sizeof(float));
        at += padded(shape->rows * E * sizeof(float));
        uint64_t first = 0, value;
        memcpy(&first, at, 8);
        for (size_t b = 0; b < shape->bags; ++b) {
            memcpy(&value, at + (b + 1) * 8, 8);
            view->offsets[bag_base + b + 1] = row_base + (size_t)(value - first);
        }
        at += (shape->bags + 1) * 8;
        for (size_t i = 0; i < shape->rows; ++i) {
            memcpy(&value, at + i * 8, 8);
            view->members[row_base + i] = row_base + (size_t)value;
        }
        at += shape->rows * 8;
        memcpy(view->sides + bag_base, at, shape->bags);
        bag_base += shape->bags, row_base += shape->rows;
        cursor += payload_bytes(shape, E);
    }
}

static uform_status_t view_allocate(const uform__train_mesh_step_t *step, const uform__train_work_t *work,
                                    global_view_t *view, size_t gathered, size_t sums) {
    const uform__model_config_t *config = &work->trainer->config;
    size_t E = config->embedding;
    size_t doubles = uform__train_contrastive_doubles(step->rows, step->bags, E, config->temperature_groups);
    view->gathered = malloc(gathered + 8);
    view->offsets = malloc((step->bags + 1) * sizeof *view->offsets);
    view->members = malloc((step->rows + 1) * sizeof *view->members);
    view->sides = malloc(step->bags + 1);
    view->embeddings = malloc((step->rows * E + 1) * sizeof(float));
    view->lefts = malloc((work->plan->relations + 1) * sizeof(size_t));
    view->rights = malloc((work->plan->relations + 1) * sizeof(size_t));
    view->scratch = malloc(doubles * sizeof(double));
    view->sums = calloc(sums, sizeof(double));
    if (view->gathered && view->offsets && view->members && view->sides && view->embeddings && view->lefts &&
        view->rights && view->scratch && view->sums)
        return UFORM_OK;
    return uform__fail(work->context->outcome, UFORM_OUT_OF_MEMORY, work->context->function,
                       "cannot allocate the global batch's %zu bags and %zu embeddings", step->bags, step->rows);
}

/* After an exchange that carried statuses: the first failure (ours first) settles the step. */
static uform_status_t check_statuses(uform__train_mesh_step_t *step, uform__train_work_t *work, uform_status_t local,
                                     const uint32_t *statuses, const char *during) {
    if (local != UFORM_OK) {
        step->settled = 1;
        return local;
    }
    for (size_t j = 0; j < step->members; ++j)
        if (statuses[j] != UFORM_OK) {
            char message[160];
            snprintf(message, sizeof message, "its %s failed (%s)", during, uform_status_name((uform_status_t)statuses[j]));
            return agreed_failure(step, work, local, j, (uform_status_t)statuses[j], message);
        }
    return UFORM_OK;
}

static uform_status_t exchange_failed(uform__train_mesh_step_t *step, uform__train_work_t *work, uform_status_t local,
                                      uform_status_t exchanged, const uform_outcome_t *exchange) {
    step->settled = 1;
    if (local != UFORM_OK) return local;
    return uform__fail(work->context->outcome, exchanged, function_of(work), "%s", exchange->message);
}

static uform_status_t losses(uform__train_mesh_step_t *step, uform__train_work_t *work, uform_status_t status) {
    if (step->settled) return status;
    uform_trainer_t trainer = work->trainer;
    const uform__model_config_t *config = &trainer->config;
    const uform__batch_plan_t *plan = work->plan;
    uform__call_context_t *context = work->context;
    size_t E = config->embedding, K = step->members, P_sum = uform__train_contrastive_prefix_sum(config);
    /* Sizes every member computes alike from the shapes. */
    size_t *bytes = calloc(K, sizeof *bytes), gathered = 0;
    global_view_t view;
    memset(&view, 0, sizeof view);
    size_t sums = K + 2 + step->bags * P_sum;
    if (bytes) {
        for (size_t j = 0; j < K; ++j) bytes[j] = payload_bytes(&step->shapes[j], E), gathered += bytes[j];
    }
    uform_status_t local = status;
    if (!bytes || view_allocate(step, work, &view, gathered, sums) != UFORM_OK) {
        /* Without the buffers we cannot take part; the others will time out. */
        free(bytes);
        view_free(&view);
        step->settled = 1;
        return status != UFORM_OK ? status
                                  : uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                                                "cannot allocate the exchange of %zu bytes", gathered);
    }
    size_t mine = payload_bytes(&step->shapes[step->me], E);
    unsigned char *own = calloc(1, mine); /* a failed member sends only its status; the rest is zeros */
    if (!own) {
        free(bytes);
        view_free(&view);
        step->settled = 1;
        return status != UFORM_OK ? status
                                  : uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                                                "cannot allocate %zu bytes", mine);
    }
    pack(work, local, own, E);
    uform_outcome_t exchange;
    memset(&exchange, 0, sizeof exchange);
    uform_status_t exchanged =
        uform__mesh_allgather(step->mesh, own, view.gathered, bytes, "the bag embeddings", &exchange, context->function);
    free(own);
    uint32_t *statuses = calloc(K, sizeof *statuses);
    if (exchanged == UFORM_OK && statuses) {
        const unsigned char *cursor = view.gathered;
        for (size_t j = 0; j < K; cursor += bytes[j], ++j) memcpy(&statuses[j], cursor, sizeof(uint32_t));
    }
    free(bytes);
    if (exchanged != UFORM_OK) {
        status = exchange_failed(step, work, local, exchanged, &exchange);
    } else if (!statuses) {
        step->settled = 1;
        if (local == UFORM_OK)
            status = uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate statuses");
    } else {
        status = check_statuses(step, work, local, statuses, "forward");
    }
    free(statuses);
    if (step->settled) {
        view_free(&view);
        return status;
    }
    /* Everyone's embeddings are here: this member's relations over the global bags. */
    unpack(step, &view, E);
    for (size_t r = 0; r < plan->relations; ++r)
        view.lefts[r] = plan->lefts[r] + step->bag_base, view.rights[r] = plan->rights[r] + step->bag_base;
    uform__train_bags_t bags;
    memset(&bags, 0, sizeof bags);
    bags.embeddings = view.embeddings, bags.N = step->rows, bags.B = step->bags;
    bags.offsets = view.offsets, bags.members = view.members;
    bags.sides = view.sides, bags.have_sides = step->have_sides;
    bags.relations = plan->relations, bags.lefts = view.lefts, bags.rights = view.rights, bags.groups = plan->groups;
    bags.relations_total = step->relations;
    bags.own_first_bag = step->bag_base, bags.own_bags = plan->bags;
    bags.own_first_row = step->row_base, bags.own_rows = plan->embeddings;
    memset(work->d_temperatures, 0, config->temperature_groups * sizeof(float));
    double *sums_of = view.sums;
    sums_of[step->me] = (double)UFORM_OK;
    sums_of[K] = uform__train_contrastive_forward(&bags, config, trainer->view.temperatures,
                                                  trainer->optimizer.contrastive_weight, view.scratch, sums_of + K + 2,
                                                  work->d_temperatures, work->bag_embeddings);
    work->choice_total = step->choices;
    sums_of[K + 1] = uform__train_choice_loss(work, trainer->optimizer.choice_weight);
    /* d e of every bag, summed over the members (and the loss sums with it). Nothing can fail between
     * the two exchanges, so no status travels in this one. */
    exchanged = uform__mesh_allreduce_f64(step->mesh, sums_of, sums, "the embeddings' gradients", &exchange,
                                          context->function);
    if (exchanged != UFORM_OK) {
        status = exchange_failed(step, work, UFORM_OK, exchanged, &exchange);
    } else {
        work->contrastive = sums_of[K], work->choice = sums_of[K + 1];
        uform__train_contrastive_backward(&bags, config, view.scratch, sums_of + K + 2, work->d_embeddings);
    }
    view_free(&view);
    return status;
}

/* ---- the gradients' buckets ---- */

uform__train_bucket_t *uform__train_buckets_plan(uform_trainer_t trainer, size_t *count) {
    const size_t limit = UFORM__MESH_BUCKET_BYTES / sizeof(float), merge = UFORM__TRAIN_BUCKET_MERGE / sizeof(float);
    size_t depth = trainer->config.depth, blocks_end = trainer->total;
    const uform__param_t *temperatures = uform__train_param(trainer, "temperatures");
    if (temperatures) blocks_end = temperatures->offset; /* the trunk's blocks come first (model/layout.c) */
    /* Block i's floats: from its first tensor to the next block's (or the trunk's end). */
    size_t *starts = calloc(depth + 1, sizeof *starts);
    size_t capacity = depth + 2 + 2 * trainer->total / limit + 2;
    uform__train_bucket_t *buckets = calloc(capacity, sizeof *buckets);
    if (!starts || !buckets) {
        free(starts), free(buckets);
        return NULL;
    }
    for (size_t i = 0; i < depth; ++i) {
        char name[64];
        snprintf(name, sizeof name, "trunk.%zu.norm1.weight", i);
        const uform__param_t *first = uform__train_param(trainer, name);
        starts[i] = first ? first->offset : 0;
    }
    starts[depth] = blocks_end;
    size_t n = 0, i = depth;
    while (i > 0) {
        size_t end = starts[i], lowest = --i;
        while (lowest > 0 && end - starts[lowest] < merge) --lowest; /* small blocks share a bucket */
        if (end - starts[lowest] < merge) lowest = 0;
        /* Pieces of at most `limit` floats, from the end down, each final with block `lowest`. */
        for (size_t top = end; top > starts[lowest];) {
            size_t bottom = top - starts[lowest] > limit ? top - limit : starts[lowest];
            buckets[n++] = (uform__train_bucket_t){bottom, top - bottom, lowest};
            top = bottom;
        }
        i = lowest;
    }
    for (size_t first = blocks_end; first < trainer->total; first += limit)
        buckets[n++] = (uform__train_bucket_t){first, trainer->total - first < limit ? trainer->total - first : limit,
                                               SIZE_MAX};
    free(starts);
    *count = n;
    return buckets;
}

static void submit(uform__train_mesh_step_t *step, uform_trainer_t trainer, size_t until) {
    if (!step->buckets) return; /* a mesh of one */
    for (; step->submitted < until; ++step->submitted) {
        const uform__train_bucket_t *bucket = &step->buckets[step->submitted];
        uform__mesh_bucket_submit(step->mesh, trainer->grads + bucket->first, bucket->count);
    }
}

static void block_done(void *state, size_t block) {
    uform__train_mesh_step_t *step = state;
    size_t until = step->submitted;
    while (until < step->bucket_count && step->buckets[until].lowest == block) ++until;
    submit(step, step->trainer, until);
}

/* Every bucket not yet handed over, then the wait for all of them. */
static uform_status_t reduce_buckets(uform__train_mesh_step_t *step, uform__train_work_t *work,
                                     uform_outcome_t *exchange, double *waited) {
    double start = uform__seconds_now();
    submit(step, work->trainer, step->bucket_count);
    double wait = 0;
    uform_status_t status =
        uform__mesh_buckets_finish(step->mesh, exchange, work->context->function, &wait, &step->exchange_ran);
    *waited = step->overlap ? wait : uform__seconds_now() - start;
    return status;
}

/* Every member's status after the backward (an all-reduce of one float each). */
static uform_status_t exchange_statuses(uform__train_mesh_step_t *step, uform__train_work_t *work,
                                        uform_status_t status) {
    uform__call_context_t *context = work->context;
    size_t K = step->members;
    float *words = calloc(K, sizeof *words);
    uint32_t *statuses = calloc(K, sizeof *statuses);
    if (!words || !statuses) {
        free(words), free(statuses);
        step->settled = 1;
        return status != UFORM_OK ? status
                                  : uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                                                "cannot allocate %zu statuses", K);
    }
    words[step->me] = (float)status;
    uform_outcome_t exchange;
    memset(&exchange, 0, sizeof exchange);
    uform_status_t exchanged = uform__mesh_allreduce_f32(step->mesh, words, K, "the members' statuses", &exchange,
                                                         context->function);
    for (size_t j = 0; j < K; ++j) statuses[j] = (uint32_t)words[j];
    free(words);
    if (exchanged != UFORM_OK) {
        free(statuses);
        return exchange_failed(step, work, status, exchanged, &exchange);
    }
    status = check_statuses(step, work, status, statuses, "backward");
    free(statuses);
    return status;
}

static uform_status_t reduce(uform__train_mesh_step_t *step, uform__train_work_t *work, uform_status_t status) {
    if (step->settled) return status;
    uform_outcome_t exchange;
    memset(&exchange, 0, sizeof exchange);
    uform_status_t exchanged;
    if (step->overlap) {
        /* Some buckets are on their way already; every member hands over every bucket, whatever
         * became of its own backward, and the statuses come after. */
        exchanged = reduce_buckets(step, work, &exchange, &step->exchange_wait);
        if (exchanged != UFORM_OK) return exchange_failed(step, work, status, exchanged, &exchange);
        return exchange_statuses(step, work, status);
    }
    /* Statuses first: the gradients are only worth sending when every member has them. */
    status = exchange_statuses(step, work, status);
    if (status != UFORM_OK) return status;
    exchanged = reduce_buckets(step, work, &exchange, &step->exchange_wait);
    if (exchanged != UFORM_OK) return exchange_failed(step, work, UFORM_OK, exchanged, &exchange);
    return UFORM_OK;
}

static void end(uform__train_mesh_step_t *step) {
    if (step->held) uform__mesh_release(step->mesh);
    free(step->shapes);
    memset(step, 0, sizeof *step);
}

/* ---- the exchange over the mesh (exchange.h) ---- */

static uform_status_t mesh_begin(uform__train_exchange_t *exchange, uform__train_work_t *work,
                                 uform_status_t status) {
    uform__train_mesh_step_t *step = &exchange->mesh;
    status = begin(step, work, status);
    if (status == UFORM_OK) exchange->learning_rate_override = step->learning_rate_override;
    if (step->overlap) exchange->block_done = block_done, exchange->block_done_state = step;
    return status;
}

static uform_status_t mesh_losses(uform__train_exchange_t *exchange, uform__train_work_t *work,
                                  uform_status_t status) {
    return losses(&exchange->mesh, work, status);
}

static uform_status_t mesh_reduce(uform__train_exchange_t *exchange, uform__train_work_t *work,
                                  uform_status_t status) {
    status = reduce(&exchange->mesh, work, status);
    exchange->wait_seconds = exchange->mesh.exchange_wait, exchange->ran_seconds = exchange->mesh.exchange_ran;
    return status;
}

static void mesh_end(uform__train_exchange_t *exchange) { end(&exchange->mesh); }

void uform__train_exchange_mesh(uform__train_exchange_t *exchange, uform_trainer_t trainer) {
    exchange->member = trainer->mesh->index;
    exchange->begin = mesh_begin, exchange->losses = mesh_losses;
    exchange->reduce = mesh_reduce, exchange->end = mesh_end;
}
