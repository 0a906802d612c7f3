# bench_attention: packed attention forward and backward per CPU class, 1 and 2 threads, with
# PyTorch (Debian's python3) in the same run when it is there.
add_executable(bench_attention ${CMAKE_CURRENT_LIST_DIR}/bench_attention.c)
target_link_libraries(bench_attention PRIVATE uform_internal)
target_compile_definitions(bench_attention PRIVATE BENCH_RESULTS_DIRECTORY="${CMAKE_CURRENT_LIST_DIR}/results"
                           BENCH_TORCH_PYTHON="/usr/bin/python3")
