package groth16

import (
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/backend"
)

// Each function takes the options it reads, so an option passed where it
// means nothing (WithProvingKey to Prove) does not compile: Prove and
// ProveAssignment take ProveOption, Synthesize and Solve SynthesizeOption.
// An option read by both is an Option, which is each of them (as otel's
// trace.SpanStartEventOption is both a SpanStartOption and an
// EventOption). prover.New's options that are also read here
// embed these (prover.Option).

// ProveOption configures Prove and ProveAssignment.
type ProveOption interface{ applyProve(*config) }

// SynthesizeOption configures Synthesize and Solve.
type SynthesizeOption interface{ applySynthesize(*config) }

// Option is an option that Prove, ProveAssignment, Synthesize and Solve
// all read (WithTracerProvider, WithReleaser, WithRandomness, WithSolver;
// ProveAssignment, whose assignment is already solved, ignores the last).
type Option interface {
	ProveOption
	SynthesizeOption
}

// allOption is read by every function; the others by one set each. Each
// is its own type, so a type assertion cannot turn one set into another.
type (
	allOption        func(*config)
	proveOption      func(*config)
	synthesizeOption func(*config)
)

func (f allOption) applyProve(c *config)             { f(c) }
func (f allOption) applySynthesize(c *config)        { f(c) }
func (f proveOption) applyProve(c *config)           { f(c) }
func (f synthesizeOption) applySynthesize(c *config) { f(c) }

type config struct {
	backend  backend.Backend
	releaser *buffer.Releaser
	r, s     *fr.Element
	tp       trace.TracerProvider
	keyID    string
	pk       gnarkgroth16.ProvingKey
	bitSplit BitSplit
	solver   Solver
}

// newConfig applies opts with apply (ProveOption.applyProve, ...) over
// the defaults.
func newConfig[O any](opts []O, apply func(O, *config)) config {
	c := config{tp: otel.GetTracerProvider()}
	for _, o := range opts {
		apply(o, &c)
	}
	return c
}

func (c *config) tracer() trace.Tracer { return semconv.Tracer(c.tp) }

// WithBackend proves on b (default: a fresh CPU backend, prover/cpu, per
// call). Read by Prove and ProveAssignment.
func WithBackend(b backend.Backend) ProveOption {
	return proveOption(func(c *config) { c.backend = b })
}

// WithReleaser allocates the large vectors from r's pool (pool mode) and
// releases them through r, as buffer.release spans, in r's mode: the one
// way the release mode reaches the prover. Default (and for a nil r): a
// sync Releaser on the same TracerProvider (buffer.OrSync). Read by Prove,
// Synthesize, Solve and ProveAssignment.
func WithReleaser(r *buffer.Releaser) Option {
	return allOption(func(c *config) { c.releaser = r })
}

// WithRandomness fixes the blinding scalars r and s of Groth16 (default:
// fresh random ones from crypto/rand per proof). The same witness, key, r
// and s give the same proof on every backend; for tests only, as a fixed
// r, s loses zero knowledge. Read by Prove, ProveAssignment, Synthesize
// and Solve, where it also fixes the masks of the commitments of a
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
// (BaseSet.ID is keyID + ":g1.a", ...) and per-key state (backend.Call's
// KeyID, ComputeH's keyID). It must change when the key changes; the
// the Prover uses the hash of the constraint system. Default "": the bases
// are not kept resident.
func WithKeyID(id string) ProveOption {
	return proveOption(func(c *config) { c.keyID = id })
}

// WithSolver says how Synthesize, Solve and Prove (its synthesis) solve
// an R1CS of gnark's R1CS builder (default SolverAuto: by components where
// they are expected to be at least as fast, else by levels; the
// synthesize.solve span's cuzk.solver says which ran: "components" or
// "levels", the names ParseSolver reads). For comparisons and as a way out should one choice be slow
// for a circuit.
func WithSolver(s Solver) Option {
	return allOption(func(c *config) { c.solver = s })
}

// WithProvingKey gives Synthesize and Solve the circuit's proving key,
// whose commitment keys the solve of a circuit with commitments
// (api.Commit) needs; it is not needed (and ignored) without commitments.
// Prove passes its key itself.
func WithProvingKey(pk gnarkgroth16.ProvingKey) SynthesizeOption {
	return synthesizeOption(func(c *config) { c.pk = pk })
}
