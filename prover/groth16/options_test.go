package groth16

import (
	"context"
	"reflect"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
)

// Each option fits the functions that read it (ProveOption,
// SynthesizeOption, both for an Option) and changes the configuration
// it is applied to.
func TestEachOptionChangesTheConfiguration(t *testing.T) {
	rel, err := buffer.NewReleaser(buffer.ReleaseSync)
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close(context.Background())
	var one fr.Element
	one.SetOne()
	for _, c := range []struct {
		name              string
		opt               any
		prove, synthesize bool
	}{
		{"WithBackend", WithBackend(cpu.New(nil)), true, false},
		{"WithKeyID", WithKeyID("k"), true, false},
		{"WithBitSplit", WithBitSplit(BitSplitOn), true, false},
		{"WithReleaser", WithReleaser(rel), true, true},
		{"WithRandomness", WithRandomness(one, one), true, true},
		{"WithTracerProvider", WithTracerProvider(noop.NewTracerProvider()), true, true},
		{"WithProvingKey", WithProvingKey(gnarkgroth16.NewProvingKey(ecc.BLS12_381)), false, true},
	} {
		p, isProve := c.opt.(ProveOption)
		s, isSynth := c.opt.(SynthesizeOption)
		if isProve != c.prove || isSynth != c.synthesize {
			t.Errorf("%s fits Prove %v, Synthesize %v; want %v, %v", c.name, isProve, isSynth, c.prove, c.synthesize)
		}
		if _, all := c.opt.(Option); all != (c.prove && c.synthesize) {
			t.Errorf("%s is an Option: %v", c.name, all)
		}
		def := newConfig([]ProveOption(nil), ProveOption.applyProve)
		for _, got := range []struct {
			ok    bool
			apply func(*config)
		}{{isProve, func(cf *config) { p.applyProve(cf) }}, {isSynth, func(cf *config) { s.applySynthesize(cf) }}} {
			if !got.ok {
				continue
			}
			cf := def
			got.apply(&cf)
			if reflect.DeepEqual(cf, def) {
				t.Errorf("%s leaves the configuration as it was", c.name)
			}
		}
	}
}
