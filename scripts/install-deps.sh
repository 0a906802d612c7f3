#!/usr/bin/env bash
# Installs every Debian package that UForm's build, tests and benchmarks need.
# Idempotent: packages already present are skipped, and apt is not touched when nothing is missing.
# Usage: scripts/install-deps.sh   (as root, or with sudo available)
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config clang llvm libclang-rt-14-dev libomp-14-dev
  # library dependencies
  libcjson-dev
  # tokenizers of published checkpoints (src/text): Unicode data and the pre-tokenizers' patterns
  libutf8proc-dev libpcre2-dev
  # collectives of the mesh (src/mesh, behind one C++ shim)
  libgloo-dev
  # approximate indexes (src/index/faiss.cpp, the module libuform-faiss.so.4): static libfaiss.a and what it links (OpenBLAS as BLAS/LAPACK, GNU OpenMP); python3-faiss for the interop tests
  libfaiss-dev libopenblas-dev liblapack-dev libgomp1 python3-faiss
  # media decoding (src/media) and fixture generation
  libturbojpeg0-dev libjpeg62-turbo-dev libspng-dev libwebp-dev
  libavformat-dev libavcodec-dev libavutil-dev libswresample-dev libswscale-dev
  # speech for the demo's generated data (tools/ only, never linked into libuform)
  libespeak-ng-dev
  # tests
  libcmocka-dev python3 python3-numpy python3-sentencepiece python3-protobuf perl python3-pytest python3-pil python3-torch python3-torchvision python3-torchaudio
  # benchmark peers (bench/ only, never linked into libuform)
  libopenblas-dev libdnnl-dev libfaiss-dev
  # ONNX Runtime's INT8 graphs for bench_published (bench/published_export.py writes them with the onnx module)
  python3-onnx
  # WebDataset shards (src/data: tar, pax and GNU long names, .tar.gz through libarchive)
  libarchive-dev
  # uform serve: HTTP (libmicrohttpd), the page's test in a real browser, the load generator and
  # the FastAPI peer of its benchmark (with uvloop and httptools, uvicorn's fastest mode)
  libmicrohttpd-dev chromium chromium-driver wrk python3-fastapi python3-uvicorn python3-uvloop python3-httptools
  # the mesh's tests: network namespaces and shaped links, Redis rendezvous, a real mpirun
  iproute2 redis-server openmpi-bin
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

# Node and npm for the tests of uform serve (the official `openai` npm package, and the driver of
# headless Chromium). Checked by command, not by package: a machine may have NodeSource's nodejs,
# which bundles npm and which Debian's npm package would conflict with, so Debian's nodejs and npm
# are installed only where the commands are missing.
if ! command -v node > /dev/null; then
  missing+=(nodejs)
  command -v npm > /dev/null || missing+=(npm)
elif ! command -v npm > /dev/null; then
  if dpkg-query -W -f='${Version}' nodejs 2>/dev/null | grep -q nodesource; then
    echo "install-deps: NodeSource's nodejs is installed without npm; reinstall it (it bundles npm): Debian's npm would replace it" >&2
  else
    missing+=(npm)
  fi
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi

# QEMU 10's user-mode emulator for `make test-avx2` (scripts/test-avx2.sh): on an AVX-512 machine it
# runs the C tests on an emulated AVX2-only CPU (`-cpu max`: AVX2, FMA, F16C, no AVX-512), so a kernel
# or a test that executes AVX-512 where the CPU lacks it dies of SIGILL here as it would on a Zen 3.
# Debian 12's own qemu-user (7.2) emulates AVX2 gathers wrongly (the resize kernel's vpgatherdd gave
# other pixels than on hardware), so the statically linked build from bookworm-backports is taken,
# unpacked into a folder of its own: the system's apt sources and packages stay as they are.
qemu_dir=/opt/uform/qemu
if [ "$(uname -m)" = x86_64 ] && [ ! -x "$qemu_dir/usr/bin/qemu-x86_64" ]; then
  echo "install-deps: fetching qemu-user 10 from bookworm-backports into $qemu_dir"
  state=$(mktemp -d)
  trap 'rm -rf "$state"' EXIT
  mkdir -p "$state/lists/partial" "$state/archives/partial"
  echo "deb http://deb.debian.org/debian bookworm-backports main" > "$state/sources.list"
  apt_options=(-o "Dir::Etc::sourcelist=$state/sources.list" -o "Dir::Etc::sourceparts=-"
               -o "Dir::State::Lists=$state/lists" -o "Dir::Cache::Archives=$state/archives" -o "APT::Sandbox::User=root")
  "${sudo_cmd[@]}" apt-get "${apt_options[@]}" update -qq
  (cd "$state" && "${sudo_cmd[@]}" apt-get "${apt_options[@]}" download -qq qemu-user/bookworm-backports)
  "${sudo_cmd[@]}" mkdir -p "$qemu_dir"
  "${sudo_cmd[@]}" dpkg-deb -x "$state"/qemu-user_*.deb "$qemu_dir"
  "$qemu_dir/usr/bin/qemu-x86_64" --version | head -1
fi
