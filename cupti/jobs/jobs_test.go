package jobs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func TestPublishedWindowsParentRecordsByTimeAndDevice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	p, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	clock := time.Unix(1_700_000_000, 0)
	p.now = func() time.Time { return clock }
	tp := sdktrace.NewTracerProvider()
	ctxA, a := tp.Tracer("t").Start(context.Background(), "job.a")
	ctxB, b := tp.Tracer("t").Start(context.Background(), "job.b")
	endA := p.Begin(ctxA, 0) // [0 s, 10 s) on device 0
	clock = clock.Add(2 * time.Second)
	endB := p.Begin(ctxB, AnyDevice) // [2 s, 4 s) on any device
	clock = clock.Add(2 * time.Second)
	endB()
	clock = clock.Add(6 * time.Second)
	endA()
	endA()                             // a second end writes nothing more
	p.Begin(context.Background(), 0)() // no span: nothing published

	ix := NewIndex(path, 0)
	at := func(s float64) time.Time {
		return time.Unix(1_700_000_000, 0).Add(time.Duration(s * float64(time.Second)))
	}
	cases := []struct {
		device int
		t      float64
		want   trace.SpanID
	}{
		{0, 1, a.SpanContext().SpanID()},
		{0, 3, a.SpanContext().SpanID()}, // inside both: a is known on device 0, b on none
		{1, 3, b.SpanContext().SpanID()}, // b is on any device
		{1, 5, trace.SpanID{}},           // a is device 0's
		{0, 9.5, a.SpanContext().SpanID()},
		{0, 10, trace.SpanID{}}, // a's end is exclusive
		{0, -1, trace.SpanID{}},
	}
	for _, c := range cases {
		ctx, ok := ix.Find(c.device, at(c.t), at(c.t+0.001))
		got := trace.SpanID{}
		if ok {
			sc := trace.SpanContextFromContext(ctx)
			if !sc.IsRemote() || sc.TraceID() != a.SpanContext().TraceID() && sc.TraceID() != b.SpanContext().TraceID() {
				t.Errorf("device %d at %v s: span context %v, want a remote job span", c.device, c.t, sc)
			}
			got = sc.SpanID()
		}
		if got != c.want {
			t.Errorf("device %d at %v s: job %v, want %v", c.device, c.t, got, c.want)
		}
	}
	if n := ix.Malformed(); n != 0 {
		t.Errorf("%d malformed lines in what Publisher wrote", n)
	}
}

// A job's device published after its start (OnDevice: the upstream said
// which GPU holds it) decides: a job on the record's device before one on
// no known device, the first started among jobs on no known device, the
// one holding it for most of the record among jobs on the record's
// device (the first to take it on a tie), a job on another device never.
func TestADevicePublishedLaterDecidesBetweenOverlappingJobs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	p, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	clock := time.Unix(1_700_000_000, 0)
	p.now = func() time.Time { return clock }
	tp := sdktrace.NewTracerProvider()
	start := func(name string) (*Job, trace.SpanID) {
		ctx, s := tp.Tracer("t").Start(context.Background(), name)
		return p.Start(ctx, AnyDevice), s.SpanContext().SpanID()
	}
	a, aID := start("a") // 0 s
	clock = clock.Add(time.Second)
	b, bID := start("b") // 1 s, queued behind a
	clock = clock.Add(time.Second)
	c, cID := start("c") // 2 s
	ix := NewIndex(path, 0)
	at := func(s float64) time.Time {
		return time.Unix(1_700_000_000, 0).Add(time.Duration(s * float64(time.Second)))
	}
	find := func(device int, s float64) trace.SpanID {
		ctx, ok := ix.Find(device, at(s), at(s+0.001))
		if !ok {
			return trace.SpanID{}
		}
		return trace.SpanContextFromContext(ctx).SpanID()
	}
	if got := find(0, 2.5); got != aID {
		t.Errorf("no device known: %v, want the first started, a %v", got, aID)
	}
	b.OnDevice(1, clock.Add(-time.Second)) // at 1 s
	c.OnDevice(0, clock)                   // at 2 s
	c.OnDevice(0, clock)                   // the same device again: no line
	if got := find(0, 2.5); got != cID {
		t.Errorf("c known on device 0: %v, want c %v before a (no device)", got, cID)
	}
	if got := find(1, 2.5); got != bID {
		t.Errorf("device 1: %v, want b %v", got, bID)
	}
	a.End() // at 2 s: a ended
	b.End()
	if got := find(1, 2.5); got != (trace.SpanID{}) {
		t.Errorf("device 1 after b ended: %v, want none (c is device 0's)", got)
	}
	if got := find(1, 1.5); got != bID {
		t.Errorf("device 1 at 1.5 s: %v, want b %v (its window)", got, bID)
	}
	if a.Device() != AnyDevice || b.Device() != 1 {
		t.Errorf("devices a %d b %d, want -1 and 1", a.Device(), b.Device())
	}
	if got := find(0, 1.5); got != aID {
		t.Errorf("device 0 at 1.5 s, before c took it: %v, want a %v", got, aID)
	}
	// The GPU passes from c to d at 3 s; c's end is seen only at 3.2 s
	// (its reply came after a status poll): a kernel of 3.1-3.3 s is d's
	// (held 0.2 s of it against c's 0.1 s); one of 2.9-3.1 s is c's.
	clock = at(2.5)
	d, dID := start("d")
	d.OnDevice(0, at(3))
	clock = at(3.2)
	c.End()
	span := func(s, e float64) trace.SpanID {
		ctx, ok := ix.Find(0, at(s), at(e))
		if !ok {
			return trace.SpanID{}
		}
		return trace.SpanContextFromContext(ctx).SpanID()
	}
	if got := span(2.9, 3.1); got != cID {
		t.Errorf("device 0, 2.9-3.1 s, before d took it: %v, want c %v", got, cID)
	}
	if got := span(3.1, 3.3); got != dID {
		t.Errorf("device 0, 3.1-3.3 s, c seen ending at 3.2 s: %v, want d %v (most of the kernel)", got, dID)
	}
	if got := span(3.1, 3.15); got != cID {
		t.Errorf("device 0, 3.1-3.15 s, held alike by both: %v, want c %v (the first to take it)", got, cID)
	}
	d.End()
	var none *Job
	none.OnDevice(3, clock)
	none.End()
	b2, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b2), "\n"); n != 11 {
		t.Errorf("%d lines, want 11 (4 starts, 3 devices, 4 ends):\n%s", n, b2)
	}
	if n := ix.Malformed(); n != 0 {
		t.Errorf("%d malformed lines", n)
	}
}

func TestIndexReadsTheFileAsItGrowsAndSkipsBadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	ix := NewIndex(path, 0)
	now := time.Now()
	if _, ok := ix.Find(0, now, now); ok {
		t.Fatal("a job found before the file exists")
	}
	start := now.Add(-time.Second).UnixNano()
	os.WriteFile(path, []byte("not json\n{\"job\":\"1-1\",\"traceparent\":\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\",\"device\":0,\"start_ns\":"), 0o644)
	if _, ok := ix.Find(0, now, now); ok {
		t.Fatal("a job found from half a line")
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(itoa(start) + "}\n{\"job\":\"1-2\",\"traceparent\":\"garbage\",\"start_ns\":5}\n")
	f.Close()
	ctx, ok := ix.Find(0, now, now)
	if !ok || trace.SpanContextFromContext(ctx).SpanID().String() != "b7ad6b7169203331" {
		t.Fatalf("the open job is not found once its line is whole (%v)", ok)
	}
	if n := ix.Malformed(); n != 2 {
		t.Errorf("%d malformed lines, want 2 (not json, a bad traceparent)", n)
	}
}

func TestNoFileNoPublisherNoIndex(t *testing.T) {
	t.Setenv(EnvFile, "")
	p, err := Open("")
	if p != nil || err != nil {
		t.Fatalf("Open without a path: %v, %v", p, err)
	}
	p.Begin(context.Background(), 0)() // a nil Publisher does nothing
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if NewIndex("", time.Second) != nil {
		t.Fatal("an Index without a path")
	}
	var ix *Index
	if _, ok := ix.Find(0, time.Now(), time.Now()); ok {
		t.Fatal("a nil Index found a job")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "no", "such", "dir", "jobs")); err == nil {
		t.Fatal("Open in a missing folder: no error")
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
