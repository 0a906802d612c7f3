# bench_mesh: the mesh's step cost with 1-3 processes, and its all-reduce against raw Gloo's; --links:
# on links shaped with tc between network namespaces, and the scaling table; --accumulate: peak memory.
add_executable(bench_mesh ${CMAKE_CURRENT_SOURCE_DIR}/bench_mesh.c ${CMAKE_CURRENT_SOURCE_DIR}/bench_mesh_raw.cpp
               ${CMAKE_CURRENT_SOURCE_DIR}/bench_mesh_links.c ${CMAKE_CURRENT_SOURCE_DIR}/bench_mesh_memory.c
               ${CMAKE_CURRENT_SOURCE_DIR}/bench_mesh_batch.c
               ${PROJECT_SOURCE_DIR}/tests/fixtures/demo_media.c)
target_link_libraries(bench_mesh PRIVATE uform_internal gloo ${UFORM_MEDIA_TARGETS} ${UFORM_FFMPEG_TARGETS} PkgConfig::CJSON m)
target_include_directories(bench_mesh PRIVATE ${PROJECT_SOURCE_DIR}/tests/fixtures ${CMAKE_CURRENT_SOURCE_DIR})
