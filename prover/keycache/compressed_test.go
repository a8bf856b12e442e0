package keycache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
)

func dump(t *testing.T, k *Keys) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := k.VK.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if err := k.PK.(*groth16_bls12381.ProvingKey).WriteDump(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Keys stored with compressed points come back the same, from a file about
// half the raw one's size.
func TestCompressedKeysRoundTrip(t *testing.T) {
	ccs := compile(t, 1<<10)
	raw, zdir := t.TempDir(), t.TempDir()
	kr, err := mustNew(t, raw).Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, zdir, WithCompressedKeys())
	k1, k2 := loadTwice(t, c, ccs)
	if !bytes.Equal(dump(t, k1), dump(t, k2)) {
		t.Fatal("the keys read back from the compressed file differ from those stored")
	}
	rs, err := os.Stat(filepath.Join(raw, kr.Hash+".keys"))
	if err != nil {
		t.Fatal(err)
	}
	zs, err := os.Stat(filepath.Join(zdir, k1.Hash+".keyz"))
	if err != nil {
		t.Fatal(err)
	}
	if r := float64(zs.Size()) / float64(rs.Size()); r > 0.6 || r < 0.4 {
		t.Fatalf("compressed file %d bytes against raw %d (%.2f), want about half", zs.Size(), rs.Size(), r)
	}
}

// A compressed file whose checksums are right but one of whose points is
// not a point of the group is refused as corrupt, naming the file, and not
// replaced by a new setup.
func TestACompressedKeyWhosePointsDoNotDecodeIsRefusedAsCorrupt(t *testing.T) {
	ccs := compile(t, 1<<10)
	dir := t.TempDir()
	c := mustNew(t, dir, WithCompressedKeys())
	k, err := c.Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, k.Hash+".keyz")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := checkedPayload(data)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), payload...)
	bad[len(bad)/2] ^= 0x01 // inside a point of A, B or Z; not a flag bit
	if err := writeChecked(path, func(w io.Writer) error { _, err := w.Write(bad); return err }); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.readKeys(context.Background(), path); err == nil || !strings.Contains(err.Error(), "read proving key") {
		t.Fatalf("readKeys of a file with a bad point = %v, want a decode error of the proving key", err)
	} else if ce := (*corruptError)(nil); !errors.As(err, &ce) {
		t.Fatalf("readKeys = %v, want a corrupt error", err)
	}
	requireRefused(t, dir, ccs, path, "compressed, bad point", "read proving key", WithCompressedKeys())
}

// A compressed cache whose directory holds the raw key of the circuit
// reads it (a cache hit, no setup, no .keyz written), and HasKeys says it
// has the key; a damaged raw key is refused as corrupt, as the cache's own
// kind is.
func TestACompressedCacheReadsAnExistingRawKeyOfTheSameCircuit(t *testing.T) {
	ccs := compile(t, 1<<10)
	dir := t.TempDir()
	kr, err := mustNew(t, dir).Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	setups := 0
	count := WithSetup(func(context.Context, constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
		setups++
		return nil, nil, errors.New("no setup expected")
	})
	kz, err := mustNew(t, dir, WithCompressedKeys(), count).Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	if !kz.CacheHit || setups != 0 || !bytes.Equal(dump(t, kz), dump(t, kr)) {
		t.Fatalf("compressed cache beside a raw key: hit %v, %d setups; want the raw key read", kz.CacheHit, setups)
	}
	if _, err := os.Stat(filepath.Join(dir, kr.Hash+".keyz")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a .keyz was written beside the raw key: %v", err)
	}
	if !mustNew(t, dir, WithCompressedKeys()).HasKeys(kr.Hash) {
		t.Fatal("compressed cache beside a raw key: HasKeys false")
	}
	// A damaged raw key: refused as corrupt, named, left as it is, no setup
	// and no .keyz (a new key would make a new verifying key).
	raw := filepath.Join(dir, kr.Hash+".keys")
	if err := os.WriteFile(raw, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	requireRefused(t, dir, ccs, raw, "damaged raw, compressed cache", "", WithCompressedKeys())
	if _, err := os.Stat(filepath.Join(dir, kr.Hash+".keyz")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a .keyz was written beside a damaged raw key: %v", err)
	}
}
