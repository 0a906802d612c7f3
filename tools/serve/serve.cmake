# `uform serve` (tools/serve/): HTTP through libmicrohttpd (Debian's libmicrohttpd-dev), which only
# this command links, never libuform. The sources are an object library so that the tests can link
# the batcher and the helpers against the static library too (tests/serve/).
pkg_check_modules(MICROHTTPD REQUIRED IMPORTED_TARGET libmicrohttpd)

set(UFORM_SERVE_DIR ${CMAKE_CURRENT_LIST_DIR})
add_custom_command(
  OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/serve_page_html.c
  COMMAND ${CMAKE_COMMAND} -DINPUT=${UFORM_SERVE_DIR}/page.html -DOUTPUT=${CMAKE_CURRENT_BINARY_DIR}/serve_page_html.c
          -DNAME=serve_page_html -P ${UFORM_SERVE_DIR}/embed.cmake
  DEPENDS ${UFORM_SERVE_DIR}/page.html ${UFORM_SERVE_DIR}/embed.cmake
  COMMENT "Embedding the page of uform serve")

# The parts without HTTP: batching, metrics, buffers, base64 (the TSan and unit tests link these).
# Both lists are also cached for tests/fuzz, whose server target compiles every one of them with
# libFuzzer's instrumentation: one list, so a new source of the server cannot be left out there.
set(UFORM_SERVE_CORE_SOURCES ${UFORM_SERVE_DIR}/batcher.c ${UFORM_SERVE_DIR}/batcher_run.c ${UFORM_SERVE_DIR}/metrics.c
    ${UFORM_SERVE_DIR}/buffer.c ${UFORM_SERVE_DIR}/base64.c ${UFORM_SERVE_DIR}/../utf8.c
    CACHE INTERNAL "")
add_library(uform_serve_core OBJECT ${UFORM_SERVE_CORE_SOURCES})
target_include_directories(uform_serve_core PUBLIC ${PROJECT_SOURCE_DIR}/include ${UFORM_SERVE_DIR} ${UFORM_SERVE_DIR}/..)
target_compile_definitions(uform_serve_core PRIVATE _GNU_SOURCE)

# The command: HTTP, routes, options, the page.
set(UFORM_SERVE_SOURCES ${UFORM_SERVE_DIR}/serve_main.c ${UFORM_SERVE_DIR}/serve_flags.c ${UFORM_SERVE_DIR}/../cli_flags.c ${UFORM_SERVE_DIR}/model.c
    ${UFORM_SERVE_DIR}/http.c ${UFORM_SERVE_DIR}/http_status.c ${UFORM_SERVE_DIR}/routes.c ${UFORM_SERVE_DIR}/inputs.c ${UFORM_SERVE_DIR}/embeddings.c ${UFORM_SERVE_DIR}/search.c ${UFORM_SERVE_DIR}/exact_search.c
    ${UFORM_SERVE_DIR}/choose.c ${UFORM_SERVE_DIR}/info.c ${UFORM_SERVE_DIR}/captions.c ${UFORM_SERVE_DIR}/../ann_choice.c
    ${CMAKE_CURRENT_BINARY_DIR}/serve_page_html.c CACHE INTERNAL "")
add_library(uform_serve OBJECT ${UFORM_SERVE_SOURCES})
target_include_directories(uform_serve PUBLIC ${PROJECT_SOURCE_DIR}/include ${UFORM_SERVE_DIR} ${UFORM_SERVE_DIR}/..)
target_compile_definitions(uform_serve PRIVATE _GNU_SOURCE)
target_link_libraries(uform_serve PUBLIC PkgConfig::MICROHTTPD PkgConfig::CJSON)
