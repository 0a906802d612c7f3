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
  # collectives of the mesh (src/mesh, behind one C++ shim)
  libgloo-dev
  # media decoding (src/media) and fixture generation
  libturbojpeg0-dev libjpeg62-turbo-dev libspng-dev libwebp-dev
  libavformat-dev libavcodec-dev libavutil-dev libswresample-dev libswscale-dev
  # speech for the demo's generated data (tools/ only, never linked into libuform)
  libespeak-ng-dev
  # tests
  libcmocka-dev python3 python3-numpy python3-pytest python3-pil python3-torch python3-torchvision python3-torchaudio
  # benchmark peers (bench/ only, never linked into libuform)
  libopenblas-dev libdnnl-dev
  # WebDataset shards (src/data: tar, pax and GNU long names, .tar.gz through libarchive)
  libarchive-dev
  # uform serve: HTTP (libmicrohttpd), the page's test in a real browser, the load generator and
  # the FastAPI peer of its benchmark
  libmicrohttpd-dev chromium chromium-driver wrk python3-fastapi python3-uvicorn
  # the mesh's tests: network namespaces and shaped links, Redis rendezvous, a real mpirun
  iproute2 redis-server openmpi-bin
  # an AVX2-only CPU emulated (qemu-x86_64 -cpu max) for the Haswell class's int8 kernels test
  qemu-user
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
