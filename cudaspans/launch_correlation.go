package cudaspans

/*
#include <stdint.h>
#include "cs_driver.h"
static void cs_set_hooks_h(uintptr_t push, uintptr_t pop) {
	cs_set_launch_hooks((void (*)(uint64_t))push, (void (*)(void))pop);
}
*/
import "C"

import (
	"sync/atomic"
	"unsafe"
)

// launchDurations is the hook of SetLaunchCorrelation: another timer's
// durations (ms) of the launches with the given ids.
var launchDurations atomic.Pointer[func(ids []uint64) map[uint64]float64]

// SetLaunchCorrelation is for package cupti (CUPTI activity capture), so a
// kernel launched through cudaspans is traced once: push and pop are C
// functions (void push(uint64_t id), void pop(void)) called on the
// launching thread right before and after cuLaunchKernel, with the id of
// the launch (its start event), and around the async copies and memsets
// with id 1; durations, called once per Synchronize with the ids of its
// kernels, returns CUPTI's durations, which the kernel spans carry as
// cuda.cupti_ms beside cuda.gpu_ms. nil, nil, nil removes the hooks.
func SetLaunchCorrelation(push, pop unsafe.Pointer, durations func(ids []uint64) map[uint64]float64) {
	C.cs_set_hooks_h(C.uintptr_t(uintptr(push)), C.uintptr_t(uintptr(pop)))
	if durations == nil {
		launchDurations.Store(nil)
	} else {
		launchDurations.Store(&durations)
	}
}

// otherDurations asks the hook for the durations of the kernels of ops,
// by the ids push saw: each launch's start event.
func otherDurations(ops []*pendingOp) map[uint64]float64 {
	f := launchDurations.Load()
	if f == nil {
		return nil
	}
	var ids []uint64
	for _, op := range ops {
		if op.kernel != "" {
			ids = append(ids, uint64(op.start))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return (*f)(ids)
}
