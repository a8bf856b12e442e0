package keycache

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"
)

// WithEphemeralKeys: every load runs the setup (WithSetup's), nothing is
// read from or written to the directory, not even over a cached file.
func TestEphemeralKeysAreMadeEachLoadAndNeverWritten(t *testing.T) {
	dir := t.TempDir()
	ccs := compile(t, 1<<8)
	// A cached key the ephemeral cache must not read.
	if _, err := mustNew(t, dir).Load(context.Background(), ccs); err != nil {
		t.Fatal(err)
	}
	before := dirNames(t, dir)
	setups := 0
	c := mustNew(t, dir, WithEphemeralKeys(), WithSetup(func(ctx context.Context, ccs constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
		setups++
		return groth16.Setup(ccs)
	}))
	for range 2 {
		k, err := c.Load(context.Background(), ccs)
		if err != nil {
			t.Fatal(err)
		}
		if k.CacheHit {
			t.Fatal("an ephemeral load read the cached key")
		}
	}
	if setups != 2 {
		t.Fatalf("%d setups for 2 ephemeral loads, want 2", setups)
	}
	if after := dirNames(t, dir); len(after) != len(before) {
		t.Fatalf("ephemeral loads changed the directory: %v, then %v", before, after)
	}
	// A failing setup is the load's error, and still writes nothing.
	boom := errors.New("device lost")
	c = mustNew(t, t.TempDir(), WithEphemeralKeys(), WithSetup(func(context.Context, constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
		return nil, nil, boom
	}))
	if _, err := c.Load(context.Background(), ccs); !errors.Is(err, boom) {
		t.Fatalf("Load = %v, want the setup's error", err)
	}
	if n := dirNames(t, c.Dir()); len(n) != 0 {
		t.Fatalf("a failed ephemeral setup left %v", n)
	}
}

func mustNew(t *testing.T, dir string, opts ...Option) *Cache {
	t.Helper()
	c, err := New(dir, append([]Option{WithProgress(nil, false)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return n
}
