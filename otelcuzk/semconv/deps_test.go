package semconv

import (
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/internal/depstest"
)

// The vocabulary is a leaf: beside the standard library it links only the
// OpenTelemetry API (the go.opentelemetry.io/otel and .../otel/trace
// modules, and xxhash, which the API's attribute package uses); no SDK, no
// exporter, no gRPC and no other package of this module.
func TestPackageGraphIsTheOTelAPIOnly(t *testing.T) {
	allowed := map[string]bool{
		"go.opentelemetry.io/otel":       true,
		"go.opentelemetry.io/otel/trace": true,
		"github.com/cespare/xxhash/v2":   true,
	}
	for _, p := range depstest.List(t, nil, ".") {
		switch {
		case p.Standard:
		case p.ImportPath == "github.com/otelcuzk/otelcuzk/otelcuzk/semconv":
		case strings.HasPrefix(p.ImportPath, "go.opentelemetry.io/otel/sdk"):
			t.Errorf("links the OTel SDK: %s", p.ImportPath)
		case !allowed[p.Module]:
			t.Errorf("links %s (module %s), not the OTel API", p.ImportPath, p.Module)
		}
	}
}

// TestSpanNamingPackagesLinkNoExporterAndNoGRPC: the packages that name
// spans with this vocabulary (the buffers, the CUDA bridge, CUPTI, the
// prover, its engine, caches, circuits, journal and priority, the CUDA
// backend with its MSM, NTT and fixed-base kernels, the key setup) link no OTLP exporter, no OTel SDK and no gRPC: those come
// in only with otelcuzk's Setup, the server and the client.
func TestSpanNamingPackagesLinkNoExporterAndNoGRPC(t *testing.T) {
	pkgs := []string{
		"../../buffer", "../../cudaspans", "../../cupti/...",
		"../../prover", "../../prover/groth16", "../../prover/backend", "../../prover/cpu", "../../prover/engine", "../../prover/journal", "../../prover/priority",
		"../../prover/keycache", "../../prover/circuits", "../../prover/gpu", "../../prover/gpu/msm", "../../prover/gpu/ntt",
		"../../prover/gpu/fixedbase", "../../prover/gpu/kernels",
		"../../prover/setup",
	}
	seen := map[string]bool{}
	for _, p := range depstest.List(t, nil, pkgs...) {
		seen[p.ImportPath] = true
		switch {
		case strings.HasPrefix(p.ImportPath, "google.golang.org/grpc"):
			t.Errorf("links gRPC: %s", p.ImportPath)
		case strings.HasPrefix(p.ImportPath, "go.opentelemetry.io/otel/exporters/"),
			strings.Contains(p.ImportPath, "/otlp"):
			t.Errorf("links an OTLP exporter: %s", p.ImportPath)
		case strings.HasPrefix(p.ImportPath, "go.opentelemetry.io/otel/sdk"):
			t.Errorf("links the OTel SDK: %s", p.ImportPath)
		case p.ImportPath == "github.com/otelcuzk/otelcuzk/otelcuzk",
			p.ImportPath == "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1":
			t.Errorf("links %s (gRPC and the exporters)", p.ImportPath)
		}
	}
	for _, want := range []string{"buffer", "cudaspans", "cupti", "prover", "prover/engine", "otelcuzk/semconv"} {
		if !seen["github.com/otelcuzk/otelcuzk/"+want] {
			t.Errorf("go list did not list %s: the test reads the wrong graph", want)
		}
	}
}
