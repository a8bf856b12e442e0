package cupti

import (
	"strings"
	"testing"
	"time"
)

func TestDecodeKernelRecordAtItsOffsets(t *testing.T) {
	want := kernelRecord{start: 100, end: 250, device: 2, context: 3, stream: 14, corr: 99,
		grid: [3]uint32{1, 2, 3}, block: [3]uint32{128, 1, 1}, staticShm: 1024, dynShm: 2048, regs: 72, name: "ntt_radix2"}
	ev, rest, err := parseFrames(recordFrame(nil, kernelBytes(want), "ntt_radix2"))
	if err != nil || len(rest) != 0 || len(ev) != 1 {
		t.Fatalf("parse: %v, %d left, %d events", err, len(rest), len(ev))
	}
	if got := ev[0].(kernelRecord); got != want {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
}

func TestDecodeRefusesShortAndImplausibleRecords(t *testing.T) {
	k := kernelBytes(kernelRecord{start: 1, end: 2, grid: [3]uint32{1, 1, 1}, block: [3]uint32{1, 1, 1}})
	for name, rec := range map[string][]byte{
		"short kernel": k[:100],
		"short memcpy": memcpyBytes(memcpyRecord{})[:40],
		"short memset": memsetBytes(memsetRecord{})[:47],
		"short sync":   syncBytes(syncRecord{})[:30],
		"short ext":    extBytes(extCorrRecord{})[:16],
		"zero block":   kernelBytes(kernelRecord{start: 1, end: 2, grid: [3]uint32{1, 1, 1}}),
		"end < start":  kernelBytes(kernelRecord{start: 5, end: 2, grid: [3]uint32{1, 1, 1}, block: [3]uint32{1, 1, 1}}),
		"three bytes":  {1, 0, 0},
	} {
		_, _, err := parseFrames(recordFrame(nil, rec))
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line", name, err)
		}
	}
}

func TestFramesSplitAcrossReads(t *testing.T) {
	b := kernel("a", 1, 10, 10)
	b = append(b, kernel("b", 2, 30, 10)...)
	ev, rest, err := parseFrames(b[:len(b)-5])
	if err != nil || len(ev) != 1 || len(rest) != len(b)/2-5 {
		t.Fatalf("got %d events, %d bytes left, err %v", len(ev), len(rest), err)
	}
	ev, rest, err = parseFrames(append(rest, b[len(b)-5:]...))
	if err != nil || len(ev) != 1 || len(rest) != 0 || ev[0].(kernelRecord).name != "b" {
		t.Fatalf("second read: %v %d %v", ev, len(rest), err)
	}
}

func TestFrameErrors(t *testing.T) {
	if _, _, err := parseFrames([]byte{4, 0, 0, 0, 1, 0, 0, 0}); err == nil {
		t.Fatal("a frame shorter than its header was accepted")
	}
	ev, _, err := parseFrames(appendFrame(nil, 999, []byte("future")))
	if err != nil || len(ev) != 0 {
		t.Fatalf("unknown frame type: %v, %v (want skipped)", ev, err)
	}
	if _, _, err := parseFrames(appendFrame(nil, frameNVTXPush, []byte{1, 2, 3})); err == nil || !strings.Contains(err.Error(), "short") {
		t.Fatalf("truncated push frame: %v", err)
	}
}

func TestCalibrationKeepsTheTightestBracket(t *testing.T) {
	c, ok := calibrate([]calibSample{
		{host0: 1000, gpu: 10, host1: 1400},
		{host0: 2000, gpu: 20, host1: 2100}, // tightest: mid 2050
		{host0: 3000, gpu: 30, host1: 2900}, // host clock stepped back: ignored
	})
	if !ok || c.offsetNS != 2030 || c.uncertainNS != 50 || c.gpu != 20 {
		t.Fatalf("calibration %+v, want offset 2030 ± 50 at 20", c)
	}
	if _, ok := calibrate(nil); ok {
		t.Fatal("no readings calibrated")
	}
	if _, ok := calibrate([]calibSample{{host0: 5, gpu: 1, host1: 4}}); ok {
		t.Fatal("only backwards readings calibrated")
	}
}

func TestClockInterpolatesBetweenCalibrations(t *testing.T) {
	var m clockMap
	m.add(calibration{gpu: 2000, offsetNS: 600, uncertainNS: 9})
	m.add(calibration{gpu: 1000, offsetNS: 500, uncertainNS: 3})
	for _, tc := range []struct {
		ts  uint64
		off int64
		unc int64
	}{{500, 500, 3}, {1000, 500, 3}, {1500, 550, 9}, {2000, 600, 9}, {9000, 600, 9}} {
		off, u := m.offset(tc.ts)
		if off != tc.off || u != tc.unc {
			t.Errorf("offset(%d) = %d ± %d, want %d ± %d", tc.ts, off, u, tc.off, tc.unc)
		}
	}
	if got := m.wall(1500); !got.Equal(time.Unix(0, 2050)) {
		t.Fatalf("wall(1500) = %v", got.UnixNano())
	}
}

func TestTraceparentInMessage(t *testing.T) {
	rest, sc, ok := traceparentIn("job 7 traceparent=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 end")
	if !ok || rest != "job 7  end" || sc.SpanID().String() != "b7ad6b7169203331" {
		t.Fatalf("%q %v %v", rest, sc, ok)
	}
	if _, _, ok := traceparentIn("traceparent=00-zz-b7ad6b7169203331-01"); ok {
		t.Fatal("malformed traceparent accepted")
	}
}

func FuzzParseFrames(f *testing.F) {
	f.Add(kernel("k", 1, 2, 3))
	f.Add(pushFrame(nil, nvtxPush{message: "m", domain: "d"}))
	f.Add(calibFrame(nil, []calibSample{{1, 2, 3}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, rest, err := parseFrames(b)
		if err == nil && len(rest) > len(b) {
			t.Fatal("rest longer than input")
		}
		_ = ev
		bl := newBuilder(builderConfig{tracer: noopTracer()})
		bl.batch(ev, true)
		bl.finish()
	})
}
