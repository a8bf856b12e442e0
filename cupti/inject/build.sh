#!/bin/sh
# Builds libcuzkinject.so, the CUDA injection library `cuzk gpu-trace`
# embeds (go:embed in embed.go), from csrc/inject.c and ../cz_core.c, and
# records the SHA-256 of those sources in libcuzkinject.sources, which
# TestEmbeddedLibraryIsCurrent checks. Run by `go generate ./cupti/inject`.
set -eu
cd "$(dirname "$0")"
${CC:-cc} -shared -fPIC -O2 -Wall -Wextra -fvisibility=hidden -o libcuzkinject.so.tmp \
	-Wl,--version-script=csrc/exports.map csrc/inject.c ../cz_core.c -ldl -lpthread
strip --strip-unneeded libcuzkinject.so.tmp 2>/dev/null || true
mv libcuzkinject.so.tmp libcuzkinject.so
cat csrc/inject.c ../cz_core.c ../cz_core.h ../cuzk_cupti.h csrc/exports.map | sha256sum | cut -d' ' -f1 > libcuzkinject.sources
