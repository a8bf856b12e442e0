#!/bin/sh
# Builds the multistream example with nvcc (CUDA 12 or 13; NVTX 3 is
# header-only, in the toolkit's include/nvtx3), for Hopper (sm_90, with
# PTX for later GPUs; ARCH=sm_80 for another).
#
#   examples/multistream-cpp/build.sh [OUTPUT]      (default ./multistream)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/multistream}
nvcc=${NVCC:-nvcc}
command -v "$nvcc" > /dev/null || nvcc=/usr/local/cuda/bin/nvcc
a=${ARCH:-sm_90}
arch="-gencode arch=compute_${a#sm_},code=[${a},compute_${a#sm_}]"
"$nvcc" -O2 -std=c++17 $arch -o "$out" "$here/multistream.cu" -lpthread -ldl
echo "built $out"
