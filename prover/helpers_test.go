package prover

import (
	"testing"

	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// fixture is a compiled built-in circuit with its keys and a witness.
type fixture = circuitstest.Fixture

// newFixture is circuitstest's fixture of a built-in circuit (seed 42).
func newFixture(t testing.TB, name string, n int) *fixture {
	t.Helper()
	return circuitstest.Setup(t, name, n, 42)
}
