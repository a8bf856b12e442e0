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
libdir=$cache/root/usr/lib/x86_64-linux-gnu
lib=$libdir/libnvrtc.so.11.2
# Both libraries, complete: the folder is only ever renamed into place whole.
if [ ! -e "$lib" ] || [ ! -e "$libdir/libnvrtc-builtins.so.11.8" ]; then
	[ "$(uname -m)" = x86_64 ] || { echo "fetch-nvrtc: NVRTC packages are for x86_64, this is $(uname -m)" >&2; exit 1; }
	mkdir -p "$(dirname "$cache")"
	tmp=$(mktemp -d "$cache.tmp.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp/lists/partial" "$tmp/archives/partial"
	echo "deb http://deb.debian.org/debian bookworm main contrib non-free" > "$tmp/sources.list"
	o=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache::Archives=$tmp/archives"
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root)
	apt-get "${o[@]}" -qq update >&2 || { echo "fetch-nvrtc: apt-get update failed" >&2; exit 1; }
	(cd "$tmp" && apt-get "${o[@]}" -qq download libnvrtc11.2 libnvrtc-builtins11.8 >&2) ||
		{ echo "fetch-nvrtc: download failed" >&2; exit 1; }
	for f in "$tmp"/*.deb; do dpkg -x "$f" "$tmp/root"; done
	rm -rf "$tmp"/*.deb "$tmp/lists" "$tmp/archives"
	# Another run may have finished first: keep whichever is in place.
	rm -rf "$cache.old" && { [ ! -e "$cache" ] || mv "$cache" "$cache.old"; }
	mv "$tmp" "$cache" 2>/dev/null || true
	rm -rf "$cache.old"
	[ -e "$lib" ] || { echo "fetch-nvrtc: $lib missing after extraction" >&2; exit 1; }
fi
echo "$lib"
