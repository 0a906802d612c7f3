add_executable(bench_search ${CMAKE_CURRENT_SOURCE_DIR}/bench_search.c)
target_link_libraries(bench_search PRIVATE uform_internal m)
