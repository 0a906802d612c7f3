#!/usr/bin/env bash
# libuform's dynamic section names no FFmpeg library (loaded on demand, src/media/av_load.c) and
# no libnuma (its allocator exits the process on OOM; src/core/numa.c replaces it); and libuform
# imports no function that exits, aborts or prints (the library never does any of them; the
# allocation sweep relies on it to tell a third-party exit from UForm's).
# usage: needed_libraries.sh path/to/libuform.so
set -euo pipefail
library="$1"
needed=$(readelf -d "$library" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$library needs:"
echo "$needed" | sed 's/^/  /'
forbidden=$(echo "$needed" | grep -E '^lib(avformat|avcodec|avutil|swscale|swresample|avfilter|avdevice|postproc|numa)\.' || true)
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
echo "ok: $count libraries, no FFmpeg, no libnuma; $(echo "$imports" | grep -c .) imports, none that exits, aborts or prints"
