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

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fp"
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

// g1X returns the compressed encoding (48 bytes, the smaller y) of the
// first x = 1, 2, ... for which x³+4 has a square root (onCurve: a point of
// BLS12-381's curve, almost surely outside the prime-order subgroup,
// checked) or has none (no point at all).
func g1X(t *testing.T, onCurve bool) []byte {
	t.Helper()
	var four fp.Element
	four.SetUint64(4)
	for x := uint64(1); x < 1000; x++ {
		var X, y2 fp.Element
		X.SetUint64(x)
		y2.Square(&X).Mul(&y2, &X).Add(&y2, &four)
		if (y2.Legendre() == 1) != onCurve {
			continue
		}
		b := X.Bytes()
		b[0] |= 0x80 // compressed, the smaller y
		if onCurve {
			var p bls12381.G1Affine
			if _, err := p.SetBytes(b[:]); err == nil {
				continue // in the subgroup after all
			}
		}
		return b[:]
	}
	t.Fatal("no such x under 1000")
	return nil
}

// withFirstPointOfA returns the payload of a compressed key file of k with
// the first point of the proving key's A replaced by point (48 bytes).
func withFirstPointOfA(t *testing.T, payload []byte, k *Keys, point []byte) []byte {
	t.Helper()
	var vk, domain bytes.Buffer
	if _, err := k.VK.WriteTo(&vk); err != nil {
		t.Fatal(err)
	}
	if _, err := k.PK.(*groth16_bls12381.ProvingKey).Domain.WriteTo(&domain); err != nil {
		t.Fatal(err)
	}
	// Domain, then G1 alpha, beta, delta, then A's length (uint32) and points.
	off := vk.Len() + domain.Len() + 3*48 + 4
	bad := append([]byte(nil), payload...)
	copy(bad[off:off+48], point)
	return bad
}

// A compressed file whose checksums are right but one of whose points is
// not on the curve is refused as corrupt, naming the file, and not
// replaced by a new setup. A point on the curve outside the subgroup is
// refused in a file without checksums, whose every point is checked; a
// checked file's points skip that check (its bytes are the ones written,
// and the check was most of the decode).
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
	bad := withFirstPointOfA(t, payload, k, g1X(t, false))
	if err := writeChecked(path, func(w io.Writer) error { _, err := w.Write(bad); return err }); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.readKeys(context.Background(), path); err == nil || !strings.Contains(err.Error(), "read proving key") {
		t.Fatalf("readKeys of a file with a point off the curve = %v, want a decode error of the proving key", err)
	} else if ce := (*corruptError)(nil); !errors.As(err, &ce) {
		t.Fatalf("readKeys = %v, want a corrupt error", err)
	}
	requireRefused(t, dir, ccs, path, "compressed, point off the curve", "read proving key", WithCompressedKeys())

	outside := withFirstPointOfA(t, payload, k, g1X(t, true))
	if err := os.WriteFile(path, outside, 0o600); err != nil { // no checksums
		t.Fatal(err)
	}
	requireRefused(t, dir, ccs, path, "compressed, unchecked, point outside the subgroup", "read proving key", WithCompressedKeys())
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

// The other way round: a raw cache whose directory holds the compressed
// key of the circuit (cuzk setup --compressed-keys, then cuzk prove
// without the flag) reads it rather than making a second, different key.
func TestARawCacheReadsAnExistingCompressedKeyOfTheSameCircuit(t *testing.T) {
	ccs := compile(t, 1<<10)
	dir := t.TempDir()
	kz, err := mustNew(t, dir, WithCompressedKeys()).Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	setups := 0
	count := WithSetup(func(context.Context, constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
		setups++
		return nil, nil, errors.New("no setup expected")
	})
	raw := mustNew(t, dir, count)
	if !raw.HasKeys(kz.Hash) {
		t.Fatal("raw cache beside a compressed key: HasKeys false")
	}
	kr, err := raw.Load(context.Background(), ccs)
	if err != nil {
		t.Fatal(err)
	}
	if !kr.CacheHit || setups != 0 || !bytes.Equal(dump(t, kr), dump(t, kz)) || kr.Path != filepath.Join(dir, kz.Hash+".keyz") {
		t.Fatalf("raw cache beside a compressed key: hit %v, %d setups, read %s; want the compressed key read", kr.CacheHit, setups, kr.Path)
	}
	if _, err := os.Stat(filepath.Join(dir, kz.Hash+".keys")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a .keys was written beside the compressed key: %v", err)
	}
}
