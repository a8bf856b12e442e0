package server

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

// CircuitManager loads circuits into memory (compiled constraint system
// and proving and verifying keys, from the disk cache or by setup) and
// drops them; prover.Prover implements it. It backs the PreloadKeys and
// EvictKeys RPCs. LoadedCircuits lists "name/constraints" for built-in
// circuits and the name for circuits registered from files.
type CircuitManager interface {
	LoadCircuit(ctx context.Context, circuit string, constraints int) error
	EvictCircuit(circuit string, constraints int) bool
	LoadedCircuits() []string
}

// KeyDescriber is what a CircuitManager may also tell of a loaded
// circuit (id as LoadedCircuits lists it) for GetStatus and PreloadKeys:
// its key id (the hash of its compiled constraint system) and the host
// bytes its keys hold; prover.Prover implements it. Without it a key's
// id is the circuit id and its bytes 0.
type KeyDescriber interface {
	LoadedKey(id string) (keyID string, bytes uint64, ok bool)
}

// describeKey fills k's KeyId and Bytes from the first of managers that
// describes circuit id (KeyDescriber); the circuit id when none does.
func describeKey(k *cuzkv1.LoadedKey, id string, ms ...CircuitManager) {
	k.KeyId = id
	for _, m := range ms {
		if d, ok := m.(KeyDescriber); ok {
			if keyID, bytes, ok := d.LoadedKey(id); ok {
				k.KeyId, k.Bytes = keyID, bytes
				return
			}
		}
	}
}

// managers returns the managers behind m: each of CircuitManagers, or m.
func managers(m CircuitManager) []CircuitManager {
	if ms, ok := m.(CircuitManagers); ok {
		return ms
	}
	return []CircuitManager{m}
}

// CircuitManagers is the CircuitManager of several workers' pipelines (one
// per GPU): LoadCircuit and EvictCircuit act on all of them,
// LoadedCircuits lists a circuit once (GetStatus adds the indices of the
// managers that hold it).
type CircuitManagers []CircuitManager

// LoadCircuit loads the circuit in every manager, in order; the first error
// ends it.
func (m CircuitManagers) LoadCircuit(ctx context.Context, circuit string, constraints int) error {
	var errs []error
	for _, k := range m {
		if err := k.LoadCircuit(ctx, circuit, constraints); err != nil {
			errs = append(errs, err)
			break
		}
	}
	return errors.Join(errs...)
}

// EvictCircuit drops the circuit from every manager; true if any held it.
func (m CircuitManagers) EvictCircuit(circuit string, constraints int) bool {
	any := false
	for _, k := range m {
		any = k.EvictCircuit(circuit, constraints) || any
	}
	return any
}

// LoadedCircuits lists the circuits held by any manager, sorted.
func (m CircuitManagers) LoadedCircuits() []string {
	var out []string
	for _, k := range m {
		for _, id := range k.LoadedCircuits() {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// holders returns, per loaded circuit, the indices of the managers holding it.
func (m CircuitManagers) holders() map[string][]int {
	h := map[string][]int{}
	for i, k := range m {
		for _, id := range k.LoadedCircuits() {
			h[id] = append(h[id], i)
		}
	}
	return h
}

// splitCircuitID splits "name/constraints" into its parts; a file circuit's
// id is its name alone.
func splitCircuitID(id string) (string, uint64) {
	i := strings.LastIndexByte(id, '/')
	if i < 0 {
		return id, 0
	}
	n, err := strconv.ParseUint(id[i+1:], 10, 64)
	if err != nil {
		return id, 0
	}
	return id[:i], n
}
