#!/usr/bin/env bash
# Build everything one GPU session needs (the GPU host has no Go) into one
# compressed file, .devpack.txz (ignored by git), small enough to travel:
#
#   bench/pack-device.sh                                     # here
#   run(command="tar -xJf .devpack.txz && bash .dev/device-session.sh",
#       carry=[".devpack.txz"])                              # there
#
# Built on the shared packer, ../shared/tools/device-pack ($DEVICE_PACK to
# point elsewhere): it builds cmd/cuzk, the test binaries of the packages
# below and .dev/run-tests (each binary run in its package folder). This
# script adds what a bench session needs beyond it: symbols stripped
# (GOFLAGS=-ldflags=-s, so the pack stays under the 64 MiB a call
# carries), the benchmark programs, the session script, the NVRTC kernel
# cache of an earlier session when its kernel-cache.tgz was unpacked into
# .dev/cache (the device then skips the compile of the kernel modules),
# and the tarball: xz -9, whose 64 MiB window finds the Go runtime and
# the packages the 17 binaries share (gzip's 32 KiB window does not: 107 MB
# as .tgz against 32 MB as .txz at 3739f74), so the
# pack fits the 64 MiB a device call carries; it fails when it does not.
set -euo pipefail
top=$(git rev-parse --show-toplevel)
cd "$top"
pack=${DEVICE_PACK:-$top/../shared/tools/device-pack}
[ -x "$pack" ] || { echo "pack-device: $pack not found (set DEVICE_PACK to ../shared/tools/device-pack)" >&2; exit 1; }
# device-pack writes .git/info/exclude, and Go stamps no VCS revision in a
# worktree's builds (cuzk's circuit cache keys on it): a clone only.
[ -d .git ] || { echo "pack-device: $top is a git worktree; pack from a clone (git clone $top /tmp/pack)" >&2; exit 1; }
ex=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$ex")"
grep -qx /.devpack.txz "$ex" 2>/dev/null || echo /.devpack.txz >> "$ex"
# device-pack starts from an empty .dev: keep the kernel cache aside.
keep=$(mktemp -d)
[ -d .dev/cache ] && mv .dev/cache "$keep/"
# The packages with GPU tests (bench/device-session.sh runs them all).
GOFLAGS=-ldflags=-s "$pack" ./cudaspans ./cudaspans/internal/ctest ./prover/gpu ./prover/gpu/msm ./prover/gpu/ntt ./prover/gpu/fixedbase ./cupti ./examples/foreign-cuda
[ -d "$keep/cache" ] && mv "$keep/cache" .dev/
rmdir "$keep" 2>/dev/null || rm -rf "$keep"
export GOOS=linux GOARCH=amd64 CGO_ENABLED=1
strip=(-trimpath -ldflags=-s)
# -buildvcs=true whatever GOFLAGS says: cuzk keys its compiled-circuit
# cache by the build's VCS revision (a build without one compiles every
# circuit each run, 18.7 s at 2^22 on the H200). Built again over
# device-pack's, which leaves -buildvcs to the default.
go build -buildvcs=true "${strip[@]}" -o .dev/bin/cuzk ./cmd/cuzk
if ! go version -m .dev/bin/cuzk | grep -q 'vcs.modified=false'; then
	echo "pack-device: cuzk carries no clean VCS revision (packed from a git worktree or a modified tree): its circuit cache will be off on the device" >&2
fi
sh examples/foreign-cuda/build.sh .dev/bin/foreign-cuda
sh examples/gorgonia-cu/build.sh .dev/bin/gorgonia-cu || echo "pack-device: examples/gorgonia-cu not built (see its README)"
for p in gpuprove nttbench msmbench cuptibench daemonbench synthbench keyload setupbench; do
	go build -buildvcs=true "${strip[@]}" -o ".dev/bin/$p" "./bench/$p" # synthbench, keyload: the circuit cache of cuzk setup
done
cp bench/device-session.sh .dev/device-session.sh
cp bench/cupti-layout.sh bench/gpu-trace-check.sh .dev/
# -T2: two xz blocks over the ~290 MB tar, so both cores compress.
tar -cf - .dev | xz -9 -T2 > .devpack.txz
ls -la .devpack.txz
size=$(stat -c %s .devpack.txz)
limit=$((64 << 20))
if [ "$size" -gt "$limit" ]; then
	echo "pack-device: .devpack.txz is $size bytes, over the $limit a device call carries" >&2
	exit 1
fi
