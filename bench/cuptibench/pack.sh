#!/usr/bin/env bash
# Builds what bench/cuptibench/session.sh needs on the GPU host into
# .devpack-cupti.txz (from a clone, as bench/pack-device.sh): cuzk,
# cuptibench, foreign-cuda and gorgonia-cu, plus the sources the host
# builds or runs itself (the C++ example, cuptimatrix.cu, the Python examples, the
# session script and its span counter).
set -euo pipefail
top=$(git rev-parse --show-toplevel)
cd "$top"
[ -d .git ] || { echo "pack: $top is a git worktree; pack from a clone" >&2; exit 1; }
rm -rf .dev && mkdir -p .dev/bin
export GOOS=linux GOARCH=amd64 CGO_ENABLED=1
go build -buildvcs=true -trimpath -ldflags=-s -o .dev/bin/cuzk ./cmd/cuzk
go build -buildvcs=true -trimpath -ldflags=-s -o .dev/bin/cuptibench ./bench/cuptibench
sh examples/foreign-cuda/build.sh .dev/bin/foreign-cuda
sh examples/gorgonia-cu/build.sh .dev/bin/gorgonia-cu
tar -cf - .dev bench/cuptibench/session.sh bench/cuptibench/spans.py bench/cuptibench/cuptimatrix.cu examples/multistream-cpp examples/python-nvtx | xz -6 -T2 > .devpack-cupti.txz
ls -la .devpack-cupti.txz
