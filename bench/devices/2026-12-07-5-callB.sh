#!/usr/bin/env bash
# Session 2026-12-07-5, call B (issue 24): merkle 2^26 proved with keys made on the GPU and never
# written (`cuzk prove --backend cuda --ephemeral-keys`), beside porep 2^26 the same way in a fresh
# cache directory (after 8321265: no circuit.cache.store, no keys.hash). Each under
# /usr/bin/time -v with its trace; the device memory sampled every 200 ms by nvidia-smi.
# run(command="bash bench/devices/2026-12-07-5-callB.sh", carry=[".devrun"]) with the pack at
# .devrun/devpack.txz (unpacked again only when .dev is missing: the machine may be warm).
set -uo pipefail
T0=$(date +%s); left() { echo $((${BUDGET:-585} - ($(date +%s) - T0))); }
cd "$(dirname "$0")/../.."
[ -x .dev/bin/cuzk ] || tar -xJf .devrun/devpack.txz
export XDG_CACHE_HOME=$PWD/.dev/cache
L=$OUT/call.log
log() { echo "== $(date -u +%T) [$(( $(date +%s) - T0 ))s] $*" | tee -a $L; }
log "host $(nproc) cores $(free -g | awk '/Mem/{print $2}') GiB; $(cat .devrun/REV 2>/dev/null); disk $(df -h /tmp | tail -1)"
for c in merkle porep; do
  if [ "$(left)" -lt 150 ]; then log "skip $c: $(left) s left"; continue; fi
  export CUZK_CACHE_DIR=/tmp/cuzk-eph-$c; rm -rf $CUZK_CACHE_DIR; mkdir -p $CUZK_CACHE_DIR
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > /tmp/smi-$c.txt 2>/dev/null & smi=$!
  log "$c 2^26 ephemeral"
  timeout $(( $(left) - 10 )) /usr/bin/time -v ./.dev/bin/cuzk prove --backend cuda --ephemeral-keys --circuit $c --constraints 67108864 --release async --trace-file $OUT/$c-26.jsonl > $OUT/$c-26.out 2> $OUT/$c-26.err
  log "$c exit $?"; kill $smi 2>/dev/null
  echo "peak device memory used MiB: $(sort -n /tmp/smi-$c.txt | tail -1)" | tee -a $L
  tail -5 $OUT/$c-26.out | tee -a $L
  grep -E 'Elapsed|Maximum resident|Percent of CPU' $OUT/$c-26.err | tee -a $L
  grep -vE '^\s' $OUT/$c-26.err | grep -v 'Command being' | tail -4 | tee -a $L
  ls $CUZK_CACHE_DIR | head | sed 's/^/cache dir: /' | tee -a $L
  ./.dev/bin/cuzk trace $OUT/$c-26.jsonl > $OUT/$c-26.trace.txt 2>&1
  grep -E 'engine.job|circuit\.|keys\.|setup\.|pipeline\.|groth16\.|msm\.|buffer\.|untraced' $OUT/$c-26.trace.txt | head -70 | cut -c1-160 | tee -a $L
  tail -25 $OUT/$c-26.trace.txt | tee -a $L
  rm -rf $CUZK_CACHE_DIR
done
log done
