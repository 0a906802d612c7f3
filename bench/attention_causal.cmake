# bench_attention_causal: the causal attention forward against the bidirectional one (CLIP's text
# shape, 32 × 77 tokens, 8 heads of 64; and 8 × 300 tokens), per CPU class, F32 and BF16, 1 thread.
add_executable(bench_attention_causal ${CMAKE_CURRENT_LIST_DIR}/bench_attention_causal.c)
target_link_libraries(bench_attention_causal PRIVATE uform_internal)
