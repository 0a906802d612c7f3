# ab_text: batch-1 text encodes of several libuform builds in one process, taking turns (A/B on a
# shared host; bench/ab_text.c says how). It opens the builds with dlmopen and links none of them,
# so it takes only the public header from the source tree:
#   BUILD/bench/ab_text FOLDER TEXTS SECONDS THREADS main/libuform.so.4 branch/libuform.so.4
add_executable(ab_text ${CMAKE_CURRENT_SOURCE_DIR}/ab_text.c)
target_include_directories(ab_text PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(ab_text PRIVATE ${CMAKE_DL_LIBS})
