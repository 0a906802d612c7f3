# bench_session: a transformer block as a tensor program vs the same block written directly in C
# over the same kernels, in one run; prints a table and writes bench_session.json.
add_executable(bench_session ${CMAKE_CURRENT_SOURCE_DIR}/bench_session.c)
target_link_libraries(bench_session PRIVATE uform_internal)
