# Search kernels (src/kernels/search*.c): every class this machine runs against SERIAL and a
# double-precision reference.
uform_add_test(NAME test_search_kernels SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_search_kernels.c LABELS kernels
               TIMEOUT 120)
