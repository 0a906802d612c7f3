#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds an outside program against it, twice:
# with pkg-config (shared library) and with CMake's find_package (the uform::uform target).
# The installed libuform needs neither Gloo nor libstdc++ and loads the collectives module installed
# beside it (a mesh of two whose peer never comes maps $libdir/libuform-gloo.so.4, then times out).
# Then imports the installed Python package from another folder, with no UFORM_LIBRARY: it must find
# the copy of libuform.so.4 installed next to it (and the module's copy beside that).
# Usage: test_install.sh SOURCE_DIR BUILD_DIR C_COMPILER [PYTHON PYTHON_INSTALL_DIR]
set -u
source_dir=$1 build_dir=$2 compiler=${3:-cc} python=${4:-} python_dir=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
passed=0 failed=0
check() { if "$@"; then passed=$((passed + 1)); else echo "failed: $*" >&2; failed=$((failed + 1)); fi; }

cmake --install "$build_dir" --prefix "$prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log" >&2; echo "0 passed, 1 failed"; exit 1; }
libdir=$(ls -d "$prefix"/lib* | head -n 1)
check test -f "$prefix/include/uform/uform.h"
check test -f "$libdir/libuform.a"
check test -L "$libdir/libuform.so.4"
check test -f "$libdir/libuform-gloo.so.4"
check sh -c "! readelf -d '$libdir/libuform.so.4' | grep -E 'NEEDED.*(libgloo|libstdc)'"

cat > "$work/outside.c" <<'PROGRAM'
#include <uform/uform.h>
#include <stdio.h>
int main(void) {
    int major = 0;
    uform_version(&major, NULL, NULL);
    uform_executor_t executor = NULL;
    if (uform_executor_for_ram(NULL, 1, 0, &executor, NULL) != UFORM_OK) return 1;
    uform_executor_free(executor);
    printf("outside program sees UForm %d\n", major);
    return major == 4 ? 0 : 1;
}
PROGRAM

# pkg-config, shared library.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
flags=$(pkg-config --cflags --libs uform)
check "$compiler" "$work/outside.c" -o "$work/outside_pkgconfig" $flags
check env LD_LIBRARY_PATH="$libdir" "$work/outside_pkgconfig"
cat > "$work/outside_mesh.c" <<'PROGRAM'
#include <uform/uform.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    uform_mesh_options_t options;
    memset(&options, 0, sizeof options);
    options.host_domain_index = 0, options.host_domain_count = 2;
    options.directory = argv[1], options.job = "alone", options.address = "127.0.0.1", options.timeout_seconds = 1;
    uform_mesh_t mesh = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_mesh_bootstrap(NULL, &options, &mesh, &outcome);
    char line[4096];
    FILE *maps = fopen("/proc/self/maps", "r");
    while (maps && fgets(line, sizeof line, maps))
        if (strstr(line, "libuform-gloo")) { printf("%s", strchr(line, '/')); break; }
    if (maps) fclose(maps);
    printf("%s: %s\n", uform_status_name(status), outcome.message);
    return status == UFORM_TIMEOUT ? 0 : 1;
}
PROGRAM
check "$compiler" "$work/outside_mesh.c" -o "$work/outside_mesh" $flags
mkdir -p "$work/jobs"
check sh -c "LD_LIBRARY_PATH='$libdir' '$work/outside_mesh' '$work/jobs' > '$work/mesh.out'"
check grep -qx "$libdir/libuform-gloo.so.4" "$work/mesh.out"
# pkg-config, static library.
static_flags=$(pkg-config --static --cflags --libs uform)
check "$compiler" "$work/outside.c" -o "$work/outside_static" $(pkg-config --cflags uform) "$libdir/libuform.a" $(echo "$static_flags" | sed 's/-luform\b//g')
check "$work/outside_static"

# CMake package.
mkdir -p "$work/consumer"
cp "$work/outside.c" "$work/consumer/outside.c"
cat > "$work/consumer/CMakeLists.txt" <<'LISTS'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(uform 4 REQUIRED)
add_executable(outside outside.c)
target_link_libraries(outside PRIVATE uform::uform)
LISTS
check cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$compiler" -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON -DCMAKE_INSTALL_RPATH="$libdir" > "$work/consumer.log" 2>&1
check cmake --build "$work/consumer/build" > "$work/consumer_build.log" 2>&1
check env LD_LIBRARY_PATH="$libdir" "$work/consumer/build/outside"

# The Python package, from a folder of its own, with nothing pointing at the build tree.
if [ -n "$python" ] && [ -n "$python_dir" ]; then
  site="$prefix/$python_dir"
  check test -f "$site/uform/__init__.py"
  check test -f "$site/uform/py.typed"
  check test -f "$site/uform/libuform.so.4"
  check test -f "$site/uform/libuform-gloo.so.4"
  mkdir -p "$work/elsewhere"
  check env -u UFORM_LIBRARY -u LD_LIBRARY_PATH PYTHONPATH="$site" sh -c "cd '$work/elsewhere' && '$python' -c \"
import uform
assert uform.library_path == '$site/uform/libuform.so.4', uform.library_path
with uform.Executor.for_ram(threads=1) as executor:
    assert executor.threads == 1
print('installed uform', uform.__version__, 'from', uform.library_path)
\""
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
