package prover

import (
	"io"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

// New takes ProverOption. An option that the prove
// (prover/groth16) reads too is an Option: it is each of
// groth16.ProveOption, groth16.SynthesizeOption and ProverOption, so
// the same WithTracerProvider configures a Prover and a groth16.Prove.

// ProverOption configures New.
type ProverOption interface{ applyProver(*config) }

// Option is an option that New and prover/groth16's Prove,
// ProveAssignment, Synthesize and Solve all read (WithTracerProvider,
// WithReleaser, WithRandomness).
type Option interface {
	groth16.Option
	ProverOption
}

type proverOption func(*config)

func (f proverOption) applyProver(c *config) { f(c) }

// sharedOption is an Option: the prove's option it embeds, and what the
// Prover keeps of it (which it passes on to the proves it runs).
type sharedOption struct {
	groth16.Option
	pipe proverOption
}

func (o sharedOption) applyProver(c *config) { o.pipe(c) }

type config struct {
	releaser *buffer.Releaser
	device   backend.DeviceSettings
	r, s     *fr.Element
	tp       trace.TracerProvider
	bitSplit groth16.BitSplit
	cacheDir string
	notice   io.Writer
	seed     int64
	progress bool
	revision *string // nil: the binary's own (keys.BuildRevision)
	keyOpts  []keycache.Option
	// setupOnDevice: WithKeySetup's setup runs on a GPU (the memory
	// check counts the GPU setup's figure, not gnark's).
	setupOnDevice bool
}

// newConfig applies opts over the defaults.
func newConfig(opts []ProverOption) config {
	c := config{tp: otel.GetTracerProvider(), notice: io.Discard, seed: 1}
	for _, o := range opts {
		o.applyProver(&c)
	}
	return c
}

func (c *config) tracer() trace.Tracer { return semconv.Tracer(c.tp) }

// WithReleaser allocates the large vectors from r's pool (pool mode) and
// releases them through r, as buffer.release spans, in r's mode
// (groth16.WithReleaser). New passes it to its backend and its
// proves and never closes it: the caller closes it after Prover.Close.
func WithReleaser(r *buffer.Releaser) Option {
	return sharedOption{groth16.WithReleaser(r), func(c *config) { c.releaser = r }}
}

// WithRandomness fixes the blinding scalars r and s of Groth16
// (groth16.WithRandomness) of every proof a Prover makes; for tests
// only, as a fixed r, s loses zero knowledge.
func WithRandomness(r, s fr.Element) Option {
	return sharedOption{groth16.WithRandomness(r, s), func(c *config) { c.r, c.s = &r, &s }}
}

// WithTracerProvider records spans with tp (default: the global one).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return sharedOption{groth16.WithTracerProvider(tp), func(c *config) {
		if tp != nil {
			c.tp = tp
		}
	}}
}

// bitSplitOption is WithBitSplit's option.
type bitSplitOption struct {
	groth16.ProveOption
	b groth16.BitSplit
}

func (o bitSplitOption) applyProver(c *config) { c.bitSplit = o.b }

// WithBitSplit sets when the wire MSMs of a Prover's proofs are split by
// bit value (groth16.WithBitSplit; default groth16.BitSplitOff). It is a
// groth16.ProveOption too.
func WithBitSplit(b groth16.BitSplit) interface {
	groth16.ProveOption
	ProverOption
} {
	return bitSplitOption{groth16.WithBitSplit(b), b}
}

// WithKeyCacheDir sets the directory of the proving key cache (default:
// keys.DefaultDir, i.e. $CUZK_CACHE_DIR or <user cache dir>/otelcuzk/keys).
// Read by New.
func WithKeyCacheDir(dir string) ProverOption {
	return proverOption(func(c *config) { c.cacheDir = dir })
}

// WithNotice sets where New writes its one-line notices (the
// "auto" backend falling back to "cpu", and setup progress); default
// io.Discard.
func WithNotice(w io.Writer) ProverOption {
	return proverOption(func(c *config) {
		if w != nil {
			c.notice = w
		}
	})
}

// WithSeed sets the seed of the sample witness of built-in circuits when a
// Request carries no witness (default 1). Read by New.
func WithSeed(seed int64) ProverOption {
	return proverOption(func(c *config) { c.seed = seed })
}

// WithProgress forces the setup spinner on the notice writer even when it
// is not a terminal. Read by New.
func WithProgress(on bool) ProverOption {
	return proverOption(func(c *config) { c.progress = on })
}

// WithBuildRevision keys the compiled-circuit cache by rev instead of the
// binary's VCS revision (keys.BuildRevision); "" turns the circuit cache
// off. For tests, whose binaries carry no VCS information, and for builds
// stamped another way. Read by New.
func WithBuildRevision(rev string) ProverOption {
	return proverOption(func(c *config) { c.revision = &rev })
}

// WithKeyCacheOptions adds options to the key cache New opens, after
// its own: keycache.WithSetup (who makes missing keys, e.g. the GPU's
// setup) and keycache.WithEphemeralKeys (cuzk prove --ephemeral-keys).
func WithKeyCacheOptions(opts ...keycache.Option) ProverOption {
	return proverOption(func(c *config) { c.keyOpts = append(c.keyOpts, opts...) })
}

// WithKeySetup makes the keys the key cache lacks with f
// (keycache.WithSetup) and tells the memory check before a built-in
// circuit is built whose figure counts for a missing key: the GPU
// setup's (circuits.KeysGPUSetup) when onDevice, else gnark's
// groth16.Setup's (the default, also without this option). A cached key
// counts only the prove's figure either way. Read by New.
func WithKeySetup(f keycache.SetupFunc, onDevice bool) ProverOption {
	return proverOption(func(c *config) {
		c.keyOpts = append(c.keyOpts, keycache.WithSetup(f))
		c.setupOnDevice = onDevice && f != nil
	})
}

// WithDeviceSettings tunes the device backend New opens
// (BackendOptions.Device; default: the backend's defaults). Read by
// New.
func WithDeviceSettings(s backend.DeviceSettings) ProverOption {
	return proverOption(func(c *config) { c.device = s })
}
