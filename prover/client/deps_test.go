package client

import (
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/internal/depstest"
)

// TestNoGnarkNoCgo proves Curio can import this package without pulling in
// gnark or cgo: no github.com/consensys package in its graph, no
// non-standard package with cgo files, and with CGO_ENABLED=0 the graph has
// no runtime/cgo at all. (With cgo enabled the standard library's net
// package links runtime/cgo for the system DNS resolver; that is Go's
// choice, present in any gRPC client, and disappears with CGO_ENABLED=0.)
func TestNoGnarkNoCgo(t *testing.T) {
	for _, p := range depstest.List(t, nil, ".") {
		if strings.HasPrefix(p.ImportPath, "github.com/consensys") {
			t.Errorf("client depends on %s", p.ImportPath)
		}
		if !p.Standard && p.CgoFiles != 0 {
			t.Errorf("client depends on %s, a cgo package", p.ImportPath)
		}
	}
	for _, p := range depstest.List(t, []string{"CGO_ENABLED=0"}, ".") {
		if p.ImportPath == "runtime/cgo" || strings.HasPrefix(p.ImportPath, "github.com/consensys") {
			t.Errorf("with CGO_ENABLED=0 the client still depends on %s", p.ImportPath)
		}
	}
}
