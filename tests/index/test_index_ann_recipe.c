/*
 * The default recipe rule of uform_index_ann_build (ann_build.c, docs/indexes.md "Approximate
 * search"): HNSW32 below 100,000 items; IVF<n>,Flat from 100,000 up to 1,000,000; above,
 * IVF<n>,PQ<m>np; n the power of two nearest 4·√count and m the largest divisor of dims at most
 * dims/4. The expected strings are worked out by hand below, at and around the switches and for
 * dims whose quarter does or does not divide them. A format slip in the rule (it once said "%zn",
 * which stores instead of printing) fails here without building anything.
 *
 * Beside it, the default rescoring of uform_index_ann_search (ann_search.c, docs/indexes.md
 * "Rescoring by default"): for codes that approximate the rows, max(10·top, min(1000, scanned / 4))
 * with scanned = count · nprobe / lists (count without lists); none for full rows; an explicit R
 * as asked but at least top; UFORM_INDEX_ANN_RERANK_NONE none. Worked out by hand below.
 */
#include <string.h>

#include "common/check.h"
#include "index/ann.h"

typedef struct case_t {
    size_t count, dims;
    const char *recipe;
} case_t;

static const case_t cases[] = {
    {1, 64, "HNSW32"},
    {99999, 256, "HNSW32"},
    {100000, 64, "IVF1024,Flat"},  /* the graph's switch is exclusive: 4·√100,000 ≈ 1,265, 1,024 nearer than 2,048 */
    {300000, 64, "IVF2048,Flat"},  /* 2,191: 2,048 */
    {999999, 256, "IVF4096,Flat"},
    {1000000, 256, "IVF4096,Flat"}, /* the flat lists' switch is inclusive */
    {1000001, 256, "IVF4096,PQ64np"}, /* 4·√1,000,001 ≈ 4,000: 4,096 is nearer than 2,048 */
    {1000001, 768, "IVF4096,PQ192np"},
    {1000001, 64, "IVF4096,PQ16np"},
    {1000001, 100, "IVF4096,PQ25np"},
    {1000001, 50, "IVF4096,PQ10np"}, /* 50/4 = 12 does not divide 50, nor 11; 10 does */
    {1000001, 7, "IVF4096,PQ1np"},   /* 7/4 = 1 */
    {1000001, 3, "IVF4096,PQ1np"},   /* 3/4 = 0: at least one sub-quantiser */
    {4000000, 512, "IVF8192,PQ128np"},   /* 4·2,000 = 8,000: 8,192 (192 away) over 4,096 */
    {100000000, 100, "IVF32768,PQ25np"}, /* 40,000: 32,768 (7,232 away) over 65,536 */
    {1000000000, 1024, "IVF131072,PQ256np"}, /* 126,491: 131,072 (4,581 away) over 65,536 */
};

typedef struct rerank_case_t {
    uint64_t count, dims, lists, code_bytes;
    size_t rerank, top, nprobe, expected;
} rerank_case_t;

static const rerank_case_t rerank_cases[] = {
    {1000000, 64, 4096, 16, 0, 10, 128, 1000},  /* 31,250 scanned: the cap */
    {1000000, 64, 4096, 16, 0, 10, 4, 244},     /* 976.6 scanned, / 4 = 244.1 */
    {1000000, 64, 4096, 16, 0, 10, 1, 100},     /* 61 from the scan: 10 · top is more */
    {1000000, 64, 4096, 16, 0, 200, 128, 2000}, /* 10 · top over the cap */
    {10000000, 64, 16384, 16, 0, 10, 512, 1000},
    {20000, 64, 512, 16, 0, 10, 16, 156},       /* test_index_ann's IVF512,PQ16np: 625 scanned */
    {1000000, 64, 0, 64, 0, 10, 0, 1000},       /* no lists (an HNSW over SQ8 codes): every item counts */
    {1000, 64, 0, 16, 0, 10, 0, 250},           /* a small PQ without lists */
    {1000000, 64, 4096, 256, 0, 10, 128, 0},    /* IVF,Flat: full rows, not rescored */
    {100000, 64, 0, 256, 0, 10, 0, 0},          /* HNSW over F32 */
    {1000000, 64, 4096, 16, UFORM_INDEX_ANN_RERANK_NONE, 10, 128, 0},
    {1000000, 64, 4096, 16, 5, 10, 128, 10},    /* an explicit R below top: top */
    {1000000, 64, 4096, 256, 40, 10, 128, 40},  /* explicit on full rows: as asked */
};

int main(void) {
    for (size_t i = 0; i < sizeof rerank_cases / sizeof rerank_cases[0]; ++i) {
        const rerank_case_t *c = &rerank_cases[i];
        uform__faiss_facts_t facts = {0};
        facts.count = c->count, facts.dimensions = c->dims, facts.lists = c->lists, facts.code_bytes = c->code_bytes;
        facts.inverted = c->lists != 0;
        size_t got = uform__ann_rerank(&facts, c->rerank, c->top, c->nprobe);
        CHECK_MSG(got == c->expected, "rerank case %zu (%llu items, %llu lists, %llu code bytes, rerank %zu, top %zu, "
                  "nprobe %zu): %zu, expected %zu", i, (unsigned long long)c->count, (unsigned long long)c->lists,
                  (unsigned long long)c->code_bytes, c->rerank, c->top, c->nprobe, got, c->expected);
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char recipe[UFORM__ANN_RECIPE_CAPACITY];
        memset(recipe, 'x', sizeof recipe);
        uform__ann_default_recipe(cases[i].count, cases[i].dims, recipe);
        CHECK_MSG(memchr(recipe, 0, sizeof recipe) != NULL, "%zu items × %zu dims: the recipe is not terminated",
                  cases[i].count, cases[i].dims);
        recipe[sizeof recipe - 1] = 0;
        CHECK_MSG(strcmp(recipe, cases[i].recipe) == 0, "%zu items × %zu dims: '%s', expected '%s'", cases[i].count,
                  cases[i].dims, recipe, cases[i].recipe);
    }
    return check_finish();
}
