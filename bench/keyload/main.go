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
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/logger"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/host"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

func main() {
	circuit := flag.String("circuit", "merkle", "built-in circuit")
	sizes := flag.String("log2", "16,18", "comma-separated log2 of the constraint counts")
	reps := flag.Int("reps", 5, "repetitions of each variant (after one warm-up)")
	cacheDir := flag.String("cache-dir", "", "key and circuit cache (default $CUZK_CACHE_DIR or the user cache)")
	flag.Parse()
	logger.Disable()
	if err := run(*circuit, *sizes, *reps, *cacheDir); err != nil {
		fmt.Fprintln(os.Stderr, "keyload:", err)
		os.Exit(1)
	}
}

type series struct {
	name  string
	times []time.Duration
}

func (s *series) add(d time.Duration) { s.times = append(s.times, d) }

func (s *series) String() string {
	t := slices.Clone(s.times)
	slices.Sort(t)
	return fmt.Sprintf("%-40s %9.1f ms  [%.1f, %.1f]", s.name, benchutil.Ms(benchutil.Median(t)), benchutil.Ms(t[0]), benchutil.Ms(t[len(t)-1]))
}

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

func run(circuit, sizes string, reps int, cacheDir string) error {
	fmt.Printf("host: %s, GOMAXPROCS %d\n", host.String(), runtime.GOMAXPROCS(0))
	rec := otelcuzk.NewRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	cache, err := keycache.New(cacheDir, keycache.WithProgress(os.Stderr, false), keycache.WithTracerProvider(tp))
	if err != nil {
		return err
	}
	for _, f := range strings.Split(sizes, ",") {
		lg, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || lg < 1 || lg > 30 {
			return fmt.Errorf("bad -log2 %q", f)
		}
		n := 1 << lg
		in, err := circuits.Build(circuit, n)
		if err != nil {
			return err
		}
		comp, err := cache.Compile(context.Background(), circuit, n, in.Compile)
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
		beforeHash := &series{name: "before: keycache.Hash of the R1CS"}
		beforeRead := &series{name: "before: sequential ReadDump"}
		beforeTotal := &series{name: "before: keys.load"}
		after := &series{name: "after: keys.load (hash stored)"}
		spans := map[string]*series{}
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
			beforeHash.add(h)
			beforeRead.add(r)
			beforeTotal.add(h + r)
			after.add(d)
			for _, s := range rec.Ended() {
				if s.Name() == otelcuzk.SpanKeysRead || s.Name() == otelcuzk.SpanKeysDecode {
					if spans[s.Name()] == nil {
						spans[s.Name()] = &series{name: "  " + s.Name()}
					}
					spans[s.Name()].add(s.EndTime().Sub(s.StartTime()))
				}
			}
		}
		for _, s := range []*series{beforeHash, beforeRead, beforeTotal, after, spans[otelcuzk.SpanKeysRead], spans[otelcuzk.SpanKeysDecode]} {
			if s != nil {
				fmt.Println("  " + s.String())
			}
		}
	}
	return nil
}
