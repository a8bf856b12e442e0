#!/bin/sh
# Builds the gorgonia-cu example: gorgonia.org/cu v0.9.6 includes cuda.h
# and links -lcuda at build time, and does not compile against CUDA 13's
# headers; Debian bookworm's non-free nvidia-cuda-dev has CUDA 11.8's
# headers and a link stub of libcuda. This fetches that package once (about
# 770 MB) with apt-get into a cache of its own (no change to the system's
# apt sources), extracts the headers and the stub, and builds. The binary
# loads the real libcuda.so.1 of the GPU host at run time.
#
#   examples/gorgonia-cu/build.sh [OUTPUT]      (default ./gorgonia-cu)
#   CUDA_118=DIR  use headers (DIR/include) and the stub (DIR/stubs) from DIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/gorgonia-cu}
case $out in /*) ;; *) out=$PWD/$out ;; esac
cache=${CUDA_118:-${XDG_CACHE_HOME:-$HOME/.cache}/otelcuzk/cuda-11.8}
if [ ! -f "$cache/include/cuda.h" ] || [ ! -f "$cache/stubs/libcuda.so" ]; then
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	mkdir -p "$work/lists/partial" "$work/deb" "$cache/include" "$cache/stubs"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm non-free" > "$work/sources.list"
	apt="-o Dir::Etc::sourcelist=$work/sources.list -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$work/lists"
	apt-get $apt update > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
	(cd "$work/deb" && apt-get $apt download nvidia-cuda-dev > "$work/log" 2>&1) || { cat "$work/log"; exit 1; }
	dpkg-deb --fsys-tarfile "$work"/deb/nvidia-cuda-dev_*.deb | tar -x -C "$work" --wildcards './usr/include/*.h' './usr/include/crt/*' './usr/lib/x86_64-linux-gnu/stubs/libcuda.so'
	cp -r "$work"/usr/include/. "$cache/include/"
	cp "$work/usr/lib/x86_64-linux-gnu/stubs/libcuda.so" "$cache/stubs/"
fi
cd "$here"
CGO_ENABLED=1 CGO_CFLAGS="-I$cache/include" CGO_LDFLAGS="-L$cache/stubs" go build -trimpath -o "$out" .
echo "built $out"
