#!/usr/bin/env bash
# One GPU session, on the GPU host, from the repository root (built by
# bench/pack-device.sh): checks first, then the figures of bench/ntt.md,
# bench/msm.md and bench/gpuprove.md. Everything is logged to $OUT (or
# /tmp/out) as it goes, so a run cut short still returns what it did.
#
#   STEPS="tests ntt msm prove"   which parts to run (default: all)
#   SIZES="20,22"                 log2 sizes of the full prove
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
cd "$(dirname "$0")/.."
steps=${STEPS:-tests ntt msm prove}
# Kernels compiled by NVRTC are cached under $XDG_CACHE_HOME/otelcuzk;
# keep that cache in .dev/cache so it can travel to the next session.
export XDG_CACHE_HOME=$PWD/.dev/cache CUZK_CACHE_DIR=/tmp/cuzk-keys
mkdir -p "$XDG_CACHE_HOME"
log() { echo "== $(date -u +%T) $*" | tee -a "$out/session.log"; }
run() { log "$*"; "$@" 2>&1 | tee -a "$out/session.log"; log "exit ${PIPESTATUS[0]}"; }

run nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
for s in $steps; do
	case $s in
	tests) run ./.dev/run-tests -test.run 'GPU|CUDA' -test.timeout 20m ;;
	ntt) run ./.dev/bin/nttbench -sizes 20,24,27 ;;
	msm) (cd prover/gpu && run ../../.dev/test/prover_gpu.test -test.run '^$' -test.bench MSMG1 -test.benchtime 3x) ;;
	prove)
		run ./.dev/bin/gpuprove -circuit merkle -log2 "${SIZES:-20,22}" -reps 3 -story-reps 2 -out "$out/gpuprove.txt"
		run ./.dev/bin/cuzk prove --backend cuda --circuit merkle --constraints 1048576 --release async --trace-file "$out/cuzk-trace.jsonl"
		;;
	*) log "unknown step $s" ;;
	esac
done
# The kernel cache, for the next session: fetch it and unpack it into
# .dev/cache before packing.
tar -C "$XDG_CACHE_HOME" -czf "$out/kernel-cache.tgz" otelcuzk/kernels 2>/dev/null && log "kernel cache saved ($(du -h "$out/kernel-cache.tgz" | cut -f1))"
