package otelcuzk

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/otelcuzk/otelcuzk/otelcuzk/otlptest"
)

// A ForceFlush whose caller gives it 10 ms, against a healthy exporter that
// takes longer: the caller stops waiting, the export goes on, and nothing is
// dropped or put in cooldown (the issue saw 0 of 100 spans delivered).
func TestShortForceFlushOnAHealthyExporterLosesNothing(t *testing.T) {
	clearEnv(t)
	r := &receiver{block: 100 * time.Millisecond}
	addr := startGRPCReceiver(t, r, nil)
	tel := newTel(t, WithEndpoint("http://"+addr), WithProtocol(ProtocolGRPC), WithInsecure(), WithoutUntraced())
	emit(tel, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	err := tel.TracerProvider.ForceFlush(ctx)
	cancel()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ForceFlush: %v", err)
	}
	emit(tel, 100)
	shutdown(t, tel)
	if n := r.spanCount(); n != 200 {
		t.Fatalf("receiver got %d of 200 spans after one short ForceFlush", n)
	}
	if d := tel.DroppedSpans(); d != 0 {
		t.Errorf("DroppedSpans = %d, want 0", d)
	}
}

// After a failed export the exporter is in its cooldown; the spans queued
// at Shutdown are still tried once.
func TestShutdownTriesQueuedSpansDuringTheCooldown(t *testing.T) {
	clearEnv(t)
	exp := &flakyExporter{fail: true}
	tel := newTel(t, WithExporter(exp), WithLogWriter(nil), WithoutUntraced())
	emit(tel, 1)
	_ = tel.TracerProvider.ForceFlush(context.Background()) // fails: 5 s cooldown
	exp.set(false)
	emit(tel, 3)
	err := tel.Shutdown(context.Background())
	if exp.accepted != 3 {
		t.Fatalf("exporter accepted %d of the 3 spans queued at Shutdown", exp.accepted)
	}
	if !errors.Is(err, ErrSpansDropped) || !strings.Contains(err.Error(), ": 1 spans") {
		t.Fatalf("Shutdown err = %v, want 1 span dropped", err)
	}
}

// gateExporter blocks every export until open is closed, and says when the
// first export began.
type gateExporter struct {
	open     chan struct{}
	started  chan struct{}
	once     sync.Once
	mu       sync.Mutex
	accepted int
}

func (e *gateExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.once.Do(func() { close(e.started) })
	<-e.open
	e.mu.Lock()
	e.accepted += len(spans)
	e.mu.Unlock()
	return nil
}

func (e *gateExporter) Shutdown(context.Context) error { return nil }

// Spans the batch processor drops because its queue is full while an export
// hangs never reach the exporter; Shutdown counts them too, so delivered
// plus dropped is every span that ended.
func TestSpansLostInAFullQueueAreCountedAsDropped(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "5")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
	exp := &gateExporter{open: make(chan struct{}), started: make(chan struct{})}
	tel := newTel(t, WithExporter(exp), WithLogWriter(nil), WithoutUntraced())
	emit(tel, 1)
	<-exp.started // the exporter now hangs with 1 span
	emit(tel, 50)
	close(exp.open)
	err := tel.Shutdown(context.Background())
	delivered, dropped := int64(exp.accepted), tel.DroppedSpans()
	if delivered+dropped != 51 || dropped < 40 {
		t.Fatalf("delivered %d + dropped %d, want 51 with at least 40 dropped (queue of 5)", delivered, dropped)
	}
	if !errors.Is(err, ErrSpansDropped) {
		t.Errorf("Shutdown err = %v, want ErrSpansDropped", err)
	}
}

// listenOn serves OTLP/HTTP for r on addr, for an endpoint that comes up
// after the exporter was made.
func listenOn(t *testing.T, r *receiver, addr string) {
	t.Helper()
	lis := listenAgain(t, addr)
	srv := httptest.NewUnstartedServer(r)
	srv.Listener.Close()
	srv.Listener = lis
	srv.Start()
	t.Cleanup(srv.Close)
}

// listenAgain listens on addr, a port closedPort freed (retried while the
// kernel still holds it).
func listenAgain(t *testing.T, addr string) net.Listener {
	t.Helper()
	var lis net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if lis, err = net.Listen("tcp", addr); err == nil {
			return lis
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal(err)
	return nil
}

// An endpoint that refused connections and comes back ends the cooldown
// within about a second (it is dialled), not after the 5 s cooldown.
func TestCooldownEndsWhenARefusingEndpointComesBack(t *testing.T) {
	clearEnv(t)
	addr := closedPort(t)
	var log bytes.Buffer
	tel := newTel(t, WithEndpoint("http://"+addr), WithTimeout(time.Second), WithLogWriter(&log), WithoutUntraced())
	emit(tel, 2)
	_ = tel.TracerProvider.ForceFlush(context.Background()) // refused: cooldown
	if tel.DroppedSpans() != 2 || !strings.Contains(log.String(), "span export failed") {
		t.Fatalf("first export: dropped %d, log %q; want 2 dropped and the warning", tel.DroppedSpans(), log.String())
	}
	r := &receiver{}
	listenOn(t, r, addr)
	deadline := time.Now().Add(3 * time.Second)
	for r.spanCount() == 0 && time.Now().Before(deadline) {
		emit(tel, 1)
		_ = tel.TracerProvider.ForceFlush(context.Background())
		time.Sleep(100 * time.Millisecond)
	}
	if r.spanCount() == 0 {
		t.Fatal("no span arrived within 3 s of the endpoint coming back (cooldown 5 s)")
	}
	if n := strings.Count(log.String(), "\n"); n != 1 {
		t.Errorf("%d warnings for one outage, want 1:\n%s", n, log.String())
	}
}

// An endpoint that answers with a proxy's HTML error page: one log line
// naming the page's size, not the page.
func TestHTMLErrorPageIsOneLine(t *testing.T) {
	clearEnv(t)
	page := "<!DOCTYPE html>\n<html>\n<head>\n<title>404 Not Found</title>\n</head>\n<body>\n" +
		strings.Repeat("<p>nothing here</p>\n", 8) + "</body>\n</html>\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	var log bytes.Buffer
	tel := newTel(t, WithEndpoint(srv.URL), WithLogWriter(&log), WithoutUntraced())
	emit(tel, 1)
	err := tel.Shutdown(context.Background())
	for what, s := range map[string]string{"log": strings.TrimSuffix(log.String(), "\n"), "error": err.Error()} {
		if strings.Contains(s, "\n") || strings.Contains(s, "<") || !strings.Contains(s, "an HTML page of") || !strings.Contains(s, "404") {
			t.Errorf("%s is not one line naming the page: %q", what, s)
		}
	}
}

func TestErrorLineFoldsAndCaps(t *testing.T) {
	long := errors.New("a\nb\tc " + strings.Repeat("é", 400))
	got := errorLine(long)
	if strings.ContainsAny(got, "\n\t") || len(got) > maxErrorLine+len("…") || !strings.HasPrefix(got, "a b c é") {
		t.Errorf("errorLine = %q", got)
	}
	if got := errorLine(errors.New("plain")); got != "plain" {
		t.Errorf("errorLine(plain) = %q", got)
	}
}

// An endpoint that fails a request quickly but is reachable (an error
// status, a connection it closed) is no reason for a cooldown: the batch
// is tried again on a new connection, and the next batch too.
func TestQuickFailureFromAReachableEndpointIsRetriedNotCooledDown(t *testing.T) {
	clearEnv(t)
	r := &receiver{}
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		switch n {
		case 1: // a connection the collector closed as it restarted
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case 3: // an error status: that batch is lost, not retried
			http.Error(w, "busy", http.StatusBadRequest)
		default:
			r.ServeHTTP(w, req)
		}
	}))
	t.Cleanup(srv.Close)
	tel := newTel(t, WithEndpoint(srv.URL), WithTimeout(2*time.Second), WithLogWriter(nil), WithoutUntraced())
	emit(tel, 2)
	_ = tel.TracerProvider.ForceFlush(context.Background()) // closed, then delivered on the retry
	if n := r.spanCount(); n != 2 || tel.DroppedSpans() != 0 {
		t.Fatalf("after a closed connection: %d spans delivered, %d dropped; want 2 and 0", n, tel.DroppedSpans())
	}
	emit(tel, 3)
	_ = tel.TracerProvider.ForceFlush(context.Background()) // 400
	emit(tel, 4)
	if err := tel.Shutdown(context.Background()); !errors.Is(err, ErrSpansDropped) {
		t.Fatalf("Shutdown: %v, want ErrSpansDropped", err)
	}
	if n, d := r.spanCount(), tel.DroppedSpans(); n != 6 || d != 3 {
		t.Fatalf("delivered %d, dropped %d; want 6 delivered (the batch after the failure untouched by a cooldown), 3 dropped", n, d)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 4 {
		t.Errorf("%d requests, want 4 (closed and retried, 400 once, the last batch)", calls)
	}
}

// The file exporter in a loop of short flushes (the issue saw 68,088 spans
// dropped): every span reaches the file.
func TestLoopOfShortFlushesToTheFileLosesNothing(t *testing.T) {
	clearEnv(t)
	path := filepath.Join(t.TempDir(), "t.jsonl")
	tel := newTel(t, WithTraceFile(path), WithoutUntraced())
	for i := 0; i < 50; i++ {
		emit(tel, 10)
		ctx, cancel := context.WithTimeout(context.Background(), time.Microsecond)
		_ = tel.TracerProvider.ForceFlush(ctx)
		cancel()
	}
	shutdown(t, tel)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"spanId"`); n != 500 || tel.DroppedSpans() != 0 {
		t.Fatalf("%d of 500 spans in the file, %d dropped", n, tel.DroppedSpans())
	}
}

// hangingExporter never returns from an export, whatever its context says
// (an exporter stuck in a write, a buggy custom exporter).
type hangingExporter struct{ stop chan struct{} }

func (e hangingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	<-e.stop
	return nil
}

func (e hangingExporter) Shutdown(context.Context) error { return nil }

// An exporter that hangs and ignores its context: Shutdown still returns
// within ShutdownBound, and the spans whose export had not ended are
// counted as dropped, not as delivered.
func TestSpansOfAnExportStillHangingAtShutdownAreCountedAsDropped(t *testing.T) {
	clearEnv(t)
	exp := hangingExporter{stop: make(chan struct{})}
	defer close(exp.stop)
	tel := newTel(t, WithExporter(exp), WithTimeout(500*time.Millisecond), WithLogWriter(nil), WithoutUntraced())
	emit(tel, 3)
	start := time.Now()
	err := tel.Shutdown(context.Background())
	if took := time.Since(start); took > tel.ShutdownBound()+time.Second {
		t.Errorf("Shutdown took %v, bound %v", took, tel.ShutdownBound())
	}
	if d := tel.DroppedSpans(); d != 3 || !errors.Is(err, ErrSpansDropped) || !strings.Contains(err.Error(), ": 3 spans") {
		t.Fatalf("DroppedSpans = %d, Shutdown err = %v; want the 3 hung spans dropped", d, err)
	}
	if strings.Contains(err.Error(), "<nil>") {
		t.Errorf("Shutdown err names a nil error: %v", err)
	}
}

// Over gRPC, an endpoint that refused connections at start and comes back
// gets the spans within seconds: the export waits for the reconnect (gRPC's
// backoff capped at a second) instead of failing at once with the cached
// dial error and leaving the rest of its timeout to the exporter's own
// retry (5 s first interval), which put the exporter in a 10 s cooldown.
func TestGRPCEndpointDownAtStartGetsTheSpansOnceItIsUp(t *testing.T) {
	clearEnv(t)
	addr := closedPort(t)
	tel := newTel(t, WithEndpoint("http://"+addr), WithProtocol(ProtocolGRPC), WithInsecure(), WithTimeout(time.Second),
		WithLogWriter(nil), WithoutUntraced())
	emit(tel, 2)
	_ = tel.TracerProvider.ForceFlush(context.Background()) // refused: cooldown
	if tel.DroppedSpans() != 2 {
		t.Fatalf("first export: dropped %d, want 2", tel.DroppedSpans())
	}
	r := &receiver{}
	lis := listenAgain(t, addr)
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	up := time.Now()
	for r.spanCount() == 0 && time.Since(up) < 6*time.Second {
		emit(tel, 1)
		_ = tel.TracerProvider.ForceFlush(context.Background())
		time.Sleep(100 * time.Millisecond)
	}
	if r.spanCount() == 0 {
		t.Fatalf("no span arrived within %v of the gRPC endpoint coming back (%d dropped)", time.Since(up), tel.DroppedSpans())
	}
}

// An endpoint that accepts connections and never answers, over either
// protocol: Shutdown returns within ShutdownBound and counts every span as
// dropped (issue 11 item 7's endpoint, at the library).
func TestShutdownAgainstABlackholeHoldsTheBoundAndCountsTheSpans(t *testing.T) {
	eachProtocol(t, func(t *testing.T, protocol string) {
		bh, err := otlptest.NewBlackhole()
		if err != nil {
			t.Fatal(err)
		}
		defer bh.Close()
		tel := newTel(t, WithEndpoint(bh.URL()), WithProtocol(protocol), WithInsecure(), WithTimeout(500*time.Millisecond),
			WithLogWriter(nil), WithoutUntraced())
		emit(tel, 7)
		start := time.Now()
		err = tel.Shutdown(context.Background())
		if took := time.Since(start); took > tel.ShutdownBound()+500*time.Millisecond {
			t.Errorf("Shutdown took %v, bound %v", took, tel.ShutdownBound())
		}
		if d := tel.DroppedSpans(); d != 7 || !errors.Is(err, ErrSpansDropped) {
			t.Fatalf("DroppedSpans = %d, Shutdown err = %v; want 7 dropped", d, err)
		}
	})
}

// Shutdown given a context that is done already (a program's signal
// context, deferred): the queued spans are still exported, and since none
// was lost it reports no error (it said "flush: context canceled").
func TestShutdownWithADoneContextDeliversTheQueueWithoutAnError(t *testing.T) {
	eachProtocol(t, func(t *testing.T, protocol string) {
		r := &receiver{}
		tel := newTel(t, WithEndpoint(startReceiver(t, r, protocol)), WithProtocol(protocol), WithInsecure(), WithoutUntraced())
		emit(tel, 5)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := tel.Shutdown(ctx); err != nil || r.spanCount() != 5 {
			t.Fatalf("Shutdown(done context) = %v with %d of 5 spans delivered, want nil and 5", err, r.spanCount())
		}
	})
}

// A receiver that accepts and never answers: the spans the queue cannot
// hold are counted dropped the moment they end, and those of the hung
// export and of the cooldown after it within the export timeout and a
// schedule delay, all while the process runs (not at Shutdown).
func TestDropsWhileAnExportHangsAreCountedLive(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "5")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	bh, err := otlptest.NewBlackhole()
	if err != nil {
		t.Fatal(err)
	}
	defer bh.Close()
	const timeout = time.Second
	tel := newTel(t, WithEndpoint(bh.URL()), WithProtocol(ProtocolHTTPProtobuf), WithTimeout(timeout),
		WithLogWriter(nil), WithoutUntraced())
	before := DroppedSpans()
	emit(tel, 1)
	// The one span's export now hangs: wait until the processor took it.
	for deadline := time.Now().Add(timeout / 2); tel.exporter.pending.Load() != 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	emit(tel, 50)
	if got := tel.DroppedSpans(); got < 45 {
		t.Fatalf("right after 50 spans ended behind a hung export (queue of 5): %d dropped, want at least 45", got)
	}
	if got := DroppedSpans() - before; got < 45 {
		t.Errorf("process counter (cuzk_spans_dropped_total) rose by %d, want at least 45", got)
	}
	deadline := time.Now().Add(timeout + 2*time.Second)
	for tel.DroppedSpans() != 51 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := tel.DroppedSpans(); got != 51 {
		t.Fatalf("%v after the hung export began: %d dropped, want all 51 before Shutdown", timeout+2*time.Second, got)
	}
	if got := DroppedSpans() - before; got != 51 {
		t.Errorf("process counter rose by %d, want 51", got)
	}
	tel.Shutdown(context.Background())
	if got := tel.DroppedSpans(); got != 51 {
		t.Errorf("after Shutdown %d dropped, want still 51 (none counted twice)", got)
	}
}
