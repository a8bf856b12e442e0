#!/usr/bin/env bash
# Build everything one GPU session needs (the GPU host has no Go) into one
# compressed file, .devpack.tgz (ignored by git), small enough to travel:
#
#   bench/pack-device.sh                                     # here
#   run(command="tar -xzf .devpack.tgz && bash .dev/device-session.sh",
#       carry=[".devpack.tgz"])                              # there
#
# It holds stripped linux/amd64 builds of cmd/cuzk, the benchmark programs,
# the test binaries of the packages with GPU tests, .dev/run-tests, the
# session script, and the NVRTC kernel cache of an earlier session when its
# kernel-cache.tgz was unpacked into .dev/cache (the device then skips the
# minute the MSM kernels take to compile).
set -euo pipefail
top=$(git rev-parse --show-toplevel)
cd "$top"
for ig in /.dev/ /.devpack.tgz; do
	grep -qx "$ig" .git/info/exclude 2>/dev/null || echo "$ig" >> .git/info/exclude
done
keep=$(mktemp -d)
[ -d .dev/cache ] && mv .dev/cache "$keep/"
rm -rf .dev && mkdir -p .dev/bin .dev/test
[ -d "$keep/cache" ] && mv "$keep/cache" .dev/
rmdir "$keep" 2>/dev/null || true
export GOOS=linux GOARCH=amd64 CGO_ENABLED=1
strip=(-trimpath -ldflags='-s -w')
# -buildvcs=true whatever GOFLAGS says: cuzk keys its compiled-circuit
# cache by the build's VCS revision (a build without one compiles every
# circuit each run, 18.7 s at 2^22 on the H200).
go build -buildvcs=true "${strip[@]}" -o .dev/bin/cuzk ./cmd/cuzk
sh examples/foreign-cuda/build.sh .dev/bin/foreign-cuda
sh examples/gorgonia-cu/build.sh .dev/bin/gorgonia-cu || echo "pack-device: examples/gorgonia-cu not built (see its README)"
for p in gpuprove nttbench msmbench cuptibench daemonbench synthbench; do
	go build "${strip[@]}" -o ".dev/bin/$p" "./bench/$p"
done
{
	echo '#!/usr/bin/env bash'
	echo '# Runs the GPU test binaries, each in its package folder as go test would.'
	echo 'set -u; rc=0; cd "$(dirname "$0")/.."'
} > .dev/run-tests
for p in cudaspans cudaspans/internal/ctest prover/gpu cupti examples/foreign-cuda; do
	name=$(echo "$p" | tr '/' '_')
	go test -c "${strip[@]}" -o ".dev/test/$name.test" "./$p"
	echo "(cd '$p' && \"\$OLDPWD/.dev/test/$name.test\" -test.v -test.count=1 \"\$@\") || rc=1" >> .dev/run-tests
done
echo 'exit $rc' >> .dev/run-tests
chmod +x .dev/run-tests
cp bench/device-session.sh .dev/device-session.sh
cp bench/cupti-layout.sh bench/gpu-trace-check.sh .dev/
tar -czf .devpack.tgz .dev
ls -la .devpack.tgz
