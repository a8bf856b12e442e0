#!/usr/bin/env bash
# Prints, on a GPU host, the CUPTI record layouts package cupti reads
# (cupti/records.go), from the host's own CUPTI headers: the struct bodies
# of the newest CUpti_ActivityKernel, Memcpy, Memset, Synchronization and
# ExternalCorrelation records, and, where a C compiler is installed, their
# field offsets by offsetof. Compare with records.go's tables; the device
# test TestRecordLayoutOnDeviceGPU checks the same offsets against the
# library's records.
#
#   CUPTI_INCLUDE=DIR   headers elsewhere (tried first)
set -uo pipefail
inc=""
for d in ${CUPTI_INCLUDE:-} /usr/local/cuda/extras/CUPTI/include /usr/local/cuda/include /usr/include; do
	[ -f "$d/cupti_activity.h" ] && { inc=$d; break; }
done
[ -n "$inc" ] || { echo "cupti-layout: no cupti_activity.h under /usr/local/cuda or /usr/include"; exit 1; }
echo "cupti-layout: headers in $inc"
grep -m1 -n "define CUPTI_API_VERSION" "$inc/cupti_version.h" 2>/dev/null
echo "compilers: $(command -v cc gcc clang 2>/dev/null | tr '\n' ' ')"
newest() { # the highest numbered typedef of a record family
	grep -o "} $1[0-9]*;" "$inc/cupti_activity.h" | tr -d '};' | sort -V | tail -1 | tr -d ' '
}
K=$(newest CUpti_ActivityKernel) M=$(newest CUpti_ActivityMemcpy) S=$(newest CUpti_ActivityMemset)
Y=$(newest CUpti_ActivitySynchronization) E=$(newest CUpti_ActivityExternalCorrelation)
echo "newest records: $K $M $S $Y $E"
cc=$(command -v cc || command -v gcc || command -v clang || true)
if [ -z "$cc" ]; then
	echo "no C compiler: struct bodies follow (offsets by hand; the device test checks them)"
	for T in $K $M $S $Y $E; do
		awk -v t="} $T;" '/typedef struct PACKED_ALIGNMENT/ {buf=""} {buf=buf"\n"$0} index($0,t) {print buf; exit}' "$inc/cupti_activity.h" | grep -v '^ *\*\|/\*\*\|^$'
	done
	exit 0
fi
tmp=$(mktemp -d)
cat > "$tmp/off.c" <<C
#include <stdio.h>
#include <stddef.h>
#include <cupti_activity.h>
#define O(T,f) printf("%-36s %-22s %4zu\n", #T, #f, offsetof(T,f))
int main(void) {
	printf("%-36s %-22s %4zu\n", "$K", "sizeof", sizeof($K));
	O($K,start); O($K,end); O($K,deviceId); O($K,contextId); O($K,streamId); O($K,gridX); O($K,blockX);
	O($K,staticSharedMemory); O($K,dynamicSharedMemory); O($K,registersPerThread); O($K,correlationId); O($K,name);
	printf("%-36s %-22s %4zu\n", "$M", "sizeof", sizeof($M));
	O($M,copyKind); O($M,bytes); O($M,start); O($M,end); O($M,deviceId); O($M,contextId); O($M,streamId); O($M,correlationId);
	printf("%-36s %-22s %4zu\n", "$S", "sizeof", sizeof($S));
	O($S,value); O($S,bytes); O($S,start); O($S,end); O($S,deviceId); O($S,contextId); O($S,streamId); O($S,correlationId);
	printf("%-36s %-22s %4zu\n", "$Y", "sizeof", sizeof($Y));
	O($Y,type); O($Y,start); O($Y,end); O($Y,correlationId); O($Y,contextId); O($Y,streamId);
	O($E,externalKind); O($E,externalId); O($E,correlationId);
	return 0;
}
C
if "$cc" -I"$inc" -I/usr/local/cuda/include -I"$inc/.." "$tmp/off.c" -o "$tmp/off" 2>"$tmp/err"; then
	"$tmp/off"
else
	echo "compile failed:"; head -5 "$tmp/err"
fi
rm -rf "$tmp"
