// Command keydecode times the decode of a built-in circuit's keys in each
// encoding the key cache writes, interleaved in one process: raw (the
// verifying key's ReadFrom and the proving key's ReadDump, <hash>.keys,
// from memory); compressed with every check (both keys' ReadFrom: how the
// cache read a <hash>.keyz before, each point's curve equation solved, on
// all cores by gnark-crypto's Decoder, and its subgroup checked);
// compressed as a checked file (the proving key's UnsafeReadFrom: how the
// cache reads a .keyz whose checksums passed, no subgroup check); and
// keys.load of the .keys and of the .keyz through the cache (mapped,
// checksums verified, decoded), as cuzk prove and cuzk prove
// --compressed-keys load them.
//
//	go run ./bench/keydecode -log2 12,16 -reps 3 -cache-dir DIR
//
// A key the cache lacks is made first (gnark's groth16.Setup: a minute at
// 2^16 on a small host). The .keyz is written to a temporary directory and
// removed. Results: bench/caches.md.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/host"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

func main() { benchutil.CircuitMain("keydecode", "12,16", 3, run) }

func run(circuit string, sizes []int, reps int, cacheDir string) error {
	fmt.Printf("host: %s, GOMAXPROCS %d\n", host.String(), runtime.GOMAXPROCS(0))
	cache, err := keycache.New(cacheDir, keycache.WithProgress(os.Stderr, false))
	if err != nil {
		return err
	}
	for _, lg := range sizes {
		if err := runSize(cache, circuit, lg, reps); err != nil {
			return err
		}
	}
	return nil
}

func runSize(cache *keycache.Cache, circuit string, lg, reps int) error {
	ctx := context.Background()
	_, comp, err := benchutil.CompileCached(cache, circuit, 1<<lg)
	if err != nil {
		return err
	}
	k, err := cache.LoadHashed(ctx, comp.CCS, comp.Hash)
	if err != nil {
		return err
	}
	pk := k.PK.(*groth16_bls12381.ProvingKey)
	var raw, z bytes.Buffer
	for _, w := range []func() error{
		func() error { _, err := k.VK.WriteTo(&raw); return err },
		func() error { return pk.WriteDump(&raw) },
		func() error { _, err := k.VK.WriteTo(&z); return err },
		func() error { _, err := pk.WriteTo(&z); return err },
	} {
		if err := w(); err != nil {
			return err
		}
	}
	// The .keyz of these keys, through a compressed cache whose "setup"
	// hands them over.
	zdir, err := os.MkdirTemp("", "keydecode-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(zdir)
	zcache, err := keycache.New(zdir, keycache.WithCompressedKeys(), keycache.WithProgress(nil, false),
		keycache.WithSetup(func(context.Context, constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
			return k.PK, k.VK, nil
		}))
	if err != nil {
		return err
	}
	if zk, err := zcache.LoadHashed(ctx, comp.CCS, k.Hash); err != nil || zk.Path == "" {
		return fmt.Errorf("store the .keyz: %v", err)
	}
	fmt.Printf("\n%s 2^%d: raw %.1f MB, compressed %.1f MB\n", circuit, lg, float64(raw.Len())/1e6, float64(z.Len())/1e6)

	series := []*benchutil.Series{
		{Name: "decode raw (ReadDump)"},
		{Name: "decode compressed, every check (ReadFrom)"},
		{Name: "decode compressed, checked file (UnsafeReadFrom)"},
		{Name: "keys.load .keys"},
		{Name: "keys.load .keyz"},
	}
	variants := []func() error{
		func() error {
			r := bytes.NewReader(raw.Bytes())
			vk := groth16.NewVerifyingKey(ecc.BLS12_381)
			if _, err := vk.ReadFrom(r); err != nil {
				return err
			}
			return new(groth16_bls12381.ProvingKey).ReadDump(r)
		},
		func() error { return decodeCompressed(z.Bytes(), false) },
		func() error { return decodeCompressed(z.Bytes(), true) },
		func() error { return loadHit(ctx, cache, comp, k.Hash) },
		func() error { return loadHit(ctx, zcache, comp, k.Hash) },
	}
	for rep := 0; rep <= reps; rep++ {
		for i, v := range variants {
			runtime.GC()
			t := time.Now()
			if err := v(); err != nil {
				return fmt.Errorf("%s: %w", series[i].Name, err)
			}
			if rep > 0 {
				series[i].Add(time.Since(t))
			}
		}
	}
	for _, s := range series {
		fmt.Println("  " + s.Line(50))
	}
	return nil
}

func decodeCompressed(b []byte, unchecked bool) error {
	r := bytes.NewReader(b)
	vk := groth16.NewVerifyingKey(ecc.BLS12_381)
	if _, err := vk.ReadFrom(r); err != nil {
		return err
	}
	pk := new(groth16_bls12381.ProvingKey)
	read := pk.ReadFrom
	if unchecked {
		read = pk.UnsafeReadFrom
	}
	_, err := read(r)
	return err
}

func loadHit(ctx context.Context, c *keycache.Cache, comp *keycache.Compiled, hash string) error {
	k, err := c.LoadHashed(ctx, comp.CCS, hash)
	if err != nil {
		return err
	}
	if !k.CacheHit {
		return fmt.Errorf("keys set up, not read")
	}
	return nil
}
