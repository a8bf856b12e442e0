#!/usr/bin/env bash
# Issue 23 on the GPU host, from the repository root after unpacking the
# pack (bench/cuptibench/pack.sh): every program of item 1 under `cuzk
# gpu-trace` (span counts, exit codes, the lines gpu-trace said), then the
# overhead of item 2 (short-kernel loops and the prover, each against
# itself untraced in the same run) and the CUPTI-vs-events agreement.
# Everything goes to $OUT; bench/cupti.md says how to read it.
#
#   STEPS="programs loop prove"   LOG2=20   REPS=3
#   STEPS="confirm prove" LOG2=22 REPS=2 PROVE_ENV=CUZK_CUPTI_PINNED=1   (its second call)
#   STEPS="matrix gtloop agree prove"   LOG2=22 REPS=2   (the third session:
#   CUPTI's own cost a launch by configuration, gpu-trace's settings, the
#   agreement by arrangement, the prover at 2^22)
#   STEPS="noflush"   LOG2=22 REPS=3   (cuda.cupti_ms with the forced
#   flush at each Synchronize, CUZK_CUPTI_NO_FORCED_FLUSH=0, files
#   *noflush0*, and without it, =1, cupti's default since issue 23's sixth
#   session, files *noflush1*: the loop's and the prover's overhead, the
#   agreement, and how many kernel spans got no record within the wait)
#   STEPS="noflush fewus" LOG2=22 REPS=5   (the 2026-12-07 fifth session:
#   the prover's overhead at five proofs a side, and the loop of 10^5
#   launches whose kernels take a few us, untraced against gpu-trace)
#   STEPS="check lazy agree cbloop check2"   (the second session of issue 23: the
#   loop under each API-record setting, the agreement arrangements,
#   cuptibench's loop with the flush variants, the ranged programs again)
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out/traces"
d=.dev/bin
export XDG_CACHE_HOME=$PWD/.dev/cache CUZK_CACHE_DIR=/tmp/cuzk-keys
mkdir -p "$XDG_CACHE_HOME" "$CUZK_CACHE_DIR"
steps=${STEPS:-programs loop prove}
lg=${LOG2:-20}
reps=${REPS:-3}
log() { echo "== $(date -u +%T) $*"; }
sp() { python3 bench/cuptibench/spans.py "$@"; }
tid=4bf92f3577b34da6a3ce929d0e0e4736 sid=00f067aa0ba902b7 tp=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
# Keys of the prover's size in the background while the programs run.
if [[ " $steps " == *" prove "* || " $steps " == *" noflush "* ]] && [ ! -e /tmp/cuzk-keys/.done-$lg ]; then
	setsid bash -c "$d/cuzk setup --circuit merkle --constraints $((1 << lg)) && touch /tmp/cuzk-keys/.done-$lg" > "$out/setup.log" 2>&1 < /dev/null &
fi
if [ ! -x $d/multistream ]; then
	log "build multistream"
	sh examples/multistream-cpp/build.sh $d/multistream 2>&1 | tail -3
fi
if [[ " $steps " == *" matrix "* || " $steps " == *" confirm "* ]] && [ ! -x $d/cuptimatrix ]; then
	log "build cuptimatrix"
	cu=/usr/local/cuda/targets/x86_64-linux
	lib=$(ls $cu/lib/libcupti.so $cu/lib/libcupti.so.* /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* 2>/dev/null | head -1)
	/usr/local/cuda/bin/nvcc -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -o $d/cuptimatrix bench/cuptibench/cuptimatrix.cu \
		-I$cu/include -I/usr/local/cuda/extras/CUPTI/include "$lib" -lcuda -Xlinker -rpath,"$(dirname "$lib")" 2>&1 | tail -5
	grep -n 'CUPTI_CBID_RESOURCE_CU_INIT_FINISHED\|CUPTI_ERROR_NOT_INITIALIZED ' $cu/include/cupti_callbacks.h $cu/include/cupti_result.h 2>/dev/null | head -3
fi
# Timings wait for the key setup (it uses the GPU).
if [ -n "$(jobs -p)" ]; then
	log "waiting for the key setup"
	wait
	tail -2 "$out/setup.log"
fi
med() { # med FILE: median wall ms and host us a launch per mode, from "matrix"/"multistream" lines
	python3 - "$@" <<'PY'
import re, statistics, sys, collections
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    m = re.search(r"^(\S+) (.*?) in ([0-9.]+) ms .*host ([0-9.]+) us", line)
    if not m:
        continue
    key = line.split(":")[0] if line.startswith("matrix") else m.group(1)
    key = re.sub(r"\s+", " ", key)
    tag = re.search(r"\[(.*)\]\s*$", line)
    if tag:
        key += " [" + tag.group(1) + "]"
    rows.setdefault(key, []).append((float(m.group(3)), float(m.group(4))))
base = {}
for k, v in rows.items():
    w = statistics.median(x[0] for x in v); h = statistics.median(x[1] for x in v)
    it = re.search(r"iters (\d+)", k); it = it.group(1) if it else "?"
    bk = (k.split()[0], it)
    if k.startswith("matrix off") or "untraced" in k:
        base.setdefault(bk, w)
    b = base.get(bk)
    r = "" if b is None else " %+6.1f %%" % (100 * (w / b - 1))
    print("%-60s n=%d wall ms %s median %.1f%s host us %.3f (min wall %.1f)" % (k, len(v), " ".join("%.1f" % x[0] for x in v), w, r, h, min(x[0] for x in v)))
PY
}
gt() { # gt NAME ARGS...: one program under gpu-trace
	local name=$1
	shift
	rm -f "$out/traces/$name.jsonl"
	local t0=$(date +%s.%N)
	$d/cuzk gpu-trace --trace-file "$out/traces/$name.jsonl" -- "$@" > "$out/traces/$name.out" 2> "$out/traces/$name.err"
	local rc=$?
	log "$name: exit $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s; stdout: $(tail -c 200 "$out/traces/$name.out" | tr '\n' ' ')"
	grep 'cuzk gpu-trace' "$out/traces/$name.err" | head -5
	sp "$out/traces/$name.jsonl" --trace $tid
}
for s in $steps; do
	case $s in
	programs)
		gt gorgonia $d/gorgonia-cu -n 1048576 -iters 10
		gt gorgonia-osexit $d/gorgonia-cu -n 1048576 -iters 10 -keep-context
		gt multistream $d/multistream --threads 4 --streams 2 --jobs 3 --traceparent $tp
		gt multistream-nvtx0 $d/multistream --threads 2 --jobs 2
		for e in _exit sigterm crash; do gt "c-$e" $d/multistream --threads 2 --jobs 2 --end $e; done
		gt cupy python3 examples/python-nvtx/cupy_job.py --traceparent $tp
		gt torch python3 examples/python-nvtx/torch_job.py --traceparent $tp
		gt foreign-cuda $d/foreign-cuda --iters 5 --runs 3 --pause-ms 200 --traceparent $tp
		cp "$out/traces/multistream.jsonl" "$out/traces/gorgonia.jsonl" "$out/" 2>/dev/null
		;;
	loop)
		# untraced, under gpu-trace, and under gpu-trace without CUPTI's
		# API records (CUZK_GPUTRACE_API=0: what they cost), in turn.
		for i in $(seq "$reps"); do
			log "loop round $i"
			$d/multistream --loop 100000
			rm -f /tmp/loop.jsonl
			$d/cuzk gpu-trace --trace-file /tmp/loop.jsonl -- $d/multistream --loop 100000
			sp /tmp/loop.jsonl > /tmp/loop.txt; head -1 /tmp/loop.txt
			CUZK_GPUTRACE_API=0 $d/cuzk gpu-trace --trace-file /tmp/loop0.jsonl -- $d/multistream --loop 100000 | sed 's/$/ (no API records)/'
		done
		$d/cuptibench -loop 100000 -reps "$reps" -out "$out/cuptibench-loop.txt"
		;;
	lazy)
		# The loop untraced and under gpu-trace with API records on demand
		# (the default), always (API=1), never (API=0), with hardware
		# kernel timestamps asked for, and inside one NVTX range (where
		# the default needs them), rounds in turn.
		grep -c cuptiActivityEnableHWTrace /usr/local/cuda/targets/x86_64-linux/include/cupti_activity.h 2>/dev/null | sed 's/^/cupti_activity.h mentions cuptiActivityEnableHWTrace: /'
		for i in $(seq "$reps"); do
			log "lazy round $i"
			$d/multistream --loop 100000 | sed 's/$/ [untraced]/'
			$d/multistream --loop 100000 --loop-range | sed 's/$/ [untraced, range]/'
			for v in default API=1 API=0 HWTRACE=1 range; do
				envs=() args=()
				case $v in API=*|HWTRACE=*) envs=("CUZK_GPUTRACE_$v") ;; range) args=(--loop-range) ;; esac
				env "${envs[@]}" timeout 60 $d/cuzk gpu-trace --trace-file /tmp/loop-$v.jsonl -- $d/multistream --loop 100000 "${args[@]}" 2> /tmp/loop-$v.err | sed "s/\$/ [gpu-trace $v]/"
				grep 'cuzk gpu-trace' /tmp/loop-$v.err | head -2
			done
		done
		for v in default range; do echo "loop $v: $(sp /tmp/loop-$v.jsonl | head -1)"; done
		;;
	lazy2)
		# Fewer variants, more rounds: untraced, gpu-trace with API records
		# on demand (none in this loop: no range), and always on; the
		# medians of the wall times and of the host's time a launch call.
		rm -f /tmp/lz-*.txt
		for i in $(seq "$reps"); do
			$d/multistream --loop 100000 >> /tmp/lz-untraced.txt
			timeout 30 $d/cuzk gpu-trace --trace-file /tmp/lz.jsonl -- $d/multistream --loop 100000 >> /tmp/lz-default.txt 2> /dev/null
			CUZK_GPUTRACE_API=1 timeout 30 $d/cuzk gpu-trace --trace-file /tmp/lz.jsonl -- $d/multistream --loop 100000 >> /tmp/lz-API=1.txt 2> /dev/null
		done
		for v in untraced default API=1; do
			python3 -c 'import re,statistics,sys
w=[float(m.group(1)) for m in re.finditer(r"in ([0-9.]+) ms", open(sys.argv[1]).read())]
h=[float(m.group(1)) for m in re.finditer(r"host ([0-9.]+) us", open(sys.argv[1]).read())]
print(sys.argv[2], "wall ms", " ".join("%.1f" % x for x in w), "median %.1f" % statistics.median(w), "host us a launch median %.3f" % statistics.median(h))' /tmp/lz-$v.txt $v
		done
		;;
	matrix)
		# What CUPTI itself costs a launch, by configuration (cuptimatrix.cu:
		# no code of ours on the path), the main modes three rounds and the
		# others two, in turn; then the same loop with longer kernels (the
		# GPU, not the host, bounding it); then the loop under gpu-trace
		# with each of its settings.
		a="off ck k hes+ck sub+ext+ck+mem+tick"
		b="sub ck+hbuf ck+devbuf ck+pinned ck+nopt ck+tick ck+fp api+ck ext+api+ck+push cbl+ck rtl+ext+ck+push"
		rm -f /tmp/mx.txt
		for r in 1 2 3; do
			for m in $a; do timeout 30 $d/cuptimatrix "$m" >> /tmp/mx.txt 2>&1; done
			[ $r -le 2 ] && for m in $b; do timeout 30 $d/cuptimatrix "$m" >> /tmp/mx.txt 2>&1; done
		done
		for r in 1 2; do
			for it in 2048 8192; do
				for m in off ck sub+ext+ck+mem+tick; do timeout 30 $d/cuptimatrix --iters $it "$m" >> /tmp/mx.txt 2>&1; done
			done
		done
		grep -v '^matrix' /tmp/mx.txt | sort | uniq -c | head -20
		grep '^matrix' /tmp/mx.txt | grep -v '^matrix off' | sed 's/.*launch call)//' | sort | uniq | head -40
		med /tmp/mx.txt
		cp /tmp/mx.txt "$out/matrix.txt"
		;;
	confirm)
		# The fix (the external correlation kind off with the API kinds):
		# which kind cost the launches (one round of CUPTI alone with each
		# added to kernel records), then the loop untraced and under
		# gpu-trace, rounds in turn.
		rm -f /tmp/cf.txt
		for r in 1 2; do
			for m in off ck ck+ext ck+mem; do timeout 30 $d/cuptimatrix "$m" >> /tmp/cf.txt 2>&1; done
		done
		for r in 1 2 3; do
			$d/multistream --loop 100000 | sed 's/$/ [untraced iters 16]/' >> /tmp/cf.txt
			timeout 60 $d/cuzk gpu-trace --trace-file /tmp/cf.jsonl -- $d/multistream --loop 100000 2> /tmp/cf.err | sed 's/$/ [gpu-trace iters 16]/' >> /tmp/cf.txt
			grep 'cuzk gpu-trace' /tmp/cf.err | head -2
		done
		echo "loop under gpu-trace: $(sp /tmp/cf.jsonl 2>/dev/null | head -1)"
		med /tmp/cf.txt
		;;
	gtloop)
		rm -f /tmp/gl.txt
		for r in 1 2 3; do
			for it in 16 2048; do
				$d/multistream --loop 100000 --loop-iters $it | sed "s/\$/ [untraced iters $it]/" >> /tmp/gl.txt
				for v in default KIND=kernel; do
					envs=()
					[ $v != default ] && envs=("CUZK_GPUTRACE_$v")
					[ $it != 16 ] && [ $v != default ] && continue
					env "${envs[@]}" timeout 60 $d/cuzk gpu-trace --trace-file /tmp/gl-$v.jsonl -- $d/multistream --loop 100000 --loop-iters $it 2> /tmp/gl-$v.err | sed "s/\$/ [gpu-trace $v iters $it]/" >> /tmp/gl.txt
					grep 'cuzk gpu-trace' /tmp/gl-$v.err | head -2
				done
			done
		done
		CUZK_GPUTRACE_HWTRACE=1 timeout 60 $d/cuzk gpu-trace --trace-file /tmp/gl-hw.jsonl -- $d/multistream --loop 100000 2>&1 | sed 's/$/ [gpu-trace HWTRACE=1 iters 16]/' | tee -a /tmp/gl.txt
		echo "loop under gpu-trace: $(sp /tmp/gl-default.jsonl | head -1)"
		echo "loop under gpu-trace, KERNEL records: $(sp /tmp/gl-KIND=kernel.jsonl | head -1)"
		med /tmp/gl.txt
		;;
	fewus)
		# Issue 23's "10^5 launches of a few us each": the loop with longer
		# kernels (512, 1024, 2048 multiply-adds a thread), untraced and
		# under gpu-trace, rounds in turn; the kernels' own durations from
		# the trace.
		rm -f /tmp/fu.txt
		for r in $(seq "$reps"); do
			for it in 512 1024 2048; do
				$d/multistream --loop 100000 --loop-iters $it | sed "s/\$/ [untraced iters $it]/" >> /tmp/fu.txt
				timeout 90 $d/cuzk gpu-trace --trace-file /tmp/fu-$it.jsonl -- $d/multistream --loop 100000 --loop-iters $it 2> /tmp/fu.err | sed "s/\$/ [gpu-trace iters $it]/" >> /tmp/fu.txt
				[ "$r" = 1 ] && grep 'cuzk gpu-trace' /tmp/fu.err | head -2
			done
		done
		for it in 512 1024 2048; do echo "iters $it under gpu-trace: $(sp /tmp/fu-$it.jsonl | head -1)"; done
		med /tmp/fu.txt
		cp /tmp/fu.txt "$out/fewus.txt"
		;;
	agree)
		timeout 60 $d/cuptibench -agree 90 -out "$out/cuptibench-agree.txt"
		;;
	cbloop)
		timeout 90 $d/cuptibench -loop 100000 -reps "$reps" -out "$out/cuptibench-loop.txt"
		;;
	noflush)
		for mode in 0 1; do
			export CUZK_CUPTI_NO_FORCED_FLUSH=$mode
			log "cuptibench, CUZK_CUPTI_NO_FORCED_FLUSH=$mode"
			timeout 120 $d/cuptibench -loop 100000 -reps "$reps" -out "$out/cuptibench-loop-noflush$mode.txt"
			timeout 60 $d/cuptibench -agree 90 -out "$out/cuptibench-agree-noflush$mode.txt"
		done
		for _ in $(seq 240); do [ -e /tmp/cuzk-keys/.done-$lg ] && break; sleep 1; done
		for mode in 0 1; do
			CUZK_CUPTI_NO_FORCED_FLUSH=$mode timeout 200 $d/cuptibench -circuit merkle -log2 "$lg" -reps "$reps" -out "$out/cuptibench-noflush$mode.txt"
		done
		unset CUZK_CUPTI_NO_FORCED_FLUSH
		;;
	check)
		gt multistream $d/multistream --threads 4 --streams 2 --jobs 3 --traceparent $tp
		gt cupy python3 examples/python-nvtx/cupy_job.py --traceparent $tp
		;;
	check2)
		gt gorgonia $d/gorgonia-cu -n 1048576 -iters 10
		gt foreign-cuda $d/foreign-cuda --iters 5 --runs 3 --pause-ms 200 --traceparent $tp
		gt torch python3 examples/python-nvtx/torch_job.py --traceparent $tp
		;;
	prove)
		for _ in $(seq 240); do [ -e /tmp/cuzk-keys/.done-$lg ] && break; sleep 1; done
		tail -2 "$out/setup.log"
		env ${PROVE_ENV:-} $d/cuptibench -circuit merkle -log2 "$lg" -reps "$reps" -out "$out/cuptibench.txt"
		for i in $(seq "$reps"); do
			$d/cuzk prove --backend cuda --circuit merkle --constraints $((1 << lg)) --trace-file /tmp/p-off.jsonl > /dev/null 2>&1
			$d/cuzk gpu-trace --trace-file /tmp/p-gt.jsonl -- $d/cuzk prove --backend cuda --circuit merkle --constraints $((1 << lg)) --trace-file /tmp/p-on.jsonl > /dev/null 2> "$out/prove-gt.err"
			log "prove 2^$lg round $i: pipeline.prove ms untraced $(sp /tmp/p-off.jsonl --dur pipeline.prove), under gpu-trace $(sp /tmp/p-on.jsonl --dur pipeline.prove)"
			rm -f /tmp/p-off.jsonl /tmp/p-on.jsonl
		done
		sp /tmp/p-gt.jsonl
		grep 'cuzk gpu-trace' "$out/prove-gt.err" | head -3
		;;
	esac
done
log done
