#!/usr/bin/env bash
# One GPU session, on the GPU host, from the repository root (built by
# bench/pack-device.sh): checks first, then the figures of bench/ntt.md,
# bench/msm.md and bench/gpuprove.md. Everything is logged to $OUT (or
# /tmp/out) as it goes, so a run cut short still returns what it did.
#
#   STEPS="keys tests twogpu ntt msm prove"   which parts, in order (default: these;
#                                             also "variants": msmbench/nttbench macro sets,
#                                             "daemon": daemonbench, serial vs pipelined serve,
#                                             "coldstart": cuzk prove on an empty kernel cache, then warm,
#                                             "fault": a faulting kernel fences the device off)
#   SIZES="20,22"                             log2 sizes of the full prove
#
# On a host with 32 or more cores (the 2-GPU H200 machine) the key setup
# (groth16.Setup at each SIZE, minutes at 2^22) runs in the background on
# the upper half of the cores, in its own session, so it outlives this
# command and a second call on the same machine finds the keys; the other
# steps run on the lower 16 cores, so the CPU baselines are 16 cores, as in
# earlier sessions. On a smaller host "keys" runs in the foreground.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
cd "$(dirname "$0")/.."
steps=${STEPS:-keys tests twogpu ntt msm prove}
sizes=${SIZES:-20,22}
# Kernels compiled by NVRTC are cached under $XDG_CACHE_HOME/otelcuzk;
# keep that cache in .dev/cache so it can travel to the next session.
export XDG_CACHE_HOME=$PWD/.dev/cache CUZK_CACHE_DIR=/tmp/cuzk-keys
mkdir -p "$XDG_CACHE_HOME" "$CUZK_CACHE_DIR"
log() { echo "== $(date -u +%T) $*" | tee -a "$out/session.log"; }
run() { log "$*"; "$@" 2>&1 | tee -a "$out/session.log"; log "exit ${PIPESTATUS[0]}"; }
ncpu=$(nproc)
ngpu=$(nvidia-smi -L | wc -l)
pin=()
if [ "$ncpu" -ge 32 ]; then
	pin=(taskset -c 0-15 env GOMAXPROCS=16)
fi
keys_done=/tmp/cuzk-keys/.done

run nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
log "host: $ncpu cores, $ngpu GPUs, $(free -g | awk '/Mem/ {print $2}') GiB"
for s in $steps; do
	case $s in
	keys)
		if [ -e "$keys_done" ]; then
			log "keys: already made"
			continue
		fi
		mk="for lg in ${sizes//,/ }; do ./.dev/bin/cuzk setup --circuit merkle --constraints \$((1<<lg)); done; touch $keys_done"
		if [ "$ncpu" -ge 32 ]; then
			log "keys: setup of 2^{$sizes} in the background on cores 16-$((ncpu - 1)) (log in /tmp/cuzk-keys/setup.log)"
			setsid taskset -c 16-$((ncpu - 1)) bash -c "$mk" > /tmp/cuzk-keys/setup.log 2>&1 < /dev/null &
		else
			run bash -c "$mk"
		fi
		;;
	tests) run "${pin[@]}" ./.dev/run-tests -test.run 'GPU|CUDA' -test.short -test.timeout 20m ;;
	twogpu)
		if [ "$ngpu" -lt 2 ]; then
			log "twogpu: one GPU, skipped"
			continue
		fi
		# cuzk serve makes one worker per GPU: 8 concurrent proofs must
		# spread over both (engine.job's cuda.device.ordinal in the trace).
		run "${pin[@]}" ./.dev/bin/cuzk setup --circuit merkle --constraints 65536
		rm -f "$out/serve-trace.jsonl"
		"${pin[@]}" ./.dev/bin/cuzk serve --backend cuda --listen 127.0.0.1:9820 --metrics-listen 127.0.0.1:9464 \
			--trace-file "$out/serve-trace.jsonl" > "$out/serve.log" 2>&1 &
		spid=$!
		for _ in $(seq 300); do grep -q listening "$out/serve.log" && break; sleep 0.5; done
		log "serve: $(head -c 600 "$out/serve.log")"
		pids=()
		for i in $(seq 8); do
			"${pin[@]}" ./.dev/bin/cuzk submit --addr 127.0.0.1:9820 --circuit merkle --constraints 65536 \
				--request-id "twogpu-$i" --sector "$i" > "$out/submit-$i.log" 2>&1 &
			pids+=($!)
		done
		rc=0
		for p in "${pids[@]}"; do wait "$p" || rc=1; done
		log "submits exit $rc"
		cat "$out"/submit-*.log >> "$out/session.log"
		(exec 3<>/dev/tcp/127.0.0.1/9464 && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3) > "$out/serve-metrics.txt" 2>/dev/null
		kill -TERM "$spid"
		wait "$spid"
		log "serve exit $? ; $(tail -n 3 "$out/serve.log")"
		log "engine.job per device: $(grep -o '"name":"engine.job"[^}]*' "$out/serve-trace.jsonl" | wc -l) jobs; $(grep -c . "$out/serve-trace.jsonl") lines"
		;;
	daemon)
		# bench/daemon.md: cuzk serve on one GPU, $DAEMON_RUNS (LOG2:JOBS)
		# proofs at once, the serial engine against the pipelined one.
		for _ in $(seq 600); do [ -e "$keys_done" ] && break; sleep 1; done
		run env CUDA_VISIBLE_DEVICES=0 "${pin[@]}" ./.dev/bin/daemonbench -cuzk ./.dev/bin/cuzk -backend cuda -circuit merkle \
			-runs "${DAEMON_RUNS:-20:16,22:8}" -dir "$out/daemonbench" -out "$out/daemonbench.txt"
		;;
	ntt) run "${pin[@]}" ./.dev/bin/nttbench -sizes 20,24,27 ;;
	variants)
		# Kernel macro sets compared in one run ($MSM_VARIANTS, $NTT_VARIANTS;
		# each checked against gnark-crypto before it is timed).
		run "${pin[@]}" ./.dev/bin/msmbench -log2 24 -variants "${MSM_VARIANTS:-default;MSM_ACCUM_MIN_BLOCKS=4}"
		[ -n "${NTT_VARIANTS:-}" ] && run "${pin[@]}" ./.dev/bin/nttbench -variants "$NTT_VARIANTS"
		;;
	msm) (cd prover/gpu/msm && run "${pin[@]}" ../../../.dev/test/prover_gpu_msm.test -test.run '^$' -test.bench "${MSM_BENCH:-MSMG1|MSMG2}" -test.benchtime 3x) ;;
	prove)
		for _ in $(seq 600); do [ -e "$keys_done" ] && break; sleep 1; done
		[ -e "$keys_done" ] || log "prove: keys not ready; gpuprove will make them"
		[ -e /tmp/cuzk-keys/setup.log ] && tail -n 5 /tmp/cuzk-keys/setup.log | tee -a "$out/session.log"
		run "${pin[@]}" ./.dev/bin/gpuprove -circuit merkle -log2 "$sizes" -reps 3 -story-reps 2 \
			-host-copy staged -msm-g2 gpu,cpu -out "$out/gpuprove.txt"
		run "${pin[@]}" ./.dev/bin/cuzk prove --backend cuda --circuit merkle --constraints 1048576 --release async --trace-file "$out/cuzk-trace.jsonl"
		;;
	fault)
		# Issue 11 item 11: a deliberately faulting kernel poisons its
		# process's context, so this test runs in a process of its own.
		run env CUZK_TEST_DEVICE_FAULT=1 bash -c 'cd prover/gpu && ../../.dev/test/prover_gpu.test -test.v -test.count=1 -test.run "^TestFaultingKernelFencesTheDeviceOffGPU$"' ;;
	coldstart)
		# Issue 10 item 6: the first proof on an empty kernel cache (keys
		# cached) against the same proof warm, end to end; the kernel warm-up
		# of the first is its gpu.warmup trace in cold-1.jsonl.
		for _ in $(seq 600); do [ -e "$keys_done" ] && break; sleep 1; done
		cold=$(mktemp -d)
		for i in 1 2 3; do
			t0=$(date +%s.%N)
			run env XDG_CACHE_HOME="$cold" "${pin[@]}" ./.dev/bin/cuzk prove --backend cuda --circuit merkle \
				--constraints "${COLD_CONSTRAINTS:-1048576}" --trace-file "$out/cold-$i.jsonl"
			log "coldstart: run $i ($([ "$i" = 1 ] && echo "empty kernel cache" || echo "warm")) $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
		done
		rm -rf "$cold"
		;;
	*) log "unknown step $s" ;;
	esac
done
# The kernel cache, for the next session: fetch it and unpack it into
# .dev/cache before packing.
tar -C "$XDG_CACHE_HOME" -czf "$out/kernel-cache.tgz" otelcuzk/kernels 2>/dev/null && log "kernel cache saved ($(du -h "$out/kernel-cache.tgz" | cut -f1))"
