# bench_index runs the `uform` command and the media fixtures generator; their paths are compiled in.
add_executable(bench_index ${CMAKE_CURRENT_SOURCE_DIR}/bench_index.c)
target_link_libraries(bench_index PRIVATE uform_internal m)
target_compile_definitions(bench_index PRIVATE BENCH_UFORM="$<TARGET_FILE:uform_cli>"
                           BENCH_MEDIA_FIXTURES="$<TARGET_FILE:media_fixtures>")
add_dependencies(bench_index uform_cli media_fixtures)
