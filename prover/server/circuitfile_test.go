package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/engine"
)

// prover.Prover, the manager cuzk serve gives the server, describes its
// keys (GetStatus and PreloadKeys then name them by their hash).
var _ KeyDescriber = (*prover.Prover)(nil)

// TestDefaultServerProvesACircuitRegisteredFromFiles: a server built with
// New's defaults (no WithKnownCircuit) knows a circuit registered from files
// through the one registry, as soon as it is registered, and a real CPU
// Prover behind it proves and verifies with the caller's witness.
func TestDefaultServerProvesACircuitRegisteredFromFiles(t *testing.T) {
	ccs, pk, vk := circuitstest.SetupCircuit(t, &circuitstest.Square{})
	files := circuitstest.WriteFiles(t, t.TempDir(), "square", ccs, pk, vk)
	f := prover.CircuitFile{Name: fmt.Sprintf("square-%d", time.Now().UnixNano()), CS: files.CS, PK: files.PK, VK: files.VK}

	pipe, err := prover.New(context.Background(), "cpu", prover.WithKeyCacheDir(t.TempDir()))
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

	wb, err := circuitstest.NewWitness(t, &circuitstest.Square{X: 3, Y: 9}).MarshalBinary()
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
