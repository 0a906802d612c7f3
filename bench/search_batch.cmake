# bench_search_batch: batched exact search against FAISS's IndexFlatIP in the same run (issue 35).
# FAISS (Debian's libfaiss-dev: a static libfaiss.a with OpenMP and the system BLAS) is linked into
# this benchmark only, through bench_search_faiss.cpp; without it the program times uform alone.
add_executable(bench_search_batch ${CMAKE_CURRENT_SOURCE_DIR}/bench_search_batch.c)
target_link_libraries(bench_search_batch PRIVATE uform m)
find_package(OpenMP QUIET COMPONENTS CXX)
if(OpenMP_CXX_FOUND)
  find_package(faiss CONFIG QUIET)
endif()
if(TARGET faiss)
  target_sources(bench_search_batch PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/bench_search_faiss.cpp)
  target_link_libraries(bench_search_batch PRIVATE faiss OpenMP::OpenMP_CXX ${CMAKE_DL_LIBS})
  target_compile_definitions(bench_search_batch PRIVATE BENCH_WITH_FAISS=1)
else()
  message(STATUS "bench_search_batch: FAISS not found (apt-get install libfaiss-dev): it will time uform alone")
endif()
