# bench_demo: the whole `make demo` (scripts/demo.sh) at full size, its held-out recall against the
# targets and its time per stage (wall and CPU), as a table and bench/results/demo.json.
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/bench_demo.sh ${CMAKE_CURRENT_BINARY_DIR}/bench_demo
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE
               @ONLY)
