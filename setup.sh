#!/usr/bin/env bash
# setup.sh — install kevo's Debian packages, configure and build with CMake.
# Needs the CUDA 13 toolkit (nvcc, NVRTC, cuBLAS headers, CCCL) already on the
# machine; a GPU driver is not needed to build, test or --compile-only.
set -euo pipefail
cd "$(dirname "$0")"
pkgs="cmake gcc libcurl4-openssl-dev libcjson-dev libsqlite3-dev libcmocka-dev libssl-dev libopenmpi-dev openmpi-bin"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq $missing
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
