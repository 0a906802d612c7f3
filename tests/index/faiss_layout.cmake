# The approximate-index module keeps FAISS's scalar inner-product loop inside one 64-byte line
# (cmake/faiss_text.ld): faiss::fvec_inner_product_ref must start on a 64-byte boundary (its loop is
# the 23 bytes from 0x10). Run as: cmake -DMODULE=libuform-faiss.so.N -P faiss_layout.cmake
execute_process(COMMAND nm -C ${MODULE} OUTPUT_VARIABLE symbols RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "nm could not read ${MODULE} (status ${status})\n0 passed, 1 failed")
endif()
string(REGEX MATCH "([0-9a-f]+) [tT] faiss::fvec_inner_product_ref" found "${symbols}")
if(NOT found)
  message(FATAL_ERROR "${MODULE} has no faiss::fvec_inner_product_ref (another FAISS build? see cmake/faiss_text.ld)\n0 passed, 1 failed")
endif()
math(EXPR offset "0x${CMAKE_MATCH_1} % 64")
if(NOT offset EQUAL 0)
  message(FATAL_ERROR "faiss::fvec_inner_product_ref at 0x${CMAKE_MATCH_1}, ${offset} bytes past a 64-byte line "
                      "(expected 0: the linker script cmake/faiss_text.ld did not apply)\n0 passed, 1 failed")
endif()
message("faiss::fvec_inner_product_ref at 0x${CMAKE_MATCH_1}: on a 64-byte boundary, its loop inside one line\n1 passed, 0 failed")
