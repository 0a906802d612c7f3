# bench_footprint: shared objects, start-up time and RSS of a process that links the shared libuform.
add_executable(bench_footprint bench_footprint.c)
target_link_libraries(bench_footprint PRIVATE uform)
