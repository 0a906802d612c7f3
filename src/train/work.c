/*
 * A step's working memory (work.h): one table of its pieces, which both the size of the memory and
 * its carving read, so the two cannot disagree.
 *
 * Every piece is a [rows, columns] array of one element type, placed at a 64-byte boundary, in the
 * table's order: the saved activations of every block, then the rest of the work. The pieces marked
 * as the losses' are also what a chunked step keeps for its whole batch (accumulate.c).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/huge_pages.h"
#include "core/outcome.h"
#include "model/stems.h"
#include "train/work.h"

/* The extents a piece's rows and columns are taken from (work.h names the shapes). */
typedef enum extent_t {
    ONE,
    TOKENS,             /* T */
    SEQUENCES,          /* S */
    EMBEDDINGS,         /* N */
    CHOICES,            /* C */
    BAGS,               /* B */
    GROUPS,             /* G, temperature groups */
    HIDDEN,             /* d */
    HIDDEN3,            /* 3d */
    MLP,                /* F */
    EMBEDDING,          /* E */
    HEADS,              /* H */
    BYTE_VALUES,        /* 256 choice logits */
    WIDEST,             /* max(3d, F, E): the widest upstream gradient a product rounds */
    IMAGE_PATCHES,      /* P_m and w_m of the three media modalities */
    VIDEO_PATCHES,
    AUDIO_PATCHES,
    IMAGE_WIDTH,
    VIDEO_WIDTH,
    AUDIO_WIDTH,
    MOST_PATCHES,       /* max P_m */
    CONTRASTIVE,        /* the contrastive loss's scratch, in doubles */
    EXTENT_COUNT
} extent_t;

typedef struct piece_t {
    size_t field;             /* offsetof the piece's pointer in its struct */
    extent_t rows, columns;
    size_t element;           /* bytes */
    int losses;               /* one of the losses' pieces */
} piece_t;

#define F32 sizeof(float)

/* What one block's forward keeps (uform__block_saved_t), for every block. */
#define SAVED(name) offsetof(uform__block_saved_t, name)
static const piece_t block_pieces[] = {
    {SAVED(x), TOKENS, HIDDEN, F32, 0},    {SAVED(a1), TOKENS, HIDDEN, F32, 0},  {SAVED(qkv), TOKENS, HIDDEN3, F32, 0},
    {SAVED(att), TOKENS, HIDDEN, F32, 0},  {SAVED(lse), HEADS, TOKENS, F32, 0},  {SAVED(h), TOKENS, HIDDEN, F32, 0},
    {SAVED(a2), TOKENS, HIDDEN, F32, 0},   {SAVED(u), TOKENS, MLP, F32, 0},      {SAVED(g), TOKENS, MLP, F32, 0},
    {SAVED(mean1), TOKENS, ONE, F32, 0},   {SAVED(rstd1), TOKENS, ONE, F32, 0},  {SAVED(mean2), TOKENS, ONE, F32, 0},
    {SAVED(rstd2), TOKENS, ONE, F32, 0},
};
#undef SAVED

/* The rest of the work (uform__train_work_t), after the blocks. */
#define WORK(name) offsetof(uform__train_work_t, name)
static const piece_t work_pieces[] = {
    {WORK(final), SEQUENCES, HIDDEN, F32, 0},
    {WORK(lse_kept), HEADS, SEQUENCES, F32, 0},
    {WORK(patches[UFORM_MODALITY_IMAGE]), IMAGE_PATCHES, IMAGE_WIDTH, F32, 0},
    {WORK(patches[UFORM_MODALITY_VIDEO]), VIDEO_PATCHES, VIDEO_WIDTH, F32, 0},
    {WORK(patches[UFORM_MODALITY_AUDIO]), AUDIO_PATCHES, AUDIO_WIDTH, F32, 0},
    {WORK(projected), MOST_PATCHES, HIDDEN, F32, 0},
    {WORK(head_in), SEQUENCES, HIDDEN, F32, 0},
    {WORK(head_normed), SEQUENCES, HIDDEN, F32, 0},
    {WORK(head_mean), SEQUENCES, ONE, F32, 0},
    {WORK(head_rstd), SEQUENCES, ONE, F32, 0},
    {WORK(embeddings), EMBEDDINGS, EMBEDDING, F32, 1},
    {WORK(d_embeddings), EMBEDDINGS, EMBEDDING, F32, 1},
    {WORK(logits), CHOICES, BYTE_VALUES, F32, 1},
    {WORK(d_logits), CHOICES, BYTE_VALUES, F32, 1},
    {WORK(d_temperatures), GROUPS, ONE, F32, 1},
    {WORK(dx), TOKENS, HIDDEN, F32, 0},
    {WORK(dh), TOKENS, HIDDEN, F32, 0},
    {WORK(dt), TOKENS, HIDDEN, F32, 0},
    {WORK(datt), TOKENS, HIDDEN, F32, 0},
    {WORK(dqkv), TOKENS, HIDDEN3, F32, 0},
    {WORK(dg), TOKENS, MLP, F32, 0},
    {WORK(deltas), HEADS, TOKENS, F32, 0},
    {WORK(dy_rounded), TOKENS, WIDEST, F32, 0},
    {WORK(bag_embeddings), BAGS, EMBEDDING, F32, 1},
    {WORK(contrastive_scratch), CONTRASTIVE, ONE, sizeof(double), 1},
};
#undef WORK
#undef F32

static size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

static size_t larger(size_t a, size_t b) { return a > b ? a : b; }

static void extents_of(const uform__model_config_t *config, const uform__batch_plan_t *plan, size_t *extent) {
    memset(extent, 0, EXTENT_COUNT * sizeof *extent);
    extent[ONE] = 1, extent[TOKENS] = plan->tokens, extent[SEQUENCES] = plan->sequences;
    extent[EMBEDDINGS] = plan->embeddings, extent[CHOICES] = plan->choices, extent[BAGS] = plan->bags;
    extent[GROUPS] = config->temperature_groups;
    extent[HIDDEN] = config->hidden, extent[HIDDEN3] = 3 * config->hidden, extent[MLP] = config->mlp;
    extent[EMBEDDING] = config->embedding, extent[HEADS] = config->heads, extent[BYTE_VALUES] = 256;
    extent[WIDEST] = larger(larger(3 * config->hidden, config->mlp), config->embedding);
    for (int m = UFORM_MODALITY_IMAGE; m <= UFORM_MODALITY_AUDIO; ++m) {
        extent[IMAGE_PATCHES + m - UFORM_MODALITY_IMAGE] = plan->patch_rows[m];
        extent[IMAGE_WIDTH + m - UFORM_MODALITY_IMAGE] = uform__stem_patch_width(config, (uform_modality_t)m);
        extent[MOST_PATCHES] = larger(extent[MOST_PATCHES], plan->patch_rows[m]);
    }
    extent[CONTRASTIVE] =
        uform__train_contrastive_doubles(plan->embeddings, plan->bags, config->embedding, config->temperature_groups);
}

static size_t piece_bytes(const piece_t *piece, const size_t *extent) {
    return aligned(extent[piece->rows] * extent[piece->columns] * piece->element);
}

/* Stores `at` into the pointer field at `field` (float * or double *, represented as void * is). */
static void place(unsigned char *field, void *at) { memcpy(field, &at, sizeof at); }

/* Walks the table from `cursor` and answers the bytes it spans: with `work`, every piece's pointer
 * is set (with `blocks`, the blocks' too); `losses_only` takes the losses' pieces alone. */
static size_t walk(const size_t *extent, size_t depth, int losses_only, unsigned char *cursor,
                   uform__train_work_t *work, uform__block_saved_t *blocks) {
    size_t offset = 0;
    for (size_t i = 0; i < depth && !losses_only; ++i)
        for (size_t p = 0; p < sizeof block_pieces / sizeof *block_pieces; ++p) {
            if (blocks) place((unsigned char *)&blocks[i] + block_pieces[p].field, cursor + offset);
            offset += piece_bytes(&block_pieces[p], extent);
        }
    for (size_t p = 0; p < sizeof work_pieces / sizeof *work_pieces; ++p) {
        if (losses_only && !work_pieces[p].losses) continue;
        if (work) place((unsigned char *)work + work_pieces[p].field, cursor + offset);
        offset += piece_bytes(&work_pieces[p], extent);
    }
    return offset;
}

static unsigned char *aligned_start(void *memory) {
    return (unsigned char *)(((uintptr_t)memory + 63) & ~(uintptr_t)63);
}

static size_t gemm_bytes(const uform__gemm_kernels_t *gemm, const uform__call_context_t *context) {
    return aligned(gemm->scratch_bytes(uform__parallel_threads(context->parallel)));
}

void uform__train_work_begin(uform__train_work_t *work, uform_trainer_t trainer, const uform__batch_plan_t *plan,
                             const uform_trainer_step_t *request, uform__call_context_t *context) {
    memset(work, 0, sizeof *work);
    work->trainer = trainer, work->plan = plan, work->request = request, work->context = context;
    work->compute.gemm = uform__gemm_kernels(trainer->cpu_class);
    work->compute.nn = uform__nn_kernels(trainer->cpu_class);
    work->compute.signal = uform__signal_kernels(trainer->cpu_class);
    work->compute.parallel = context->parallel;
    work->compute.compute = trainer->compute;
    work->round_inputs = trainer->compute == UFORM_COMPUTE_BF16 && !uform__gemm_rounds_to_bf16(work->compute.gemm);
    work->whole = request;
    work->failed_content = work->failed_member = SIZE_MAX;
}

size_t uform__train_work_bytes(const uform__train_work_t *work, uform__train_pieces_t pieces) {
    const uform__model_config_t *config = &work->trainer->config;
    size_t extent[EXTENT_COUNT];
    extents_of(config, work->plan, extent);
    int losses_only = pieces == UFORM__TRAIN_PIECES_LOSSES;
    size_t bytes = 64 + walk(extent, config->depth, losses_only, NULL, NULL, NULL);
    return losses_only ? bytes : bytes + gemm_bytes(work->compute.gemm, work->context);
}

void uform__train_work_carve(uform__train_work_t *work, uform__train_pieces_t pieces, void *memory) {
    const uform__model_config_t *config = &work->trainer->config;
    size_t extent[EXTENT_COUNT];
    extents_of(config, work->plan, extent);
    int losses_only = pieces == UFORM__TRAIN_PIECES_LOSSES;
    unsigned char *cursor = aligned_start(memory);
    cursor += walk(extent, config->depth, losses_only, cursor, work, losses_only ? NULL : work->blocks);
    if (losses_only) return;
    work->compute.gemm_scratch = cursor;
    work->compute.gemm_scratch_bytes = gemm_bytes(work->compute.gemm, work->context);
}

/* Makes the trainer's kept memory hold `bytes` (it only grows). It is 2 MiB-aligned and advised
 * into transparent huge pages where the kernel offers them on request (the arena does the same):
 * the activations are walked column-wise by the products' transposing packs and the norm
 * backward, which on 4 KiB pages miss the TLB once per row. */
uform_status_t uform__train_step_memory(uform_trainer_t trainer, size_t bytes, uform__call_context_t *context) {
    if (trainer->memory.bytes >= bytes) return UFORM_OK;
    free(trainer->memory.base);
    const size_t huge = UFORM__HUGE_PAGE;
    size_t rounded = (bytes + huge - 1) / huge * huge;
    trainer->memory.base = aligned_alloc(huge, rounded);
    uform__advise_huge_pages(trainer->memory.base, rounded);
    trainer->memory.bytes = trainer->memory.base ? bytes : 0;
    if (!trainer->memory.base)
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                           "cannot allocate %zu MiB for the step's activations", bytes >> 20);
    return UFORM_OK;
}
