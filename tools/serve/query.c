/* The query a search scores (query.h). */
#include "query.h"

#include <math.h>
#include <string.h>

void serve_search_query(const float *embedding, size_t width, size_t dims, float *query) {
    if (dims == width) {
        if (query != embedding) memcpy(query, embedding, dims * sizeof(float));
        return;
    }
    double norm = 0;
    for (size_t c = 0; c < dims; ++c) norm += (double)embedding[c] * embedding[c];
    float scale = norm > 0 ? (float)(1.0 / sqrt(norm)) : 0.0f;
    for (size_t c = 0; c < dims; ++c) query[c] = embedding[c] * scale;
}
