#!/usr/bin/env bash
# bench/circuit-memory.sh: peak resident memory of the built-in circuits'
# setup and proofs (CPU backend) against the prover's estimates (issue 14
# item 5; results and the fit: bench/memory.md). For each CIRCUIT:LOG2 it
# runs, each in a fresh process and one after another:
#   1. `cuzk setup` into an empty key cache, under /usr/bin/time -v
#      (compile + groth16.Setup + store: the setup's peak);
#   2. `cuzk prove --backend cpu` with those keys, under /usr/bin/time -v
#      (compile + key load + synthesis + prove + verify: the prove's peak);
#   3. memprobe (bench/memprobe): the same phases in one process, VmHWM per
#      phase, the peak of two back-to-back proofs above the memory held
#      before them, and the estimates (MemoryBytes, KeyMemory, ProofMemory).
# Prints one table row per size and appends memprobe's JSON to $OUT/rows.jsonl.
#
#   bench/circuit-memory.sh merkle:14 merkle:16 porep:17 rangecheck:16
#
# A 2^18 setup takes 5 to 15 minutes on a loaded 2-core VM; $OUT (default a
# temporary folder) keeps the caches and logs, deleted at the end unless
# KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$out"' EXIT
mkdir -p "$out"
go build -o "$out/cuzk" "$root/cmd/cuzk"
go build -o "$out/memprobe" "$root/bench/memprobe"
kb() { awk '/Maximum resident/ { print $NF }' "$1"; }
echo "$(nproc) cores, $(free -g | awk '/Mem:/ { print $2 }') GiB, $(uname -r), $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| circuit | constraints | setup peak MiB | prove peak MiB | proof above held MiB | released MiB | MemoryBytes MiB | ProofMemory MiB |\n|---|---|---|---|---|---|---|---|\n'
for spec in "$@"; do
	c=${spec%:*} n=$((1 << ${spec#*:}))
	cache="$out/cache-$c-$n"
	/usr/bin/time -v "$out/cuzk" setup --circuit "$c" --constraints "$n" --cache-dir "$cache" >"$out/setup-$c-$n.log" 2>"$out/setup-$c-$n.time"
	/usr/bin/time -v "$out/cuzk" prove --circuit "$c" --constraints "$n" --backend cpu --cache-dir "$cache" \
		--trace-file "$out/prove-$c-$n.jsonl" --proof "$out/proof-$c-$n.bin" >"$out/prove-$c-$n.log" 2>"$out/prove-$c-$n.time"
	"$out/memprobe" -circuit "$c" -constraints "$n" -cache-dir "$cache" -proofs 2 >"$out/memprobe-$c-$n.log"
	row=$(grep '^memprobe ' "$out/memprobe-$c-$n.log" | cut -d' ' -f2-)
	echo "$row" >>"$out/rows.jsonl"
	field() { echo "$row" | grep -o "\"$1\":[0-9.e+]*" | cut -d: -f2; }
	awk -v c="$c" -v n="$n" -v s="$(kb "$out/setup-$c-$n.time")" -v p="$(kb "$out/prove-$c-$n.time")" \
		-v above="$(field proof_above_held)" -v rel="$(field released)" -v est="$(field est_memory_bytes)" -v pm="$(field est_proof_memory)" \
		'BEGIN { printf "| %s | %d | %.0f | %.0f | %.0f | %.1f | %.0f | %.0f |\n", c, n, s/1024, p/1024, above/1048576, rel/1048576, est/1048576, pm/1048576 }'
done
