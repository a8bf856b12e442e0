package prover

import (
	"io"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

// Each function takes the options it reads, so an option passed where it
// means nothing (WithKeyCacheDir to Prove) does not compile: Prove and
// ProveAssignment take ProveOption, Synthesize SynthesizeOption,
// NewPipeline PipelineOption. An option read by all three is an Option,
// which is each of them (as otel's trace.SpanStartEventOption is both a
// SpanStartOption and an EventOption).

// ProveOption configures Prove and ProveAssignment.
type ProveOption interface{ applyProve(*config) }

// SynthesizeOption configures Synthesize.
type SynthesizeOption interface{ applySynthesize(*config) }

// PipelineOption configures NewPipeline.
type PipelineOption interface{ applyPipeline(*config) }

// Option is an option that Prove, ProveAssignment, Synthesize and
// NewPipeline all read (WithTracerProvider, WithReleaser,
// WithRandomness).
type Option interface {
	ProveOption
	SynthesizeOption
	PipelineOption
}

// allOption is read by every function; the others by one set each. Each
// is its own type, so a type assertion cannot turn one set into another.
type (
	allOption        func(*config)
	proveOption      func(*config)
	synthesizeOption func(*config)
	pipelineOption   func(*config)
)

func (f allOption) applyProve(c *config)             { f(c) }
func (f allOption) applySynthesize(c *config)        { f(c) }
func (f allOption) applyPipeline(c *config)          { f(c) }
func (f proveOption) applyProve(c *config)           { f(c) }
func (f synthesizeOption) applySynthesize(c *config) { f(c) }
func (f pipelineOption) applyPipeline(c *config)     { f(c) }

type config struct {
	backend  Backend
	releaser *buffer.Releaser
	device   DeviceSettings
	r, s     *fr.Element
	tp       trace.TracerProvider
	keyID    string
	pk       groth16.ProvingKey
	bitSplit BitSplit

	// Pipeline only.
	cacheDir string
	notice   io.Writer
	seed     int64
	progress bool
	revision *string // nil: the binary's own (keys.BuildRevision)
	keyOpts  []keycache.Option
}

// newConfig applies opts with apply (ProveOption.applyProve, ...) over
// the defaults.
func newConfig[O any](opts []O, apply func(O, *config)) config {
	c := config{tp: otel.GetTracerProvider(), notice: io.Discard, seed: 1}
	for _, o := range opts {
		apply(o, &c)
	}
	return c
}

func (c *config) tracer() trace.Tracer { return c.tp.Tracer(semconv.ScopeName) }

// WithBackend proves on b (default: a fresh "cpu" backend per call).
// Read by Prove and ProveAssignment.
func WithBackend(b Backend) ProveOption {
	return proveOption(func(c *config) { c.backend = b })
}

// WithReleaser allocates the large vectors from r's pool (pool mode) and
// releases them through r, as buffer.release spans, in r's mode: the one
// way the release mode reaches the prover. Default (and for a nil r): a
// sync Releaser on the same TracerProvider (buffer.OrSync). Read by Prove,
// Synthesize, ProveAssignment and NewPipeline (which passes it to its
// backend and never closes it: the caller closes it after Pipeline.Close).
func WithReleaser(r *buffer.Releaser) Option {
	return allOption(func(c *config) { c.releaser = r })
}

// WithRandomness fixes the blinding scalars r and s of Groth16 (default:
// fresh random ones from crypto/rand per proof). The same witness, key, r
// and s give the same proof on every backend; for tests only, as a fixed
// r, s loses zero knowledge. Read by Prove, ProveAssignment and
// Synthesize, where it also fixes the masks of the commitments of a
// circuit with api.Commit (commitKeysOf).
func WithRandomness(r, s fr.Element) Option {
	return allOption(func(c *config) { c.r, c.s = &r, &s })
}

// WithTracerProvider records spans with tp (default: the global one).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return allOption(func(c *config) {
		if tp != nil {
			c.tp = tp
		}
	})
}

// WithKeyID names the proving key for backends that keep bases resident
// (BaseSet.ID is keyID + ":g1.a", ...). It must change when the key
// changes; the Pipeline uses the hash of the constraint system. Default "":
// the bases are not kept resident.
func WithKeyID(id string) ProveOption {
	return proveOption(func(c *config) { c.keyID = id })
}

// WithProvingKey gives Synthesize the circuit's proving key, whose
// commitment keys the solve of a circuit with commitments (api.Commit)
// needs; it is not needed (and ignored) without commitments. Prove passes
// its key itself. Read by Synthesize.
func WithProvingKey(pk groth16.ProvingKey) SynthesizeOption {
	return synthesizeOption(func(c *config) { c.pk = pk })
}

// WithKeyCacheDir sets the directory of the proving key cache (default:
// keys.DefaultDir, i.e. $CUZK_CACHE_DIR or <user cache dir>/otelcuzk/keys).
// Read by NewPipeline.
func WithKeyCacheDir(dir string) PipelineOption {
	return pipelineOption(func(c *config) { c.cacheDir = dir })
}

// WithNotice sets where NewPipeline writes its one-line notices (the
// "auto" backend falling back to "cpu", and setup progress); default
// io.Discard.
func WithNotice(w io.Writer) PipelineOption {
	return pipelineOption(func(c *config) {
		if w != nil {
			c.notice = w
		}
	})
}

// WithSeed sets the seed of the sample witness of built-in circuits when a
// Request carries no witness (default 1). Read by NewPipeline.
func WithSeed(seed int64) PipelineOption {
	return pipelineOption(func(c *config) { c.seed = seed })
}

// WithProgress forces the setup spinner on the notice writer even when it
// is not a terminal. Read by NewPipeline.
func WithProgress(on bool) PipelineOption {
	return pipelineOption(func(c *config) { c.progress = on })
}

// WithBuildRevision keys the compiled-circuit cache by rev instead of the
// binary's VCS revision (keys.BuildRevision); "" turns the circuit cache
// off. For tests, whose binaries carry no VCS information, and for builds
// stamped another way. Read by NewPipeline.
func WithBuildRevision(rev string) PipelineOption {
	return pipelineOption(func(c *config) { c.revision = &rev })
}

// WithKeyCacheOptions adds options to the key cache NewPipeline opens, after
// its own: keycache.WithSetup (who makes missing keys, e.g. the GPU's
// setup) and keycache.WithEphemeralKeys (cuzk prove --ephemeral-keys).
func WithKeyCacheOptions(opts ...keycache.Option) PipelineOption {
	return pipelineOption(func(c *config) { c.keyOpts = append(c.keyOpts, opts...) })
}

// WithDeviceSettings tunes the device backend NewPipeline opens
// (BackendOptions.Device; default: the backend's defaults). Read by
// NewPipeline.
func WithDeviceSettings(s DeviceSettings) PipelineOption {
	return pipelineOption(func(c *config) { c.device = s })
}
