# bench_gemm: our GEMM per CPU class against OpenBLAS (F32) and oneDNN (BF16) in the same run.
# OpenBLAS and oneDNN are linked into this executable only, never into libuform.
pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
find_library(DNNL_LIBRARY dnnl)
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h)
find_package(OpenMP COMPONENTS C)
if(OPENBLAS_FOUND AND DNNL_LIBRARY AND DNNL_INCLUDE_DIR AND OpenMP_C_FOUND)
  add_executable(bench_gemm ${CMAKE_CURRENT_LIST_DIR}/bench_gemm.c)
  target_include_directories(bench_gemm PRIVATE ${DNNL_INCLUDE_DIR} ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(bench_gemm PRIVATE uform_internal PkgConfig::OPENBLAS ${DNNL_LIBRARY} OpenMP::OpenMP_C m)
else()
  message(STATUS "bench_gemm skipped: needs OpenBLAS (pkg-config openblas), oneDNN (libdnnl) and OpenMP")
endif()
