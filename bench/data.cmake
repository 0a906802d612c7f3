# bench_data: `uform train` from WebDataset shards against the same samples as loose files, with the
# loader's wait on data, as a table and bench/results/data.json.
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/bench_data.sh ${CMAKE_CURRENT_BINARY_DIR}/bench_data
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE
               @ONLY)
