package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/engine"
)

// cube is a user's own circuit: x³ + x + 5 = y.
type cube struct {
	X frontend.Variable
	Y frontend.Variable `gnark:",public"`
}

func (c *cube) Define(api frontend.API) error {
	api.AssertIsEqual(c.Y, api.Add(api.Mul(c.X, c.X, c.X), c.X, 5))
	return nil
}

// TestDefaultServerProvesACircuitRegisteredFromFiles: a server built with
// New's defaults (no WithKnownCircuit) knows a circuit registered from files
// through the one registry, as soon as it is registered, and a real CPU
// Pipeline behind it proves and verifies with the caller's witness.
func TestDefaultServerProvesACircuitRegisteredFromFiles(t *testing.T) {
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, &cube{})
	if err != nil {
		t.Fatal(err)
	}
	pk, vk, err := groth16.Setup(ccs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := prover.CircuitFile{Name: fmt.Sprintf("cube-%d", time.Now().UnixNano()),
		CS: filepath.Join(dir, "cube.r1cs"), PK: filepath.Join(dir, "cube.pk"), VK: filepath.Join(dir, "cube.vk")}
	write := func(path string, wt func(*os.File) error) {
		fh, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if err := wt(fh); err != nil {
			t.Fatal(err)
		}
	}
	write(f.CS, func(fh *os.File) error { _, err := ccs.WriteTo(fh); return err })
	write(f.PK, func(fh *os.File) error { _, err := pk.WriteTo(fh); return err })
	write(f.VK, func(fh *os.File) error { _, err := vk.WriteTo(fh); return err })

	pipe, err := prover.NewPipeline(context.Background(), "cpu", prover.WithKeyCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pipe.Close(context.Background()) })
	eng, err := engine.New([]engine.Worker{{Name: "cpu:0", Runner: pipe}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(eng)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(serve(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	w, err := frontend.NewWitness(&cube{X: 3, Y: 35}, ecc.BLS12_381.ScalarField())
	if err != nil {
		t.Fatal(err)
	}
	wb, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := client.Request{RequestID: "before", Circuit: f.Name, Witness: wb, Verify: true}
	if _, err := c.Prove(ctx, req); status.Code(err) != codes.NotFound {
		t.Fatalf("before registration: %v, want NotFound", err)
	}
	if err := f.Register(); err != nil {
		t.Fatal(err)
	}
	req.RequestID = "after"
	res, err := c.Prove(ctx, req)
	if err != nil {
		t.Fatalf("after registration: %v", err)
	}
	if res.Status != client.Succeeded || !res.Verified || len(res.Proof) == 0 {
		t.Errorf("result %+v, want a verified proof", res)
	}
	if _, err := c.Prove(ctx, client.Request{RequestID: "unknown", Circuit: "no-such-circuit"}); status.Code(err) != codes.NotFound ||
		!strings.Contains(err.Error(), f.Name) {
		t.Errorf("unknown circuit: %v, want NotFound listing %s among the known", err, f.Name)
	}
}
