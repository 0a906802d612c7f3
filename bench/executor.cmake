add_executable(bench_executor ${CMAKE_CURRENT_SOURCE_DIR}/bench_executor.c)
target_link_libraries(bench_executor PRIVATE uform_internal)
