#!/usr/bin/env bash
# Fetches NVIDIA's runtime compiler (NVRTC 11.8, Debian bookworm's non-free
# libnvrtc11.2 and libnvrtc-builtins11.8) into a cache folder, without root
# and without touching the system's apt state, and prints the path of
# libnvrtc.so to give as CUDASPANS_NVRTC. NVRTC needs no GPU: with it,
# prover/gpu's TestKernelsCompileWithNVRTC compiles every kernel module for
# sm_90 on a build host (make test does this). Prints nothing and exits 1
# when the archive cannot be reached.
#
#   CUDASPANS_NVRTC=$(scripts/fetch-nvrtc.sh) go test ./prover/gpu -run Compile
set -euo pipefail
cache=${OTELCUZK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/otelcuzk}/nvrtc
lib=$cache/root/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2
if [ ! -e "$lib" ]; then
	[ "$(uname -m)" = x86_64 ] || { echo "fetch-nvrtc: NVRTC packages are for x86_64, this is $(uname -m)" >&2; exit 1; }
	rm -rf "$cache" && mkdir -p "$cache/lists/partial" "$cache/archives/partial"
	echo "deb http://deb.debian.org/debian bookworm main contrib non-free" > "$cache/sources.list"
	o=(-o "Dir::Etc::SourceList=$cache/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$cache/lists" -o "Dir::Cache::Archives=$cache/archives"
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root)
	apt-get "${o[@]}" -qq update >&2 || { echo "fetch-nvrtc: apt-get update failed" >&2; exit 1; }
	(cd "$cache" && apt-get "${o[@]}" -qq download libnvrtc11.2 libnvrtc-builtins11.8 >&2) ||
		{ echo "fetch-nvrtc: download failed" >&2; exit 1; }
	for f in "$cache"/*.deb; do dpkg -x "$f" "$cache/root"; done
fi
echo "$lib"
