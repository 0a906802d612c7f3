# The engine's side of the published checkpoints' parity: published_dump loads a folder and writes
# what the engine answers; each family's <family>_compare.py checks it against its reference.
add_executable(published_dump ${CMAKE_CURRENT_SOURCE_DIR}/published_dump.c)
target_link_libraries(published_dump PRIVATE uform_internal m)
target_include_directories(published_dump PRIVATE ${PROJECT_SOURCE_DIR}/tools)
