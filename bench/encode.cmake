add_executable(bench_encode ${CMAKE_CURRENT_SOURCE_DIR}/bench_encode.c)
target_link_libraries(bench_encode PRIVATE uform_internal m)
