#!/usr/bin/env bash
# e2e/run.sh: the end-to-end suite against a real Jaeger.
#
#   e2e/run.sh            (from anywhere; .ci/run calls it)
#
# 1. builds cuzk and examples/curio-task into a temporary directory;
# 2. builds Jaeger v2 (Go module github.com/jaegertracing/jaeger v1.76.0,
#    from e2e/tools/jaeger), Prometheus and promtool (Go module
#    github.com/prometheus/prometheus v0.307.3, Prometheus v3.7.3, from
#    e2e/tools/prometheus, stripped) and a Collector (builder v0.161.0,
#    deploy/otelcol-builder.yaml), or reuses them from the cache directory
#    ($OTELCUZK_CACHE, default ~/.cache/otelcuzk), keyed by version and by
#    the builder manifest's hash;
# 3. validates deploy/otel-collector.yaml and deploy/otelcol-gateway.yaml
#    with that Collector;
# 4. runs `go test -count=1 -v ./...` in e2e/.
# Exits non-zero when any step fails. Heavy builds run niced with -p 2.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
cache=${OTELCUZK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/otelcuzk}
mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

t0=$SECONDS
step() { echo "== e2e/run.sh +$((SECONDS - t0))s: $*"; }

step "build cuzk and examples/curio-task"
(cd "$root" && go build -o "$work/cuzk" ./cmd/cuzk)
(cd "$root" && go build -o "$work/curio-task" ./examples/curio-task)

prometheus_version=v0.307.3
prometheus=$cache/prometheus-$prometheus_version
build_prometheus() {
	local s=$SECONDS
	# A module of its own: `go install` refuses Prometheus's go.mod (it has
	# exclude directives), a dependency's go.mod builds.
	rm -rf "$prometheus.tmp.$$"
	(cd "$here/tools/prometheus" &&
		nice -n 10 go build -p 2 -trimpath -ldflags='-s -w' -o "$prometheus.tmp.$$/" \
			github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool)
	rm -rf "$prometheus" && mv "$prometheus.tmp.$$" "$prometheus"
	step "Prometheus built in $((SECONDS - s))s"
}
prometheus_pid=
if [[ -x $prometheus/prometheus && -x $prometheus/promtool ]]; then
	step "reuse $prometheus"
elif (($(nproc) >= 4)); then
	# Enough cores for two -p 2 builds: Prometheus beside Jaeger and the
	# Collector.
	step "build Prometheus $prometheus_version in the background (cold cache: several minutes)"
	build_prometheus &
	prometheus_pid=$!
else
	step "build Prometheus $prometheus_version (cold cache: several minutes)"
	build_prometheus
fi

jaeger_version=v1.76.0
jaeger=$cache/jaeger-$jaeger_version
if [[ -x $jaeger ]]; then
	step "reuse $jaeger"
else
	step "build Jaeger $jaeger_version (cold cache: several minutes)"
	s=$SECONDS
	(cd "$here/tools/jaeger" &&
		nice -n 10 go build -p 2 -o "$jaeger.tmp.$$" github.com/jaegertracing/jaeger/cmd/jaeger)
	mv -f "$jaeger.tmp.$$" "$jaeger"
	step "Jaeger built in $((SECONDS - s))s"
fi

collector_version=v0.161.0
manifest=$root/deploy/otelcol-builder.yaml
# Keyed by the manifest without its comments: a comment edit builds nothing.
manifest_hash=$(grep -v '^[[:space:]]*#' "$manifest" | sha256sum | cut -c1-12)
otelcol=$cache/otelcol-custom-$collector_version-$manifest_hash
if [[ -x $otelcol ]]; then
	step "reuse $otelcol"
else
	builder=$cache/builder-$collector_version/builder
	if [[ ! -x $builder ]]; then
		step "install the Collector builder $collector_version"
		GOBIN=$(dirname "$builder") go install go.opentelemetry.io/collector/cmd/builder@$collector_version
	fi
	step "build the Collector from $manifest (cold cache: several minutes)"
	s=$SECONDS
	GOFLAGS="-p=2" nice -n 10 "$builder" --config "$manifest" --output-path "$work/otelcol"
	mv -f "$work/otelcol/otelcol-custom" "$otelcol"
	step "Collector built in $((SECONDS - s))s"
fi

if [[ -n $prometheus_pid ]]; then
	wait "$prometheus_pid" # its exit status stops this script (set -e) when the build failed
fi

for cfg in otel-collector.yaml otelcol-gateway.yaml; do
	step "validate deploy/$cfg"
	"$otelcol" validate --config "$root/deploy/$cfg"
done

# The HTML waterfall is checked in headless Chromium, Debian's package.
if ! command -v chromium >/dev/null 2>&1 && [[ -z ${OTELCUZK_CHROMIUM:-} ]]; then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
		step "install chromium (apt-get)"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
	else
		step "chromium missing: the HTML test skips outside CI (apt-get install chromium)"
	fi
fi

step "go test in e2e/"
export CUZK_BIN=$work/cuzk
export OTELCUZK_CURIO_TASK_BIN=$work/curio-task
export OTELCUZK_JAEGER_BIN=$jaeger
export OTELCUZK_OTELCOL_BIN=$otelcol
export OTELCUZK_PROMETHEUS_BIN=$prometheus/prometheus
export OTELCUZK_PROMTOOL_BIN=$prometheus/promtool
cd "$here"
status=0
# -mod=mod: the root module may gain a dependency before e2e/go.sum lists it.
go test -mod=mod -count=1 -v -timeout 20m ./... || status=$?
step "done (exit $status)"
exit $status
