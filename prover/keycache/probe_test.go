package keycache

import (
	"context"
	"os"
	"testing"
)

// HasBuiltinKeys says true only when the circuit cache holds this build's circuit
// and the key file its hash names exists: not before the compile, not
// before the setup, not for another size or build, not once the key file
// is gone, never with ephemeral keys.
func TestHasBuiltinKeysOnlyForACachedCircuitWhoseKeyFileExists(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	comp := &compiler{n: 1 << 10}
	c, _ := New(dir, WithRevision("rev1"))
	if c.HasBuiltinKeys(ctx, "mulchain", 1<<10) {
		t.Fatal("empty cache: HasBuiltinKeys true")
	}
	cc, err := c.Compile(ctx, "mulchain", 1<<10, comp.compile)
	if err != nil {
		t.Fatal(err)
	}
	if c.HasBuiltinKeys(ctx, "mulchain", 1<<10) {
		t.Fatal("circuit cached, no key: HasBuiltinKeys true")
	}
	if _, err := c.LoadHashed(ctx, cc.CCS, cc.Hash); err != nil {
		t.Fatal(err)
	}
	if !c.HasBuiltinKeys(ctx, "mulchain", 1<<10) {
		t.Fatal("circuit and key cached: HasBuiltinKeys false")
	}
	if c.HasBuiltinKeys(ctx, "mulchain", 1<<11) || c.HasBuiltinKeys(ctx, "merkle", 1<<10) {
		t.Fatal("another size or circuit: HasBuiltinKeys true")
	}
	other, _ := New(dir, WithRevision("rev2"))
	if other.HasBuiltinKeys(ctx, "mulchain", 1<<10) {
		t.Fatal("another build's circuit file: HasBuiltinKeys true")
	}
	eph, _ := New(dir, WithRevision("rev1"), WithEphemeralKeys())
	if eph.HasBuiltinKeys(ctx, "mulchain", 1<<10) {
		t.Fatal("ephemeral keys: HasBuiltinKeys true")
	}
	// A damaged tail (the metadata's length) reads as no key.
	path := c.circuitPath("mulchain", 1<<10)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if c.HasBuiltinKeys(ctx, "mulchain", 1<<10) {
		t.Fatal("truncated circuit file: HasBuiltinKeys true")
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(c.path(cc.Hash)); err != nil {
		t.Fatal(err)
	}
	if c.HasBuiltinKeys(ctx, "mulchain", 1<<10) {
		t.Fatal("key file removed: HasBuiltinKeys true")
	}
}
