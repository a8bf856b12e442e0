#!/usr/bin/env bash
# Builds bench/peers' sppark program (sppark_bench.cu) with nvcc, on the
# GPU host, from checkouts of sppark and blst given by path. Neither is
# part of this repository; get them with
#
#   git clone https://github.com/supranational/sppark
#   git clone https://github.com/supranational/blst
#
#   bench/peers/build.sh SPPARK_DIR BLST_DIR OUT_BIN [ARCH]   # ARCH: sm_90 (H200) by default
#
# blst gives sppark's host-side field arithmetic (blst_t.hpp over blst's
# assembly); the three parts of sppark_bench.cu (the G1 and G2 MSM, NTT, main)
# and sppark's util/all_gpus.cpp compile in parallel, then link.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 SPPARK_DIR BLST_DIR OUT_BIN [ARCH]" >&2; exit 2; }
sppark=$(cd "$1" && pwd)
blst=$(cd "$2" && pwd)
out=$3
arch=${4:-sm_90}
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$sppark/msm/pippenger.cuh" ] || { echo "build: $sppark is not a sppark checkout (no msm/pippenger.cuh)" >&2; exit 1; }
[ -f "$blst/src/blst_t.hpp" ] || { echo "build: $blst is not a blst checkout (no src/blst_t.hpp)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
adx=
grep -qw adx /proc/cpuinfo && adx=-D__ADX__
cc -O2 -fno-builtin -fPIC $adx -c "$blst/src/server.c" -o "$work/server.o" &
cc -O2 -fno-builtin -fPIC $adx -c "$blst/build/assembly.S" -o "$work/assembly.o" &
flags=(-O3 -std=c++17 -arch="$arch" -DFEATURE_BLS12_381 $adx -DTAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE
	-I"$sppark" -I"$blst/src" -Xcompiler -Wno-unused-function -Xcompiler -O2)
nvcc "${flags[@]}" -x cu -c "$sppark/util/all_gpus.cpp" -o "$work/all_gpus.o" &
for part in 0 1 3; do
	nvcc "${flags[@]}" -DPEERS_PART=$part -c "$here/sppark_bench.cu" -o "$work/part$part.o" &
done
rc=0
for j in $(jobs -p); do wait "$j" || rc=1; done
[ "$rc" = 0 ] || { echo "build: a compile failed" >&2; exit 1; }
nvcc -arch="$arch" -o "$out" "$work"/part*.o "$work/all_gpus.o" "$work/server.o" "$work/assembly.o"
echo "build: $out (sppark ${SPPARK_REV:-$(git -C "$sppark" rev-parse --short HEAD 2>/dev/null || echo unknown)}, blst ${BLST_REV:-$(git -C "$blst" rev-parse --short HEAD 2>/dev/null || echo unknown)}, $arch)"
