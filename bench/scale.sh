#!/usr/bin/env bash
# Issue 24 items 4 and 5 on one GPU host: a multi-partition porep request
# at 2^LOG2 through `cuzk serve`, once per release mode, within BUDGET
# seconds of wall clock.
#
#   LOG2=26 PARTS=2 MODES="sync async" BUDGET=280 bash bench/scale.sh
#
# The first daemon finds no key: it makes it on the GPU (prover/setup,
# keys.setup and setup.* in its trace) and stores it; the next ones read
# it. Each daemon proves one request of PARTS partitions of the built-in
# sample witness (--synthesis-workers 1: partition 2 is synthesized while
# partition 1 proves), verified by gnark's verifier; then its peak RSS
# (VmHWM, read before SIGTERM), `cuzk trace --timeline` of its file and
# the main spans of the waterfall. The device memory is sampled by
# nvidia-smi every 500 ms, the host's MemAvailable every second. At the
# end `cuzk trace diff` of the first mode's trace against the second's. A
# mode is skipped when less than MODE_MIN seconds are left. Files go to
# $OUT (default /tmp/scale-out): small text only.
set -u
CIRCUIT=${CIRCUIT:-porep}
LOG2=${LOG2:-26}
BACKEND=${BACKEND:-cuda}
PARTS=${PARTS:-2}
MODES=${MODES:-sync async}
BUDGET=${BUDGET:-280}
MODE_MIN=${MODE_MIN:-100}
B=${CUZK:-.dev/bin/cuzk}
OUT=${OUT:-/tmp/scale-out}
C=${CACHE:-$PWD/.scale-cache}
mkdir -p "$OUT" "$C"
t0=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - t0))); }
n=$((1 << LOG2))
echo "== host: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, disk $(df -h . | awk 'NR==2{print $4" free of "$2}')"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 >"$OUT/smi.txt" 2>/dev/null &
smi=$!
(while :; do echo "$(date +%s) $(awk '/MemAvailable/{print $2}' /proc/meminfo)"; sleep 1; done) >"$OUT/memavail.txt" &
mem=$!
trap 'kill $smi $mem 2>/dev/null' EXIT

port=50151
ran=()
for mode in $MODES; do
	if [ "$(left)" -lt "$MODE_MIN" ]; then
		echo "== $mode: skipped, $(left) s left"
		continue
	fi
	port=$((port + 1))
	tf=$OUT/$mode.jsonl
	s=$(date +%s)
	GOMEMLIMIT=${GOMEMLIMIT:-96GiB} $B serve --backend "$BACKEND" --release "$mode" --synthesis-workers 1 --memory-budget 0 \
		--listen 127.0.0.1:$port --metrics-listen "" --trace-file "$tf" --state-dir none --cache-dir "$C" >"$OUT/serve-$mode.log" 2>&1 &
	spid=$!
	for _ in $(seq 1 120); do $B status --addr 127.0.0.1:$port >/dev/null 2>&1 && break; sleep 0.5; done
	timeout $(($(left) - 10)) $B submit --addr 127.0.0.1:$port --circuit "$CIRCUIT" --constraints $n --partitions "$PARTS" \
		--timeout 15m --proof "$OUT/proof-$mode.bin" >"$OUT/submit-$mode.txt" 2>&1
	rc=$?
	hwm=$(awk '/VmHWM/{printf "%.1f GB", $2/1e6}' /proc/$spid/status 2>/dev/null)
	echo "== $mode: submit rc=$rc in $(($(date +%s) - s)) s (daemon start included), daemon peak RSS $hwm"
	grep -v '^$' "$OUT/submit-$mode.txt" | tail -12
	kill -TERM $spid 2>/dev/null
	wait $spid 2>/dev/null
	grep -iE "error|fail|out of memory|backend|refus" "$OUT/serve-$mode.log" | head -5
	[ $rc -eq 0 ] && ran+=("$mode")
	$B trace --timeline "$tf" >"$OUT/timeline-$mode.txt" 2>&1
	cat "$OUT/timeline-$mode.txt"
	$B trace --depth 6 --width 20 --ascii "$tf" >"$OUT/waterfall-$mode.txt" 2>&1
	grep -E "engine\.(job|partition)|keys\.(load|setup|read|decode|store|preload)|setup\.|circuit\.compile|pipeline\.|groth16\.(prove|compute_h)|msm\.g[12]\.[a-z]+ |buffer\.release|proof\.verify|cuda\.malloc" \
		"$OUT/waterfall-$mode.txt" | head -60
	echo "device memory used, max: $(sort -n "$OUT/smi.txt" | tail -1) MiB; host MemAvailable, min: $(awk '{print $2}' "$OUT/memavail.txt" | sort -n | head -1 | awk '{printf "%.1f GiB", $1/1048576}')"
done
if [ ${#ran[@]} -ge 2 ]; then
	echo "== cuzk trace diff ${ran[0]} ${ran[1]}"
	$B trace diff "$OUT/${ran[0]}.jsonl" "$OUT/${ran[1]}.jsonl" >"$OUT/diff.txt" 2>&1
	grep -vE '^\s*$' "$OUT/diff.txt" | grep -E "buffer.release|pipeline.prove|keys.load|→|moved|^[a-z]" | head -30
fi
ls -la "$C" | head
echo "== done in $(($(date +%s) - t0)) s"
