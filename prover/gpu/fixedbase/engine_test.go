package fixedbase

import (
	"context"
	"errors"
	"strings"
	"testing"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/prover/gpu/internal/fakedevice"
)

// fakeEngine is an Engine on a fake device of capacity bytes, its kernels
// looked up in a module the fake loads (launches do nothing).
func fakeEngine(t *testing.T, capacity int) *Engine {
	t.Helper()
	ctx := context.Background()
	c, err := cudaspans.Open(0, cudaspans.WithDriver(fakedevice.New(capacity)))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := newConfig([]Option{WithWindowBits(4)})
	e := &Engine{c: c, tracer: cfg.tp.Tracer("test"), window: cfg.window, group: cfg.group, chunk: cfg.chunk,
		g1: &group{name: "G1", affineBytes: g1AffineBytes, xyzzBytes: g1XYZZBytes},
		g2: &group{name: "G2", affineBytes: g2AffineBytes, xyzzBytes: g2XYZZBytes}}
	for _, g := range []*group{e.g1, e.g2} {
		mod, err := c.LoadModuleData(ctx, "fixedbase", []byte("fake image"))
		if err != nil {
			t.Fatal(err)
		}
		g.mod = mod
		if g.mul, err = mod.Function("fb_scalar_mul"); err != nil {
			t.Fatal(err)
		}
		if g.affine, err = mod.Function("fb_batch_affine"); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.upload(ctx, G1Table(4), G2Table(4)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// Out of device memory, a multiplication says how many points, the
// memory a pass of the smallest size needs and what is free, and wraps
// cudaspans.ErrOutOfMemory; a device that has the memory takes the same
// call in passes.
func TestOutOfDeviceMemoryNamesThePointsAndTheMemory(t *testing.T) {
	e := fakeEngine(t, 1<<20)
	n := 1 << 15
	err := e.MulG1(context.Background(), make([]fr.Element, n), make([]curve.G1Affine, n))
	if !errors.Is(err, cudaspans.ErrOutOfMemory) || !strings.Contains(err.Error(), "32768 G1 points need 5.0 MiB of device memory in passes of 16384") ||
		!strings.Contains(err.Error(), "free") {
		t.Fatalf("MulG1 of 2^15 on a 1 MiB device: %v", err)
	}
	e = fakeEngine(t, 64<<20)
	if err := e.MulG2(context.Background(), make([]fr.Element, n), make([]curve.G2Affine, n)); err != nil {
		t.Fatalf("MulG2 of 2^15 on a 64 MiB device: %v", err)
	}
}

// Outputs of another length than the scalars are refused naming the
// group and both lengths; no scalars is no work and no error.
func TestMismatchedLengthsAreRefusedAndNoScalarsIsNoWork(t *testing.T) {
	e := fakeEngine(t, 1<<20)
	ctx := context.Background()
	if err := e.MulG1(ctx, make([]fr.Element, 3), make([]curve.G1Affine, 2)); err == nil || err.Error() != "fixedbase: 2 G1 outputs for 3 scalars" {
		t.Errorf("MulG1 of 3 scalars into 2 points: %v", err)
	}
	if err := e.MulG2(ctx, make([]fr.Element, 1), make([]curve.G2Affine, 4)); err == nil || err.Error() != "fixedbase: 4 G2 outputs for 1 scalars" {
		t.Errorf("MulG2 of 1 scalar into 4 points: %v", err)
	}
	if err := e.MulG1(ctx, nil, nil); err != nil {
		t.Errorf("MulG1 of nothing: %v", err)
	}
	if err := e.MulG2(ctx, nil, nil); err != nil {
		t.Errorf("MulG2 of nothing: %v", err)
	}
}
