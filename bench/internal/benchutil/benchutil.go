// Package benchutil holds what the benchmark programs share: random field
// vectors made fast on all cores, the MSM check set with its edge cases,
// the timing and statistics they report, and the
// flags and exit of those that time built-in circuits, and the device
// settings of those that open a backend.
package benchutil

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/backend/witness"
	"github.com/consensys/gnark/constraint"
	"github.com/consensys/gnark/logger"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

// Median returns the middle value of d (the upper one of the two middle
// values for an even count); d is not modified and must not be empty.
func Median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TimeMedian runs f once as a warm-up, then reps times, and returns the
// median of the timed runs. The first error of f ends it and is returned;
// reps below 1 is an error naming it (there would be no time to report).
func TimeMedian(reps int, f func() error) (time.Duration, error) {
	if reps < 1 {
		return 0, fmt.Errorf("%d timed repetitions: want at least 1", reps)
	}
	if err := f(); err != nil {
		return 0, err
	}
	ts := make([]time.Duration, 0, reps)
	for range reps {
		t0 := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		ts = append(ts, time.Since(t0))
	}
	return Median(ts), nil
}

// Ms returns d in milliseconds.
func Ms(d time.Duration) float64 { return human.Milliseconds(d) }

// RandomScalars returns n valid scalar-field elements (top limb masked, so
// each is below 2^252 < r) from a fast PRNG seeded by the clock, on all
// cores. Not for cryptographic use: benchmark inputs only.
func RandomScalars(n int) []fr.Element {
	v := make([]fr.Element, n)
	var wg sync.WaitGroup
	w := runtime.NumCPU()
	for k := 0; k < w; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(k)))
			for i := k * n / w; i < (k+1)*n/w; i++ {
				v[i] = fr.Element{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64() & 0x0fffffffffffffff}
			}
		}(k)
	}
	wg.Wait()
	return v
}

// Series is the times of one timed variant, reported by Line.
type Series struct {
	Name  string
	Times []time.Duration
}

// Add appends one time.
func (s *Series) Add(d time.Duration) { s.Times = append(s.Times, d) }

// Line is the name padded to width, then the median and, in brackets, the
// minimum and maximum, in ms. s must hold at least one time.
func (s *Series) Line(width int) string {
	t := slices.Clone(s.Times)
	slices.Sort(t)
	return fmt.Sprintf("%-*s %9.1f ms  [%.1f, %.1f]", width, s.Name, Ms(Median(t)), Ms(t[0]), Ms(t[len(t)-1]))
}

// CircuitFlags are the flags of the benchmarks of a built-in circuit:
// -circuit, -log2 (comma-separated log2 sizes) and -reps.
type CircuitFlags struct {
	Circuit *string
	log2    *string
	Reps    *int
}

// NewCircuitFlags defines the CircuitFlags on flag.CommandLine with the
// given defaults of -log2 and -reps; repsUsage says what one repetition is.
func NewCircuitFlags(log2 string, reps int, repsUsage string) CircuitFlags {
	return CircuitFlags{
		Circuit: flag.String("circuit", "merkle", "built-in circuit"),
		log2:    flag.String("log2", log2, "comma-separated log2 of the constraint counts"),
		Reps:    flag.Int("reps", reps, repsUsage),
	}
}

// Log2 is the parsed -log2 list: integers from 1 to 30, or an error that
// names the bad item.
func (f CircuitFlags) Log2() ([]int, error) {
	var out []int
	for _, s := range strings.Split(*f.log2, ",") {
		lg, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || lg < 1 || lg > 30 {
			return nil, fmt.Errorf("bad -log2 %q: want integers from 1 to 30", s)
		}
		out = append(out, lg)
	}
	return out, nil
}

// Parse parses the command line, silences gnark's logger (its lines
// would interleave with the report) and returns the -log2 sizes; a bad
// -log2 ends the program name through Exit.
func (f CircuitFlags) Parse(name string) []int {
	flag.Parse()
	logger.Disable()
	sizes, err := f.Log2()
	Exit(name, err)
	return sizes
}

// CacheDirFlag defines -cache-dir on flag.CommandLine: the key and
// circuit cache of keycache.New ("": its default).
func CacheDirFlag() *string {
	return flag.String("cache-dir", "", "key and circuit cache (default $CUZK_CACHE_DIR or <user cache>/otelcuzk/keys)")
}

// CircuitMain is the whole main of a benchmark over built-in circuit
// sizes whose only flags are -circuit, -log2 (default log2), -reps
// (default reps) and -cache-dir: it parses them, calls run and exits
// through Exit with name.
func CircuitMain(name, log2 string, reps int, run func(circuit string, sizes []int, reps int, cacheDir string) error) {
	cf := NewCircuitFlags(log2, reps, "repetitions of each variant (after one warm-up)")
	cacheDir := CacheDirFlag()
	sizes := cf.Parse(name)
	Exit(name, run(*cf.Circuit, sizes, *cf.Reps, *cacheDir))
}

// Exit ends a benchmark that failed: "name: err" on stderr and status 1.
// It returns when err is nil.
func Exit(name string, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// SyncTracing is what a benchmark that reads the spans of each run opens
// its backend with: a span recorder, a provider that records into it and a
// synchronous Releaser on that provider. closeAll closes the Releaser, then
// shuts the provider down.
func SyncTracing() (rec *otelcuzk.Recorder, tp *sdktrace.TracerProvider, rel *buffer.Releaser, closeAll func(context.Context), err error) {
	return Tracing(buffer.ReleaseSync)
}

// Tracing is SyncTracing with a Releaser of mode (ReleasePool keeps each
// proof's host buffers for the next one).
func Tracing(mode buffer.ReleaseMode) (rec *otelcuzk.Recorder, tp *sdktrace.TracerProvider, rel *buffer.Releaser, closeAll func(context.Context), err error) {
	rec = otelcuzk.NewRecorder()
	tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	rel, err = buffer.NewReleaser(mode, buffer.WithTracerProvider(tp))
	if err != nil {
		_ = tp.Shutdown(context.Background())
		return nil, nil, nil, nil, err
	}
	return rec, tp, rel, func(ctx context.Context) {
		_ = rel.Close(ctx)
		_ = tp.Shutdown(ctx)
	}, nil
}

// Compile builds the built-in circuit at 2^log2 constraints and compiles it.
func Compile(circuit string, log2 int) (*circuits.Instance, constraint.ConstraintSystem, error) {
	in, err := circuits.Build(circuit, 1<<log2)
	if err != nil {
		return nil, nil, err
	}
	ccs, err := in.Compile()
	if err != nil {
		return nil, nil, err
	}
	return in, ccs, nil
}

// CompileCached builds the built-in circuit at n constraints and compiles
// it through cache (read from the circuit cache when it holds it).
func CompileCached(cache *keycache.Cache, circuit string, n int) (*circuits.Instance, *keycache.Compiled, error) {
	in, err := circuits.Build(circuit, n)
	if err != nil {
		return nil, nil, err
	}
	comp, err := cache.Compile(context.Background(), circuit, n, in.Compile)
	if err != nil {
		return nil, nil, err
	}
	return in, comp, nil
}

// Prove makes one proof of w the way the daemon does: groth16.Synthesize,
// then groth16.ProveAssignment on b with the keys k, both releasing through
// rel and tracing to tp. It returns the proof, when the prove started
// (after the synthesis) and how long it took; the proof is not verified.
func Prove(ctx context.Context, ccs constraint.ConstraintSystem, k *keycache.Keys, w witness.Witness, b backend.Backend, rel *buffer.Releaser, tp trace.TracerProvider, opts ...groth16.ProveOption) (proof gnarkgroth16.Proof, started time.Time, took time.Duration, err error) {
	asg, err := groth16.Synthesize(ctx, ccs, w, prover.WithReleaser(rel), prover.WithTracerProvider(tp), groth16.WithProvingKey(k.PK))
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	started = time.Now()
	opts = append([]groth16.ProveOption{groth16.WithBackend(b), prover.WithReleaser(rel),
		groth16.WithKeyID(k.Hash), prover.WithTracerProvider(tp)}, opts...)
	proof, err = groth16.ProveAssignment(ctx, k.PK, asg, opts...)
	return proof, started, time.Since(started), err
}

// DeviceSettingsFromEnv returns the CUDA backend's settings as cuzk reads
// and parses them (CUZK_CUDA_HOST_COPY, CUZK_CUDA_MSM_G2), for a bench
// main that opens a backend itself; a malformed value ends the program
// with its error (exit status 2).
func DeviceSettingsFromEnv() backend.DeviceSettings {
	s, err := backend.ParseDeviceSettings(os.Getenv("CUZK_CUDA_HOST_COPY"), os.Getenv("CUZK_CUDA_MSM_G2"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "CUZK_CUDA_HOST_COPY, CUZK_CUDA_MSM_G2:", err)
		os.Exit(2)
	}
	return s
}
