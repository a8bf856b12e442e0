#!/usr/bin/env bash
# bench/trace-memory.sh: max RSS and time of `cuzk trace` on large inputs
# (issue 11: memory bounded whatever the input). Builds cuzk, proves one
# small circuit for a real trace line, writes in $DIR (default a temporary
# folder) a real file of N_LINES copies of it under distinct trace ids, a
# sparse file of SPARSE bytes (zeros: no newline) and reads each with
# /usr/bin/time -v, then /dev/zero for 30 s; then `cuzk trace diff` of the
# real file against a copy (its last trace, --last 1000, two traces of one
# file by --trace-id, the sparse file as A: refused, once read). Everything it writes is
# deleted at the end (the disk is shared).
#
#   N_LINES=80000 SPARSE=10G bench/trace-memory.sh     # ~1 GB real + 10 GB sparse
set -euo pipefail
N_LINES=${N_LINES:-16000}
SPARSE=${SPARSE:-10G}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${DIR:-$(mktemp -d)}
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/cuzk" "$root/cmd/cuzk"
"$dir/cuzk" prove --circuit mulchain --constraints 1024 --backend cpu --cache-dir "$dir/keys" \
	--trace-file "$dir/one.jsonl" --proof "$dir/p.bin" >/dev/null
id=$(grep -o '"traceId":"[0-9a-f]*"' "$dir/one.jsonl" | head -1 | cut -d'"' -f4)
line=$(head -1 "$dir/one.jsonl")
awk -v n="$N_LINES" -v id="$id" -v line="$line" 'BEGIN { for (i = 1; i <= n; i++) { l = line; gsub(id, sprintf("%032x", i), l); print l } }' >"$dir/real.jsonl"
truncate -s "$SPARSE" "$dir/sparse.jsonl"
measure() { # label, command...
	local label=$1; shift
	/usr/bin/time -v "$@" >/dev/null 2>"$dir/time.txt" || true
	printf '%-40s max RSS %6d MB  wall %s  user %ss\n' "$label" \
		$(($(awk '/Maximum resident/ { print $NF }' "$dir/time.txt") / 1024)) \
		"$(awk '/Elapsed/ { print $NF }' "$dir/time.txt")" "$(awk '/User time/ { print $NF }' "$dir/time.txt")"
}
echo "$(nproc) cores, $(uname -r), $(go version | cut -d' ' -f3)"
measure "real: $N_LINES traces, $(du -h --apparent-size "$dir/real.jsonl" | cut -f1)" "$dir/cuzk" trace "$dir/real.jsonl"
measure "real, --trace-id of the first" "$dir/cuzk" trace "$dir/real.jsonl" --trace-id 1
measure "sparse $SPARSE (zeros, no newline)" "$dir/cuzk" trace "$dir/sparse.jsonl"
measure "/dev/zero for 30 s" timeout -s INT 30 "$dir/cuzk" trace /dev/zero
cp "$dir/real.jsonl" "$dir/real2.jsonl"
measure "diff real real2 (last trace each)" "$dir/cuzk" trace diff "$dir/real.jsonl" "$dir/real2.jsonl"
measure "diff real real2 --last 1000" "$dir/cuzk" trace diff "$dir/real.jsonl" "$dir/real2.jsonl" --last 1000
measure "diff real real --trace-id 1 --trace-id 2" "$dir/cuzk" trace diff "$dir/real.jsonl" "$dir/real.jsonl" --trace-id 1 --trace-id 2
measure "diff sparse real (refused: A unreadable)" "$dir/cuzk" trace diff "$dir/sparse.jsonl" "$dir/real.jsonl"
