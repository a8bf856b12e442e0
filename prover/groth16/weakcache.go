package groth16

import (
	"runtime"
	"sync"
	"weak"
)

// weakCache maps objects to values computed from them, an entry living no
// longer than its object: the key is a weak pointer, and a cleanup drops
// the entry once the object is unreachable. The solver keeps what it
// derives from an R1CS this way, so a compiled circuit the daemon's cache
// lets go (gigabytes at 2^26) is not kept alive by its shape or plan.
type weakCache[K any, V any] struct {
	m sync.Map // weak.Pointer[K] -> V
}

// get returns the value of k, computing it with make when there is none
// (two callers at once may both compute it; one value is kept).
func (c *weakCache[K, V]) get(k *K, make func() V) V {
	wp := weak.Make(k)
	if v, ok := c.m.Load(wp); ok {
		return v.(V)
	}
	v, loaded := c.m.LoadOrStore(wp, make())
	if !loaded {
		runtime.AddCleanup(k, func(wp weak.Pointer[K]) { c.m.Delete(wp) }, wp)
	}
	return v.(V)
}

// holds reports whether the cache has an entry for the object wp points
// to (tests: wp outlives the object).
func (c *weakCache[K, V]) holds(wp weak.Pointer[K]) bool {
	_, ok := c.m.Load(wp)
	return ok
}
