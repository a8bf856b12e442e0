#!/usr/bin/env bash
# scripts/fuzz.sh: run every Go native fuzz test (func FuzzXxx(f *testing.F))
# of this repository's modules (the root module and e2e/, or any other
# go.mod below the root), one at a time, each for $FUZZTIME (default 10s;
# `make fuzz` gives 5m). New fuzz tests are found by themselves: the
# functions are listed from the *_test.go files of each module, so nothing
# here needs editing when a package gains one.
#
#   FUZZTIME=30s scripts/fuzz.sh           every fuzz test, 30 s each
#   FUZZMINIMIZETIME=30s ...               longer minimization of new inputs (default 2s)
#   scripts/fuzz.sh FuzzReadOTLPJSONLines  only the fuzz tests whose name matches
#
# A failing input is written by `go test` under the package's
# testdata/fuzz/<FuzzName>/; commit it, and it runs as a regression case in
# every plain `go test` from then on. Exit status: 0 when every fuzz test
# passed, 1 otherwise (all are run; the failures are listed at the end).
set -uo pipefail

fuzztime=${FUZZTIME:-10s}
# go test minimizes each new interesting input for up to 60 s by default,
# during which the fuzzer runs nothing new (seen: 6,500 executions in 90 s
# against 100,000 in 20 s with 2 s); crashers are minimized as long.
minimize=${FUZZMINIMIZETIME:-2s}
filter=${1:-.}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Module roots, deepest first, so a file is given to its own module.
mapfile -t modules < <(find . -name go.mod -not -path '*/testdata/*' -not -path './shared/*' -not -path '*/node_modules/*' -printf '%h\n' | awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-)

declare -a targets # "moduledir|./pkgdir|FuzzName"
while IFS= read -r file; do
	dir=$(dirname "$file")
	mod=.
	for m in "${modules[@]}"; do
		if [[ $dir == "$m" || $dir == "$m"/* ]]; then mod=$m; break; fi
	done
	rel=${dir#"$mod"}; rel=./${rel#/}
	while IFS= read -r name; do
		[[ $name =~ $filter ]] && targets+=("$mod|$rel|$name")
	done < <(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\([a-zA-Z_][a-zA-Z0-9_]* \*testing\.F\).*/\1/p' "$file")
done < <(grep -rlE --include='*_test.go' --exclude-dir=.git --exclude-dir=shared --exclude-dir=.dev --exclude-dir=node_modules --exclude-dir=testdata '^func Fuzz[A-Za-z0-9_]*\(' . | sort)

if [[ ${#targets[@]} -eq 0 ]]; then
	echo "fuzz.sh: no fuzz tests match $filter" >&2
	exit 1
fi
echo "fuzz.sh: ${#targets[@]} fuzz tests, $fuzztime each"

# corpus_count MODULE PKG NAME: how many inputs the package's corpus holds.
corpus_count() {
	local d="$1/${2#./}/testdata/fuzz/$3"
	if [[ -d $d ]]; then find "$d" -type f | wc -l; else echo 0; fi
}

# run_one MODULE PKG NAME: one fuzz test. Go's fuzz coordinator before 1.27
# can report its own -fuzztime deadline as a failure ("context deadline
# exceeded", no failing input written: golang/go#75804), more often on a
# loaded machine. Such a run is tried once more; a failure that writes an
# input, or any other failure, fails at once.
run_one() {
	local mod=$1 pkg=$2 name=$3 before out rc
	for attempt in 1 2; do
		before=$(corpus_count "$mod" "$pkg" "$name")
		out=$(mktemp)
		(cd "$mod" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg") 2>&1 | tee "$out"
		rc=${PIPESTATUS[0]}
		if [[ $rc -eq 0 ]]; then rm -f "$out"; return 0; fi
		if [[ $(corpus_count "$mod" "$pkg" "$name") -eq $before ]] &&
			grep -q '^    context deadline exceeded$' "$out" &&
			! grep -qE '^\s+(Failing input written|panic:|.*_test\.go:[0-9]+:)' "$out"; then
			rm -f "$out"
			echo "fuzz.sh: $name stopped on Go's fuzztime deadline race (golang/go#75804), no failing input; attempt $attempt of 2"
			continue
		fi
		rm -f "$out"
		return 1
	done
	return 1
}
failed=()
for t in "${targets[@]}"; do
	IFS='|' read -r mod pkg name <<<"$t"
	echo "== $name ($mod: $pkg)"
	if ! run_one "$mod" "$pkg" "$name"; then
		failed+=("$name ($mod: $pkg)")
	fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
	echo "fuzz.sh: ${#failed[@]} of ${#targets[@]} fuzz tests failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz.sh: all ${#targets[@]} fuzz tests passed"
