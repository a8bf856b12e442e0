package otelcuzk

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// TestNilArgumentsAreErrorsNotPanics proves that otelcuzk's exported entry
// points given a nil or typed-nil argument (a span, an error, an option, an
// exporter, a processor, a span in a batch, a task's function) return, with
// an error where the call has one, and do not panic. Nil contexts aside.
func TestNilArgumentsAreErrorsNotPanics(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var nilSpan sdktrace.ReadOnlySpan
	for _, c := range []struct {
		name    string
		call    func() error
		wantErr bool
	}{
		{"SetError nil span", func() error { semconv.SetError(nil, errors.New("x")); return nil }, false},
		{"SetError nil error", func() error { semconv.SetError(noop.Span{}, nil); return nil }, false},
		{"ErrorType nil", func() error { semconv.ErrorType(nil); return nil }, false},
		{"DeviceAttributes nil", func() error { semconv.GPUAttributes(nil); return nil }, false},
		{"EnvWithTraceparent nil env", func() error { EnvWithTraceparent(ctx, nil); return nil }, false},
		{"MarshalOTLPJSON nil", func() error { _, err := MarshalOTLPJSON(nil); return err }, false},
		{"RegisterMetrics nil meter", func() error { return RegisterMetrics(nil) }, true},
		{"RunTask nil func", func() error { _, err := RunTask(ctx, Task{}, nil); return err }, true},
		{"RunTask nil provider", func() error {
			_, err := RunTask(ctx, Task{}, func(context.Context) (bool, error) { return true, nil }, WithTaskTracerProvider(nil), nil)
			return err
		}, false},
		{"TracesData nil", func() error { TracesData(nil); return nil }, false},
		{"TracesData nil span", func() error { TracesData([]sdktrace.ReadOnlySpan{nilSpan}); return nil }, false},
		{"New nil options", func() error {
			tel, err := New(ctx, nil, WithExporter(nil), WithSpanProcessor(nil), WithSampler(nil), WithLogWriter(nil),
				WithDevices(nil), WithTraceFile(filepath.Join(dir, "a.json")), WithoutGlobal())
			if err != nil {
				return err
			}
			_, span := tel.Provider().Tracer("t").Start(ctx, "s")
			span.End()
			return tel.Shutdown(ctx)
		}, false},
		{"nil Telemetry", func() error {
			var tel *Telemetry
			tel.DroppedSpans()
			tel.Destination()
			tel.ShutdownBound()
			if tel.Provider() == nil {
				return errors.New("nil provider")
			}
			return tel.Shutdown(ctx)
		}, false},
		{"NewFileExporter empty path", func() error { _, err := NewFileExporter(""); return err }, true},
		{"FileExporter nil span", func() error {
			e, err := NewFileExporter(filepath.Join(dir, "b.json"))
			if err != nil {
				return err
			}
			defer e.Shutdown(ctx)
			return e.ExportSpans(ctx, []sdktrace.ReadOnlySpan{nilSpan})
		}, false},
		{"nil FileExporter", func() error { return (*FileExporter)(nil).ExportSpans(ctx, nil) }, true},
		{"Recorder nil span", func() error {
			r := NewRecorder()
			r.OnStart(ctx, nil)
			r.OnEnd(nil)
			if len(r.Ended()) != 0 {
				return errors.New("recorded a nil span")
			}
			return nil
		}, false},
		{"UntracedProcessor nil span", func() error {
			p := NewUntracedProcessor(0, 0)
			p.OnStart(ctx, nil)
			p.OnEnd(nil)
			return nil
		}, false},
		{"Uncovered no children", func() error { Uncovered(Interval{}, nil); return nil }, false},
		{"ContextWithEnvTraceparent", func() error { ContextWithEnvTraceparent(trace.ContextWithSpan(ctx, nil)); return nil }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err, p := callNoPanic(c.call)
			if p != nil {
				t.Fatalf("panicked: %v", p)
			}
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
		})
	}
}

// callNoPanic runs f and returns the value of its panic, if any.
func callNoPanic(f func() error) (err error, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	return f(), nil
}
