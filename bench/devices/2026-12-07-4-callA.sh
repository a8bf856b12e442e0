#!/usr/bin/env bash
# Written in session 2026-12-07-4 (no device was lent), for the next session's first call. Run from the repository root
# with the pack at .devrun/devpack.txz: run(command="bash bench/devices/2026-12-07-4-callA.sh", carry=[".devrun"]).
# Call A: the owed GPU tests of cupti and prover/gpu (message-only changes since pack 865947a),
# registered copies with pool and async in gpuprove (2^20, 2^22; makes the keys), the component
# solver against the level solver on 16 cores (synthbench, merkle and porep 2^22), the daemon with
# the new defaults (--release pool, components) against --release async (2^22, 2^20, 32 jobs),
# then porep/merkle at 2^24 with the defaults (issue 24 item 3 after 350d6d7).
set -uo pipefail
T0=$(date +%s); left() { echo $((${BUDGET:-585} - ($(date +%s) - T0))); }
cd "$(dirname "$0")/../.."
tar -xJf .devrun/devpack.txz
export XDG_CACHE_HOME=$PWD/.dev/cache CUZK_CACHE_DIR=/tmp/cuzk-keys
mkdir -p $XDG_CACHE_HOME $CUZK_CACHE_DIR
[ -f .devrun/kernel-cache.tgz ] && tar -xzf .devrun/kernel-cache.tgz -C .dev 2>/dev/null
L=$OUT/call.log; O=$OUT; OUT=/tmp/cA; mkdir -p $OUT
fin() { (cd /tmp/cA && tar -czf $O/details.tgz . ) ; tar -czf $O/kernel-cache.tgz -C .dev cache 2>/dev/null; }
trap fin EXIT
log() { echo "== $(date -u +%T) [$(( $(date +%s) - T0 ))s] $*" | tee -a $L; }
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee -a $L
log "host $(nproc) cores $(free -g | awk '/Mem/{print $2}') GiB; $(cat .devrun/REV 2>/dev/null)"
log "owed GPU tests: cupti and prover/gpu"
for pk in cupti prover_gpu; do
  d=$(echo $pk | tr _ /)
  (cd $d && timeout 200 ../$( [ $pk = prover_gpu ] && echo ../ ).dev/test/$pk.test -test.run 'GPU|CUDA' -test.short > $OUT/t-$pk.log 2>&1); log "$pk exit $?"
  grep -cE '^--- PASS' $OUT/t-$pk.log | xargs echo "$pk passed" | tee -a $L; grep -E '^--- FAIL' $OUT/t-$pk.log | tee -a $L
done
for lg in 20 22; do
  log "gpuprove merkle 2^$lg registered, pool then async (keys for the daemon)"
  for rel in pool async; do
  timeout 150 ./.dev/bin/gpuprove -backends cuda -circuit merkle -log2 $lg -reps 3 -setup cuda -host-copy registered -release $rel -msm-g2 gpu -story-log2 0 -out $OUT/gp$lg-$rel.txt > $OUT/gp$lg-$rel.log 2>&1; log "$rel exit $?"
  grep -E "median prove" $OUT/gp$lg-$rel.txt | cut -c1-700 | tee -a $L; tail -3 $OUT/gp$lg-$rel.log | tee -a $L
  done
done
log "synthbench merkle 2^22 and porep 2^22: levels against components, 1 and 16 solver tasks"
for c in merkle porep; do
  timeout 150 ./.dev/bin/synthbench -circuit $c -log2 22 -reps 3 -gnark=false -tasks "" -level-tasks 1,16 -solvers levels,auto > $OUT/sb-$c.txt 2>&1; log "$c exit $?"; grep -E 'Synthesize|solve' $OUT/sb-$c.txt | tee -a $L
done
for lg in 22 20; do for rel in async pool; do
  if [ "$(left)" -gt 200 ]; then
    log "daemonbench 2^$lg 32 jobs, defaults, --release $rel"
    timeout 120 ./.dev/bin/daemonbench -cuzk ./.dev/bin/cuzk -backend cuda -circuit merkle -runs $lg:32 -modes pipelined -lone 2 -release $rel -dir $OUT/db$lg-$rel -out $OUT/db$lg-$rel.txt > $OUT/db$lg-$rel.log 2>&1; log "exit $?"; tail -14 $OUT/db$lg-$rel.txt | tee -a $L; tail -3 $OUT/db$lg-$rel.log | tee -a $L
  fi
done; done
if [ "$(left)" -gt 150 ]; then
  log "issue 24 item 3: porep,merkle 2^24 defaults, pool"
  timeout $(( $(left) - 8 )) ./.dev/bin/gpuprove -backends cuda -release pool -host-copy registered -msm-g2 gpu -circuit porep,merkle -log2 24 -setup cuda -reps 3 -story-log2 0 -out $OUT/gp24.txt > $OUT/gp24.log 2>&1; log "exit $?"; grep -E "median prove|compile|keys" $OUT/gp24.txt | cut -c1-900 | tee -a $L; tail -8 $OUT/gp24.txt | tee -a $L; tail -3 $OUT/gp24.log | tee -a $L
fi
log done
