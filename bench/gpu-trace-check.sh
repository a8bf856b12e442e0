#!/usr/bin/env bash
# On the GPU host, from the repository root after `tar -xJf .devpack.txz`:
# `cuzk gpu-trace` on the standalone foreign-cuda program (examples/
# foreign-cuda, plain driver API + NVRTC + NVTX), checked with `cuzk trace`
# and grep, then timed against the same program untraced. Writes to $OUT.
#
#   1. a per-task run under TRACEPARENT: one trace, with that trace id;
#   2. a long-running run (--runs 3) whose outer NVTX range carries
#      traceparent=...: those ranges and their kernels in that trace;
#   3. overhead: --runs 20 traced against untraced, 3 times each.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
cuzk=./.dev/bin/cuzk fc=./.dev/bin/foreign-cuda
ok=0 bad=0
check() { if eval "$2"; then echo "PASS $1"; ok=$((ok + 1)); else echo "FAIL $1"; bad=$((bad + 1)); fi; }

tid=4bf92f3577b34da6a3ce929d0e0e4736 sid=00f067aa0ba902b7
rm -f "$out/gt-task.jsonl"
TRACEPARENT=00-$tid-$sid-01 $cuzk gpu-trace --trace-file "$out/gt-task.jsonl" -- $fc --iters 5 --elems 1048576
check "per-task: exit 0" "[ $? -eq 0 ]"
check "per-task: spans written" "[ -s $out/gt-task.jsonl ]"
check "per-task: one trace id, the TRACEPARENT's" "[ \"\$(grep -o '\"traceId\":\"[0-9a-f]*\"' $out/gt-task.jsonl | sort -u)\" = '\"traceId\":\"$tid\"' ]"
for name in foreign.run upload compute download scale saxpy cuda.memcpy.htod cuda.memcpy.dtoh foreign.check foreign.free; do
	check "per-task: a span named $name" "grep -q '\"name\":\"$name\"' $out/gt-task.jsonl"
done
$cuzk trace --trace-id $tid "$out/gt-task.jsonl" > "$out/gt-task-waterfall.txt" 2>&1
check "per-task: cuzk trace reads it" "[ $? -eq 0 ]"
head -40 "$out/gt-task-waterfall.txt"

tid2=0af7651916cd43dd8448eb211c80319c sid2=b7ad6b7169203331
rm -f "$out/gt-daemon.jsonl"
$cuzk gpu-trace --trace-file "$out/gt-daemon.jsonl" -- $fc --iters 3 --runs 3 --pause-ms 300 --traceparent 00-$tid2-$sid2-01
check "daemon: exit 0" "[ $? -eq 0 ]"
$cuzk trace --trace-id $tid2 "$out/gt-daemon.jsonl" > "$out/gt-daemon-waterfall.txt" 2>&1
check "daemon: 3 request ranges in the given trace" "[ \$(grep -c 'foreign.request' $out/gt-daemon-waterfall.txt) -ge 3 ]"
check "daemon: the trace holds kernels" "grep -q 'saxpy' $out/gt-daemon-waterfall.txt"
head -30 "$out/gt-daemon-waterfall.txt"

echo "== overhead: foreign-cuda --runs 20 --iters 10, untraced vs gpu-trace (wall s)"
for i in 1 2 3; do
	s=$(date +%s.%N); $fc --runs 20 --iters 10 > /dev/null; e=$(date +%s.%N)
	echo "untraced $(awk "BEGIN {print $e - $s}")"
	s=$(date +%s.%N); $cuzk gpu-trace --trace-file /tmp/gt-bench.jsonl -- $fc --runs 20 --iters 10 > /dev/null; e=$(date +%s.%N)
	echo "traced $(awk "BEGIN {print $e - $s}")"
done
echo "gpu-trace-check: $ok passed, $bad failed"
