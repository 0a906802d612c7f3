# GEMM kernels: every class this CPU runs against SERIAL and double precision, determinism
# across thread counts, and the training products against PyTorch autograd.
uform_add_test(NAME test_gemm SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gemm.c LABELS kernels TIMEOUT 120)
uform_add_test(NAME test_gemm_torch SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gemm_torch.c LABELS kernels TIMEOUT 120
               ARGS ${UFORM_TORCH_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_gemm_torch.py)
uform_add_test(NAME test_gemm_gelu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gemm_gelu.c LABELS kernels TIMEOUT 120)
uform_add_test(NAME test_gemm_output SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gemm_output.c LABELS kernels TIMEOUT 120)
uform_add_test(NAME test_gemm_pack SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gemm_pack.c LABELS kernels TIMEOUT 120)
# Where the BF16 products round, bit for bit against an exact integer reference (test_gemm_rounding.c).
uform_add_test(NAME test_gemm_rounding SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gemm_rounding.c LABELS kernels TIMEOUT 120)
# The activations outside test_gemm_gelu's reach: nn's element-wise slot against each class's
# epilogue, products against SERIAL (F32 and BF16 Y), the int8 products' epilogue.
uform_add_test(NAME test_gemm_activation SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gemm_activation.c LABELS kernels tsan
               TIMEOUT 120)
# The forward product's caller-named prefetch (`ahead`: an index search's next block) changes no bit.
uform_add_test(NAME test_gemm_ahead SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gemm_ahead.c LABELS kernels TIMEOUT 120)
