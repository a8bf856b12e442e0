#!/usr/bin/env bash
# bench/upstream-gpu.sh BIN OUT: on a GPU host, the kernels of an upstream
# cuzk under the job that caused them (issue 22, item 3). The stand-in
# cuzk (e2e/cmd/cuzk-standin) runs -gpu-kernel-ms of real kernels per
# proof under `cuzk gpu-trace --jobs`, on a unix socket as cuzk's daemon
# can; `cuzk serve --upstream unix://...` in front publishes its jobs to
# the jobs file; upstreamgpu sends proofs one at a time, then three at
# once (queued behind each other on the one GPU), and checks the two trace
# files: each engine.job holds upstream.gpu_compute and the kernel spans
# gpu-trace put under it, inside that gpu_compute.
# BIN holds cuzk, cuzk-standin and upstreamgpu. Exits non-zero on failure.
set -u
bin=$1
out=$2
mkdir -p "$out"
cd "$out"
: > jobs.jsonl
sock=$out/cuzk.sock
front=$out/front.sock
t0=$(date +%s.%N)
"$bin/cuzk" gpu-trace --jobs jobs.jsonl --trace-file gputrace.jsonl --window 1s --max-kernel-spans 4096 -- \
	"$bin/cuzk-standin" -listen "unix://$sock" -delay 150ms -gpu-kernel-ms ${GPU_KERNEL_MS:-300} -kernel-ms 20 \
	-srs-load-ms 40 -synthesis-ms 100 > standin.log 2>&1 &
gt=$!
for _ in $(seq 100); do grep -q listening standin.log && break; sleep 0.1; done
grep -q listening standin.log || { echo "stand-in did not start"; cat standin.log; exit 1; }
CUZK_GPUTRACE_JOBS=$out/jobs.jsonl "$bin/cuzk" serve --listen "unix://$front" --upstream "unix://$sock" --backend cpu \
	--metrics-listen "" --trace-file serve.jsonl --state-dir none > serve.log 2>&1 &
sv=$!
for _ in $(seq 100); do grep -q "listening on" serve.log && break; sleep 0.1; done
grep -q "listening on" serve.log || { echo "cuzk serve did not start"; cat serve.log; exit 1; }
rc=0
"$bin/upstreamgpu" send -addr "unix://$front" -n 4 -concurrency 1 -prefix seq || rc=1
"$bin/upstreamgpu" send -addr "unix://$front" -n 6 -concurrency 3 -prefix conc || rc=1
kill -TERM $sv; wait $sv
kill -TERM $gt; wait $gt
echo "--- stand-in and gpu-trace:"; tail -5 standin.log
echo "--- serve:"; tail -3 serve.log
echo "--- jobs file: $(wc -l < jobs.jsonl) lines, $(grep -c '"at_ns"' jobs.jsonl) device lines"
"$bin/upstreamgpu" check -daemon serve.jsonl -gpu gputrace.jsonl || rc=1
echo "elapsed $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo '?') s"
exit $rc
