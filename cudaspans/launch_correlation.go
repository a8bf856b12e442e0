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
// the launch, and around the async copies and memsets with id 1;
// durations, called once per Synchronize with the ids of its kernels,
// returns CUPTI's durations, which the kernel spans carry as
// cuda.cupti_ms beside cuda.gpu_ms. A launch's id is never given to
// another launch of the process (a 64-bit counter from 2), so a duration
// keyed by it can only reach that launch's span, however late its record
// comes: an earlier id was the start event, which cudaspans reuses, and a
// record that came after its launch's Synchronize went to the next launch
// with that event. nil, nil, nil removes the hooks.
//
// Kernel spans held for their durations (SetLaunchDurationWait) are ended
// first, with what the old hook has; the wait is switched off and
// LaunchDurationCounts starts again from zero.
func SetLaunchCorrelation(push, pop unsafe.Pointer, durations func(ids []uint64) map[uint64]float64) {
	EndWaitingLaunches(true)
	C.cs_set_hooks_h(C.uintptr_t(uintptr(push)), C.uintptr_t(uintptr(pop)))
	held.Lock()
	if durations == nil {
		launchDurations.Store(nil)
	} else {
		launchDurations.Store(&durations)
	}
	held.on, held.max = false, 0
	held.matched, held.unmatched = 0, 0
	held.Unlock()
}

// launchSeq numbers the launches of the process (newLaunchID).
var launchSeq atomic.Uint64

// newLaunchID returns the id of a new launch: 2, 3, ... (0 is none, 1
// cudaspans' copies and memsets, which the hook also brackets).
func newLaunchID() uint64 { return launchSeq.Add(1) + 1 }

// otherDurations asks the hook for the durations of the kernels of ops,
// by the ids push saw: each launch's id.
// hooked reports whether a durations hook is installed.
func otherDurations(ops []*pendingOp) (ms map[uint64]float64, hooked bool) {
	f := launchDurations.Load()
	if f == nil {
		return nil, false
	}
	var ids []uint64
	for _, op := range ops {
		if op.kernel != "" {
			ids = append(ids, op.launch)
		}
	}
	if len(ids) == 0 {
		return nil, true
	}
	return (*f)(ids), true
}
