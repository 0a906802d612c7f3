/*
 * The exchange of a process alone (exchange.h): the run is this process, so nothing travels; the
 * losses are the batch's own.
 */
#include <stdint.h>
#include <string.h>

#include "train/exchange.h"

static uform_status_t alone_begin(uform__train_exchange_t *exchange, uform__train_work_t *work,
                                  uform_status_t status) {
    exchange->learning_rate_override = work->request->learning_rate_override;
    return status;
}

static uform_status_t alone_losses(uform__train_exchange_t *exchange, uform__train_work_t *work,
                                   uform_status_t status) {
    (void)exchange;
    if (status != UFORM_OK) return status;
    const uform__optimizer_t *optimizer = &work->trainer->optimizer;
    memset(work->d_temperatures, 0, work->trainer->config.temperature_groups * sizeof(float));
    work->contrastive = uform__train_contrastive(work, optimizer->contrastive_weight);
    work->choice = uform__train_choice_loss(work, optimizer->choice_weight);
    return UFORM_OK;
}

static uform_status_t alone_reduce(uform__train_exchange_t *exchange, uform__train_work_t *work,
                                   uform_status_t status) {
    (void)exchange, (void)work;
    return status;
}

static void alone_end(uform__train_exchange_t *exchange) { (void)exchange; }

void uform__train_exchange_open(uform__train_exchange_t *exchange, uform_trainer_t trainer) {
    memset(exchange, 0, sizeof *exchange);
    exchange->member = SIZE_MAX;
    if (trainer->mesh) {
        uform__train_exchange_mesh(exchange, trainer);
        return;
    }
    exchange->begin = alone_begin, exchange->losses = alone_losses;
    exchange->reduce = alone_reduce, exchange->end = alone_end;
}
