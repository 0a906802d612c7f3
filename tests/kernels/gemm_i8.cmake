# INT8 GEMM kernels: every class this CPU runs against SERIAL bit for bit, SERIAL against 64-bit
# sums and the stated epilogue, 1-3 threads, odd shapes, the largest K.
uform_add_test(NAME test_gemm_i8 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gemm_i8.c LABELS kernels TIMEOUT 300)
