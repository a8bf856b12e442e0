package otelcuzk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// flakyExporter fails while fail is set and counts its calls and the spans
// it accepted.
type flakyExporter struct {
	mu       sync.Mutex
	fail     bool
	calls    int
	accepted int
}

func (e *flakyExporter) set(fail bool) { e.mu.Lock(); e.fail = fail; e.mu.Unlock() }

func (e *flakyExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	if e.fail {
		return errors.New("collector unreachable")
	}
	e.accepted += len(spans)
	return nil
}

func (e *flakyExporter) Shutdown(context.Context) error { return nil }

func TestDroppedSpansCountedAndLoggedOncePerBurst(t *testing.T) {
	clearEnv(t)
	var logBuf bytes.Buffer
	exp := &flakyExporter{fail: true}
	tel := newTel(t, WithExporter(exp), WithSyncExport(), WithLogWriter(&logBuf))
	tel.exporter.cooldown = 0 // try every export, to see bursts end
	before := DroppedSpans()

	emit(tel, 3)
	if got := tel.DroppedSpans(); got != 3 {
		t.Fatalf("DroppedSpans = %d after 3 failed exports, want 3", got)
	}
	if n := strings.Count(logBuf.String(), "\n"); n != 1 {
		t.Fatalf("%d log lines for one failure burst, want 1:\n%s", n, logBuf.String())
	}
	if !strings.Contains(logBuf.String(), "collector unreachable") {
		t.Errorf("log line lacks the cause: %q", logBuf.String())
	}

	exp.set(false)
	emit(tel, 2)
	if got := tel.DroppedSpans(); got != 3 || exp.accepted != 2 {
		t.Fatalf("after recovery: dropped %d accepted %d, want 3 and 2", got, exp.accepted)
	}

	exp.set(true)
	emit(tel, 1)
	if n := strings.Count(logBuf.String(), "\n"); n != 2 {
		t.Fatalf("%d log lines after a second burst, want 2", n)
	}
	if got := DroppedSpans() - before; got != 4 {
		t.Errorf("package DroppedSpans grew by %d, want 4", got)
	}
	err := tel.Shutdown(context.Background())
	if !errors.Is(err, ErrSpansDropped) || !strings.Contains(err.Error(), "4 spans") {
		t.Fatalf("Shutdown err = %v, want ErrSpansDropped with 4 spans", err)
	}
}

func TestDroppedSpansCooldownSkipsTheExporter(t *testing.T) {
	clearEnv(t)
	exp := &flakyExporter{fail: true}
	tel := newTel(t, WithExporter(exp), WithSyncExport(), WithLogWriter(nil))
	emit(tel, 5)
	if exp.calls != 1 {
		t.Fatalf("exporter called %d times within the cooldown, want 1", exp.calls)
	}
	if got := tel.DroppedSpans(); got != 5 {
		t.Fatalf("DroppedSpans = %d, want 5", got)
	}
}

func TestRegisterMetricsObservesDroppedSpans(t *testing.T) {
	clearEnv(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	if err := RegisterMetrics(mp.Meter(semconv.ScopeName)); err != nil {
		t.Fatal(err)
	}
	tel := newTel(t, WithExporter(&flakyExporter{fail: true}), WithSyncExport(), WithLogWriter(nil))
	emit(tel, 2)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != semconv.MetricSpansDropped {
				continue
			}
			found = true
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok || !sum.IsMonotonic || len(sum.DataPoints) != 1 {
				t.Fatalf("%s data = %#v, want one monotonic int64 sum point", m.Name, m.Data)
			}
			if got := sum.DataPoints[0].Value; got != DroppedSpans() || got < 2 {
				t.Fatalf("%s = %d, want DroppedSpans() = %d (at least 2)", m.Name, got, DroppedSpans())
			}
		}
	}
	if !found {
		t.Fatalf("metric %s not collected", semconv.MetricSpansDropped)
	}
}

func TestDroppedSpansCooldownDoublesAndResets(t *testing.T) {
	clearEnv(t)
	exp := &flakyExporter{fail: true}
	tel := newTel(t, WithExporter(exp), WithSyncExport(), WithLogWriter(nil))
	clock := time.Unix(1000, 0)
	tel.exporter.now = func() time.Time { return clock }
	tel.exporter.cooldown = time.Second

	tries := func() int { exp.mu.Lock(); defer exp.mu.Unlock(); return exp.calls }
	emit(tel, 1) // try 1 fails: wait 1 s
	clock = clock.Add(999 * time.Millisecond)
	emit(tel, 1)
	if tries() != 1 {
		t.Fatalf("tried again %d times inside the first cooldown", tries()-1)
	}
	clock = clock.Add(2 * time.Millisecond)
	emit(tel, 1) // try 2 fails: wait 2 s
	clock = clock.Add(1500 * time.Millisecond)
	emit(tel, 1)
	if tries() != 2 {
		t.Fatalf("cooldown did not double: %d tries", tries())
	}
	clock = clock.Add(600 * time.Millisecond)
	exp.set(false)
	emit(tel, 1) // try 3 succeeds: no wait
	emit(tel, 1)
	if tries() != 4 || exp.accepted != 2 {
		t.Fatalf("after recovery: %d tries, %d accepted; want 4 and 2", tries(), exp.accepted)
	}
	if tel.DroppedSpans() != 4 {
		t.Fatalf("DroppedSpans = %d, want 4", tel.DroppedSpans())
	}
}

// errExporter takes each batch (as a collector that read the request
// would) and then fails it with err.
type errExporter struct {
	mu    sync.Mutex
	err   error
	taken int
}

func (e *errExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.taken += len(spans)
	return e.err
}

func (e *errExporter) Shutdown(context.Context) error { return nil }

// A failed export whose request may have reached the collector (a
// timeout, over HTTP or gRPC, or a connection broken under it) is counted
// dropped and also of unknown outcome (DroppedSpansUncertain); an error
// status or a refusal only dropped. Not parallel: the counters are the
// process's.
func TestDroppedSpansOfUnknownOutcomeAreCountedApart(t *testing.T) {
	for _, c := range []struct {
		name      string
		err       error
		uncertain bool
	}{
		{"http timeout", fmt.Errorf("traces export: %w", context.DeadlineExceeded), true},
		{"grpc deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), true},
		{"connection reset", fmt.Errorf("post: %w", syscall.ECONNRESET), true},
		{"error status", errors.New("traces export: 503 Service Unavailable"), false},
		{"grpc unavailable", status.Error(codes.Unavailable, "connection refused"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearEnv(t)
			exp := &errExporter{err: c.err}
			tel := newTel(t, WithExporter(exp), WithSyncExport(), WithLogWriter(nil))
			tel.exporter.cooldown = 0
			dropped0, uncertain0 := DroppedSpans(), DroppedSpansUncertain()
			emit(tel, 3)
			dropped, uncertain := DroppedSpans()-dropped0, DroppedSpansUncertain()-uncertain0
			want := int64(0)
			if c.uncertain {
				want = 3
			}
			if dropped != 3 || uncertain != want || exp.taken < 3 {
				t.Errorf("dropped %d, of unknown outcome %d (collector took %d), want 3 and %d", dropped, uncertain, exp.taken, want)
			}
		})
	}
}
