# Published checkpoints' preprocessing (src/kernels/signal_pil*.c): Pillow's resize and the whole
# processor per CPU class; `bench_pil /usr/bin/python3` also times Pillow's own resize.
add_executable(bench_pil ${CMAKE_CURRENT_SOURCE_DIR}/bench_pil.c)
target_link_libraries(bench_pil PRIVATE uform_internal m)
