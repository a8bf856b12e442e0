#!/usr/bin/env bash
# Session 2026-12-07-5, call C (issue 23): the loop of 10^5 launches whose kernels take a few us,
# untraced against `cuzk gpu-trace` (session.sh's fewus step, 5 rounds), then the prover's overhead
# at 2^22 with five proofs a side (noflush step, REPS=5).
# run(command="bash bench/devices/2026-12-07-5-callC.sh", carry=[".devrun"]).
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -x .dev/bin/cuzk ] || tar -xJf .devrun/devpack.txz
[ -f .devrun/kernel-cache.tgz ] && [ ! -d .dev/cache ] && tar -xzf .devrun/kernel-cache.tgz -C .dev 2>/dev/null
O=$OUT
STEPS="fewus noflush" LOG2=22 REPS=5 OUT=$O timeout 570 bash bench/cuptibench/session.sh 2>&1 | tee $O/call.log | tail -60
