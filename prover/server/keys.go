package server

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// KeyManager loads and drops the proving keys of circuits; prover.Pipeline
// implements it. Loaded lists "name/constraints" for built-in circuits and
// the name for circuits registered from files.
type KeyManager interface {
	Preload(ctx context.Context, circuit string, constraints int) error
	Evict(circuit string, constraints int) bool
	Loaded() []string
}

// MultiKeys is the KeyManager of several workers' pipelines (one per GPU):
// Preload and Evict act on all of them, Loaded lists a key once with the
// indices of the managers that hold it.
type MultiKeys []KeyManager

// Preload loads the key in every manager, in order; the first error ends it.
func (m MultiKeys) Preload(ctx context.Context, circuit string, constraints int) error {
	var errs []error
	for _, k := range m {
		if err := k.Preload(ctx, circuit, constraints); err != nil {
			errs = append(errs, err)
			break
		}
	}
	return errors.Join(errs...)
}

// Evict drops the key from every manager; true if any held it.
func (m MultiKeys) Evict(circuit string, constraints int) bool {
	any := false
	for _, k := range m {
		any = k.Evict(circuit, constraints) || any
	}
	return any
}

// Loaded lists the keys held by any manager, sorted.
func (m MultiKeys) Loaded() []string {
	var out []string
	for _, k := range m {
		for _, id := range k.Loaded() {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// holders returns, per loaded key, the indices of the managers holding it.
func (m MultiKeys) holders() map[string][]int {
	h := map[string][]int{}
	for i, k := range m {
		for _, id := range k.Loaded() {
			h[id] = append(h[id], i)
		}
	}
	return h
}

// splitKeyID splits "name/constraints" into its parts; a file circuit's
// id is its name alone.
func splitKeyID(id string) (string, uint64) {
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
