/* The query a search of the server's index scores, made once for the exact search (the batcher)
 * and the approximate one (the search route). */
#ifndef UFORM_TOOLS_SERVE_QUERY_H
#define UFORM_TOOLS_SERVE_QUERY_H

#include <stddef.h>

/* `query` [dims] from `embedding` [width], the library's normalised embedding of the query: for a
 * full-width index (dims == width) the embedding untouched, which is the query `uform search`
 * scores, so the two answer the same scores bit for bit; for a Matryoshka index of `dims` < width
 * columns, the prefix renormalised (norm summed in double; a zero prefix stays zero), as an encode
 * with config.dimensions = dims computes it. `query` may be `embedding` itself. */
void serve_search_query(const float *embedding, size_t width, size_t dims, float *query);

#endif
