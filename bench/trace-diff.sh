#!/usr/bin/env bash
# bench/trace-diff.sh: one proof twice with one change between, then
# `cuzk trace diff` of the two traces: where the time moved. By default the
# change is the buffer release (`--release async` on A, `--release sync`
# on B), the story of bench/gpuprove.md in one command.
#
#   bench/trace-diff.sh                                   merkle 2^16 on the CPU
#   BACKEND=cuda CONSTRAINTS=4194304 bench/trace-diff.sh  the H200 run of gpuprove.md
#   A_ARGS="--release sync" B_ARGS="--release pool" bench/trace-diff.sh
#   DIFF_ARGS="--html diff.html --threshold-ms 50" bench/trace-diff.sh
#
# Environment: CUZK (a built cuzk; else built here), CIRCUIT (merkle),
# CONSTRAINTS (65536), BACKEND (cpu), A_ARGS / B_ARGS (the change), REPS
# (proofs per side, default 1; more compares medians with --all),
# DIFF_ARGS (extra flags for cuzk trace diff), OUT (folder for the trace
# files, default a temporary one, removed at the end unless given).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
CIRCUIT=${CIRCUIT:-merkle}
CONSTRAINTS=${CONSTRAINTS:-65536}
BACKEND=${BACKEND:-cpu}
A_ARGS=${A_ARGS:---release async}
B_ARGS=${B_ARGS:---release sync}
REPS=${REPS:-1}
if [[ -n ${OUT:-} ]]; then mkdir -p "$OUT"; else OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; fi
if [[ -z ${CUZK:-} ]]; then
	CUZK=$OUT/cuzk
	(cd "$root" && go build -o "$CUZK" ./cmd/cuzk)
fi
rm -f "$OUT/a.jsonl" "$OUT/b.jsonl"
# The key is set up (and cached) before the first timed proof, so neither
# side pays for it.
"$CUZK" setup --circuit "$CIRCUIT" --constraints "$CONSTRAINTS" >/dev/null
prove() { # side, args...
	local side=$1; shift
	OTEL_EXPORTER_OTLP_ENDPOINT= OTEL_EXPORTER_OTLP_TRACES_ENDPOINT= \
		"$CUZK" prove --circuit "$CIRCUIT" --constraints "$CONSTRAINTS" --backend "$BACKEND" \
		--trace-file "$OUT/$side.jsonl" --proof "$OUT/$side.proof" "$@" >/dev/null
}
for ((i = 0; i < REPS; i++)); do # interleaved, so drift hits both sides
	# shellcheck disable=SC2086
	prove a $A_ARGS
	# shellcheck disable=SC2086
	prove b $B_ARGS
done
echo "A: cuzk prove --circuit $CIRCUIT --constraints $CONSTRAINTS --backend $BACKEND $A_ARGS"
echo "B: cuzk prove --circuit $CIRCUIT --constraints $CONSTRAINTS --backend $BACKEND $B_ARGS"
set=()
((REPS > 1)) && set=(--all)
# shellcheck disable=SC2086
"$CUZK" trace diff "$OUT/a.jsonl" "$OUT/b.jsonl" "${set[@]}" ${DIFF_ARGS:-}
