# INT8 GEMM kernels: every class this CPU runs against SERIAL bit for bit, SERIAL against 64-bit
# sums and the stated epilogue, 1-3 threads, odd shapes, the largest K.
uform_add_test(NAME test_gemm_i8 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gemm_i8.c LABELS kernels TIMEOUT 300)
# The same test on an emulated AVX2-only CPU (qemu-x86_64 -cpu max: no AVX-512), so nothing of the
# AVX-512 classes leaks into the Haswell class's int8 kernels (a leak dies of SIGILL there).
add_test(NAME test_gemm_i8_emulated_avx2
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_emulated_avx2.sh $<TARGET_FILE:test_gemm_i8>)
set_tests_properties(test_gemm_i8_emulated_avx2 PROPERTIES TIMEOUT 300 LABELS "kernels;noasan")
