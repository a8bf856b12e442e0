#!/usr/bin/env bash
# Builds the MSM harness in several compile-time variants (in parallel, one
# nvcc each) and times each on one vector file, to choose among the
# experiment switches of msm.cu / ec.cuh / ff.cuh in one device call.
#
#   prover/gpu/kernels/devtest/msm_variants.sh VECTOR [C] [REPS]
#
# Prints, per variant: the harness line (pass/FAIL, total and per-kernel ms)
# and ptxas's register line for msm_bucket_accumulate. Logs go to
# $OUT/msm_variants (or /tmp/msm_variants).
set -uo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
vec=${1:?usage: msm_variants.sh VECTOR [C] [REPS]}
c=${2:-16}
reps=${3:-3}
out=${OUT:-/tmp}/msm_variants
mkdir -p "$out"
names=(base minblocks3 minblocks4 call ptx_addsub)
flags=("" "-DMSM_ACCUM_MIN_BLOCKS=3" "-DMSM_ACCUM_MIN_BLOCKS=4" "-DMSM_ACCUM_CALL" "-DFF_PTX_ADDSUB=1")
for i in "${!names[@]}"; do
  v=${names[$i]}
  (nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v ${flags[$i]} -o "$out/h_$v" "$dir/msm_harness.cu" \
    >"$out/ptxas_$v.txt" 2>&1 || echo "build $v failed: $out/ptxas_$v.txt") &
done
wait
rc=0
for i in "${!names[@]}"; do
  v=${names[$i]}
  [ -x "$out/h_$v" ] || { rc=1; continue; }
  line=$("$out/h_$v" -c "$c" -reps "$reps" "$vec" | grep -E ' (pass|FAIL) ') || rc=1
  regs=$(grep -A3 "entry function 'msm_bucket_accumulate'" "$out/ptxas_$v.txt" | grep -o 'Used [0-9]* registers' | head -1)
  printf '%-11s %s | %s\n' "$v" "$line" "$regs"
  case $line in *FAIL*) rc=1 ;; esac
done
exit $rc
