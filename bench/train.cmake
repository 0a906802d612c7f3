add_executable(bench_train ${CMAKE_CURRENT_SOURCE_DIR}/bench_train.c ${PROJECT_SOURCE_DIR}/tests/fixtures/demo_media.c)
target_link_libraries(bench_train PRIVATE uform_internal ${UFORM_MEDIA_TARGETS} ${UFORM_FFMPEG_TARGETS} PkgConfig::CJSON m)
target_include_directories(bench_train PRIVATE ${PROJECT_SOURCE_DIR}/tests/fixtures ${CMAKE_CURRENT_SOURCE_DIR})
