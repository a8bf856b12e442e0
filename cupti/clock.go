package cupti

import (
	"sort"
	"time"
)

// calibration ties CUPTI's clock (cuptiGetTimestamp, the clock of every
// activity record, ns) to the host's wall clock, from readings bracketed
// by two host reads: host0, gpu, host1. The GPU reading happened somewhere
// between the host reads, so the tightest bracket bounds the offset best:
// offset = midpoint − gpu, uncertainty = half the bracket. This is how
// Kineto calibrates CUPTI's clock against the system clock
// (libkineto/src/CuptiActivityApi.cpp: readings of both clocks taken back
// to back, the pair with the shortest round trip kept).
type calibration struct {
	gpu         uint64 // CUPTI ns of the kept reading
	offsetNS    int64  // wall ns − CUPTI ns
	uncertainNS int64  // ± ns
}

// calibrate picks the tightest bracket of s; ok is false when s holds no
// usable reading (empty, or host1 before host0).
func calibrate(s []calibSample) (c calibration, ok bool) {
	best := int64(-1)
	for _, x := range s {
		if x.host1 < x.host0 {
			continue
		}
		w := int64(x.host1 - x.host0)
		if best >= 0 && w >= best {
			continue
		}
		best = w
		mid := int64(x.host0) + w/2
		c = calibration{gpu: x.gpu, offsetNS: mid - int64(x.gpu), uncertainNS: (w + 1) / 2}
	}
	return c, best >= 0
}

// clockMap maps CUPTI ns to wall time through the calibrations taken so
// far. Between two calibrations the offset is interpolated linearly (the
// clocks drift apart by some µs per second); before the first or after the
// last, the nearest one holds. It keeps the last maxCalibrations.
type clockMap struct {
	cals []calibration // ascending gpu
}

const maxCalibrations = 64

func (m *clockMap) add(c calibration) {
	i := sort.Search(len(m.cals), func(i int) bool { return m.cals[i].gpu >= c.gpu })
	m.cals = append(m.cals, calibration{})
	copy(m.cals[i+1:], m.cals[i:])
	m.cals[i] = c
	if len(m.cals) > maxCalibrations {
		m.cals = m.cals[len(m.cals)-maxCalibrations:]
	}
}

func (m *clockMap) ready() bool { return len(m.cals) > 0 }

// offset returns the wall − CUPTI offset at CUPTI time ts and its
// uncertainty (the larger of the two calibrations interpolated between).
func (m *clockMap) offset(ts uint64) (offsetNS, uncertainNS int64) {
	n := len(m.cals)
	if n == 0 {
		return 0, 0
	}
	i := sort.Search(n, func(i int) bool { return m.cals[i].gpu > ts })
	switch {
	case i == 0:
		return m.cals[0].offsetNS, m.cals[0].uncertainNS
	case i == n:
		return m.cals[n-1].offsetNS, m.cals[n-1].uncertainNS
	}
	a, b := m.cals[i-1], m.cals[i]
	if a.gpu == ts {
		return a.offsetNS, a.uncertainNS
	}
	frac := float64(ts-a.gpu) / float64(b.gpu-a.gpu)
	off := a.offsetNS + int64(frac*float64(b.offsetNS-a.offsetNS))
	u := a.uncertainNS
	if b.uncertainNS > u {
		u = b.uncertainNS
	}
	return off, u
}

// wall maps CUPTI ns to the wall clock.
func (m *clockMap) wall(ts uint64) time.Time {
	off, _ := m.offset(ts)
	return time.Unix(0, int64(ts)+off)
}
