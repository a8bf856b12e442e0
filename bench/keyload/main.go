// Command keyload times keys.load of a built-in circuit's cached keys the
// way builds before the circuit cache did it (keycache.Hash re-serializing the
// R1CS through SHA-256, then one buffered sequential read through gnark's
// ReadDump) against today's (the hash stored with the compiled circuit,
// the file mapped, its CRC-32C checksums verified and its slices copied on
// all cores), interleaved, with the child spans of today's load.
//
//	go build -buildvcs=true -o keyload ./bench/keyload
//	./keyload -circuit merkle -log2 18 -reps 5
//
// The keys must be cached already (cuzk setup); the page cache is warm
// after the first repetition (a warm-up, not counted). Results:
// bench/caches.md.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/host"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

func main() { benchutil.CircuitMain("keyload", "16,18", 5, run) }

// loadBefore is keys.load as it was: hash, then a sequential decode.
func loadBefore(ccsHash func() (string, error), dir string) (time.Duration, time.Duration, error) {
	t0 := time.Now()
	hash, err := ccsHash()
	if err != nil {
		return 0, 0, err
	}
	t1 := time.Now()
	f, err := os.Open(filepath.Join(dir, hash+".keys"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	vk := groth16.NewVerifyingKey(ecc.BLS12_381)
	if _, err := vk.ReadFrom(r); err != nil {
		return 0, 0, err
	}
	pk := new(groth16_bls12381.ProvingKey)
	if err := pk.ReadDump(r); err != nil {
		return 0, 0, err
	}
	return t1.Sub(t0), time.Since(t1), nil
}

func run(circuit string, sizes []int, reps int, cacheDir string) error {
	fmt.Printf("host: %s, GOMAXPROCS %d\n", host.String(), runtime.GOMAXPROCS(0))
	rec := otelcuzk.NewRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	cache, err := keycache.New(cacheDir, keycache.WithProgress(os.Stderr, false), keycache.WithTracerProvider(tp))
	if err != nil {
		return err
	}
	for _, lg := range sizes {
		n := 1 << lg
		_, comp, err := benchutil.CompileCached(cache, circuit, n)
		if err != nil {
			return err
		}
		hash := comp.Hash
		if hash == "" {
			if hash, err = keycache.Hash(comp.CCS); err != nil {
				return err
			}
		}
		st, err := os.Stat(filepath.Join(cache.Dir(), hash+".keys"))
		if err != nil {
			return fmt.Errorf("keys of %s 2^%d not cached (run cuzk setup first): %w", circuit, lg, err)
		}
		fmt.Printf("\n%s 2^%d: key file %.1f MB, circuit cache hit %v\n", circuit, lg, float64(st.Size())/1e6, comp.CacheHit)
		beforeHash := &benchutil.Series{Name: "before: keycache.Hash of the R1CS"}
		beforeRead := &benchutil.Series{Name: "before: sequential ReadDump"}
		beforeTotal := &benchutil.Series{Name: "before: keys.load"}
		after := &benchutil.Series{Name: "after: keys.load (hash stored)"}
		spans := map[string]*benchutil.Series{}
		for rep := 0; rep <= reps; rep++ {
			h, r, err := loadBefore(func() (string, error) { return keycache.Hash(comp.CCS) }, cache.Dir())
			if err != nil {
				return err
			}
			runtime.GC()
			rec.Reset()
			t := time.Now()
			k, err := cache.LoadHashed(context.Background(), comp.CCS, hash)
			d := time.Since(t)
			if err != nil {
				return err
			}
			if !k.CacheHit {
				return fmt.Errorf("keys of %s 2^%d were set up, not read", circuit, lg)
			}
			runtime.GC()
			if rep == 0 {
				continue
			}
			beforeHash.Add(h)
			beforeRead.Add(r)
			beforeTotal.Add(h + r)
			after.Add(d)
			for _, s := range rec.Ended() {
				if s.Name() == semconv.SpanKeysRead || s.Name() == semconv.SpanKeysDecode {
					if spans[s.Name()] == nil {
						spans[s.Name()] = &benchutil.Series{Name: "  " + s.Name()}
					}
					spans[s.Name()].Add(s.EndTime().Sub(s.StartTime()))
				}
			}
		}
		for _, s := range []*benchutil.Series{beforeHash, beforeRead, beforeTotal, after, spans[semconv.SpanKeysRead], spans[semconv.SpanKeysDecode]} {
			if s != nil {
				fmt.Println("  " + s.Line(40))
			}
		}
	}
	return nil
}
