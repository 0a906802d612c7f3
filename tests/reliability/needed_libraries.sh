#!/usr/bin/env bash
# libuform's dynamic section names no FFmpeg library (loaded on demand, src/media/av_load.c), no
# libnuma (its allocator exits the process on OOM; src/core/numa.c replaces it), and neither Gloo nor
# the C++ runtime (the collectives module, loaded on demand, src/mesh/gloo_load.c); and libuform
# imports no function that exits, aborts or prints (the library never does any of them; the
# allocation sweep relies on it to tell a third-party exit from UForm's). Given the module too, it
# checks that the module is the one that needs Gloo and exports the functions the loader looks up.
# usage: needed_libraries.sh path/to/libuform.so [path/to/libuform-gloo.so.4]
set -euo pipefail
library="$1"
needed=$(readelf -d "$library" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$library needs:"
echo "$needed" | sed 's/^/  /'
forbidden=$(echo "$needed" | grep -E '^lib(avformat|avcodec|avutil|swscale|swresample|avfilter|avdevice|postproc|numa|gloo|stdc\+\+|gcc_s|hiredis|ibverbs|nl-3|nl-route-3)\.' || true)
if [ -n "$forbidden" ]; then
  echo "FAIL: libuform must not need: $forbidden" >&2
  exit 1
fi
count=$(echo "$needed" | grep -c . || true)
if [ "$count" -lt 3 ]; then
  echo "FAIL: readelf listed only $count libraries: is $library a shared library?" >&2
  exit 1
fi
imports=$(nm -D --undefined-only "$library" | awk '{print $NF}' | sed 's/@.*//')
forbidden=$(echo "$imports" | grep -x -E 'exit|_exit|_Exit|quick_exit|abort|__assert_fail|raise|printf|fprintf|vfprintf|puts|fputs|fwrite|perror|putchar|fputc|dprintf' || true)
if [ -n "$forbidden" ]; then
  echo "FAIL: libuform imports" $forbidden >&2
  exit 1
fi
echo "ok: $count libraries, no FFmpeg, no libnuma, no Gloo, no libstdc++; $(echo "$imports" | grep -c .) imports, none that exits, aborts or prints"
if [ $# -ge 2 ]; then
  module="$2"
  # No `producer | grep -q` under pipefail: grep -q leaves at the first match, and a producer still
  # writing then dies of SIGPIPE, which fails the pipeline (this test failed so, now and then).
  module_dynamic=$(readelf -d "$module")
  if ! grep -q 'NEEDED.*\[libgloo\.' <<< "$module_dynamic"; then
    echo "FAIL: $module does not need libgloo: is it the collectives module?" >&2
    exit 1
  fi
  exports=$(nm -D --defined-only "$module" | awk '{print $NF}')
  for name in uform__gloo_module_abi uform__gloo_connect uform__gloo_allreduce_sum uform__gloo_allgatherv \
              uform__gloo_broadcast uform__gloo_barrier uform__gloo_close uform__gloo_free; do
    if ! grep -qx "$name" <<< "$exports"; then
      echo "FAIL: $module does not export $name" >&2
      exit 1
    fi
  done
  echo "ok: $module needs libgloo and exports the loader's eight functions"
fi
