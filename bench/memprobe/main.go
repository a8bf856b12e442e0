// Command memprobe measures the resident memory of one built-in circuit's
// compile, key load (or setup) and proofs on the CPU backend, in one
// process, against the estimates the prover uses: circuits' MemoryBytes
// (CheckMemory, before a circuit is built), circuits.KeyMemory (the keys the
// engine's budget counts as held) and circuits.ProofMemory (what the budget
// reserves per proof). bench/circuit-memory.sh runs it per circuit and
// size, each in a fresh process; results: bench/memory.md.
//
//	go build -o memprobe ./bench/memprobe
//	./memprobe -circuit merkle -constraints 65536 -cache-dir DIR -proofs 2
//
// The peaks are the kernel's VmHWM (reset through /proc/self/clear_refs
// before each phase), the held sizes VmRSS after a GC that returns the
// freed heap to the kernel: compile = the peak while compiling; keys = the
// peak while reading the keys (groth16.Setup when DIR has none); proof =
// the peak over -proofs back-to-back proofs (no GC forced between them, as
// in a daemon) above the RSS held before them. It prints one line per
// phase and a last line "memprobe {json}" for the record.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/consensys/gnark/logger"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

// record is one measurement, bytes unless said otherwise.
type record struct {
	Circuit     string  `json:"circuit"`
	Constraints int     `json:"constraints"`
	Wires       int     `json:"wires"`
	Committed   int     `json:"committed"`
	Setup       bool    `json:"setup"` // the keys were made by groth16.Setup here
	Start       uint64  `json:"rss_start"`
	CompilePeak uint64  `json:"compile_peak"`
	CCSHeld     uint64  `json:"ccs_held"`
	KeysPeak    uint64  `json:"keys_peak"` // of the load or the setup
	KeysHeld    uint64  `json:"keys_held"` // ccs and keys
	ProofPeak   uint64  `json:"proof_peak"`
	ProofAbove  uint64  `json:"proof_above_held"`
	Released    uint64  `json:"released"` // buffer.release bytes of one proof
	ProofSec    float64 `json:"proof_s"`
	EstMemory   uint64  `json:"est_memory_bytes"` // circuits' MemoryBytes
	EstKeys     uint64  `json:"est_key_memory"`
	EstProof    uint64  `json:"est_proof_memory"`
	GOMAXPROCS  int     `json:"gomaxprocs"`
}

func main() {
	circuit := flag.String("circuit", "merkle", "built-in circuit")
	n := flag.Int("constraints", 1<<14, "constraints")
	cacheDir := flag.String("cache-dir", "", "key and circuit cache (a setup when it has no keys)")
	proofs := flag.Int("proofs", 2, "proofs back to back")
	flag.Parse()
	logger.Disable()
	if err := run(*circuit, *n, *cacheDir, *proofs); err != nil {
		fmt.Fprintln(os.Stderr, "memprobe:", err)
		os.Exit(1)
	}
}

// status reads VmRSS and VmHWM of this process, bytes.
func status() (rss, hwm uint64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(fs[1], 10, 64)
		switch fs[0] {
		case "VmRSS:":
			rss = v << 10
		case "VmHWM:":
			hwm = v << 10
		}
	}
	return rss, hwm
}

// resetPeak sets VmHWM to the current RSS (Linux ≥ 4.0: clear_refs 5).
func resetPeak() error { return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// held returns the RSS after a GC that returns the freed heap.
func held() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	rss, _ := status()
	return rss
}

func peak() uint64 { _, h := status(); return h }

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func run(name string, n int, cacheDir string, proofs int) error {
	r := record{Circuit: name, Constraints: n, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	spec, err := circuits.Lookup(name)
	if err != nil {
		return err
	}
	r.EstMemory = spec.MemoryBytes(n)
	cache, err := keycache.New(cacheDir)
	if err != nil {
		return err
	}
	r.Start = held()
	if err := resetPeak(); err != nil {
		return fmt.Errorf("reset the peak RSS: %w", err)
	}
	in, comp, err := benchutil.CompileCached(cache, name, n)
	if err != nil {
		return err
	}
	r.CompilePeak = peak()
	r.CCSHeld = held()
	ccs := comp.CCS
	r.Wires = ccs.GetNbInternalVariables() + ccs.GetNbPublicVariables() + ccs.GetNbSecretVariables()
	domain := 1
	for domain < ccs.GetNbConstraints() {
		domain <<= 1
	}
	r.EstKeys = circuits.KeyMemory(domain, r.Wires)
	r.Committed = circuits.CommittedWires(ccs)
	r.EstProof = circuits.ProofMemory(ccs.GetNbConstraints(), r.Wires, r.Committed)
	fmt.Printf("%s %d constraints, %d wires: compile peak %s, held %s\n", name, n, r.Wires, mib(r.CompilePeak), mib(r.CCSHeld))

	resetPeak()
	kk, err := cache.LoadHashed(context.Background(), ccs, comp.Hash)
	if err != nil {
		return err
	}
	r.Setup = !kk.CacheHit
	r.KeysPeak = peak()
	r.KeysHeld = held()
	fmt.Printf("keys (setup %v): peak %s, held %s (circuit and keys)\n", r.Setup, mib(r.KeysPeak), mib(r.KeysHeld))

	w, err := in.Witness(1)
	if err != nil {
		return err
	}
	rec := otelcuzk.NewRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	rel, err := buffer.NewReleaser(buffer.ReleaseSync, buffer.WithTracerProvider(tp))
	if err != nil {
		return err
	}
	base := held()
	resetPeak()
	t := time.Now()
	for i := 0; i < proofs; i++ {
		rec.Reset()
		if _, err := groth16.Prove(context.Background(), ccs, kk.PK, w, prover.WithReleaser(rel), prover.WithTracerProvider(tp)); err != nil {
			return err
		}
	}
	r.ProofSec = time.Since(t).Seconds() / float64(proofs)
	r.ProofPeak = peak()
	r.ProofAbove = r.ProofPeak - min(base, r.ProofPeak)
	for _, s := range rec.Ended() {
		if s.Name() != semconv.SpanBufferRelease {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == semconv.KeyBufferBytes {
				r.Released += uint64(a.Value.AsInt64())
			}
		}
	}
	fmt.Printf("proofs ×%d (%.1f s each): peak %s, %s above the %s held; one proof releases %s\n",
		proofs, r.ProofSec, mib(r.ProofPeak), mib(r.ProofAbove), mib(base), mib(r.Released))
	fmt.Printf("estimates: MemoryBytes %s, KeyMemory %s, ProofMemory %s\n", mib(r.EstMemory), mib(r.EstKeys), mib(r.EstProof))
	b, _ := json.Marshal(r)
	fmt.Printf("memprobe %s\n", b)
	return nil
}
