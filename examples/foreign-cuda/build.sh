#!/bin/sh
# Builds the standalone foreign-cuda executable (no CUDA toolkit needed:
# libcuda and NVRTC are loaded at run time). Usage: build.sh [OUTPUT]
set -eu
here=$(dirname "$0")
out=${1:-$here/foreign-cuda}
${CC:-cc} -O2 -Wall -o "$out" "$here/standalone/main.c" "$here/foreign.c" "$here/nvtxlite.c" -ldl -lm -lpthread
