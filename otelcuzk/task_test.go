package otelcuzk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

func TestRunTaskSpanCarriesTaskAndParentsWork(t *testing.T) {
	tp, mem := spantest.NewMemory()
	task := Task{ID: 991, Name: "WdPost", MinerID: "f01234", SectorNumber: 0}
	var inner trace.SpanContext
	done, err := RunTask(context.Background(), task, func(ctx context.Context) (bool, error) {
		_, s := tp.Tracer("t").Start(ctx, "prove")
		inner = s.SpanContext()
		s.End()
		return true, nil
	}, WithTaskTracerProvider(tp))
	if !done || err != nil {
		t.Fatalf("RunTask = %v, %v", done, err)
	}
	spans := mem.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	ts, prove := spans[1], spans[0]
	if ts.Name != semconv.SpanCurioTask {
		t.Fatalf("span %q, want %s", ts.Name, semconv.SpanCurioTask)
	}
	if prove.Parent.SpanID() != ts.SpanContext.SpanID() || inner.TraceID() != ts.SpanContext.TraceID() {
		t.Fatal("work inside do is not a child of the task span")
	}
	a := spantest.StubAttrs(ts)
	if a[semconv.KeyTaskID].AsInt64() != 991 || a[semconv.KeyTaskName].AsString() != "WdPost" || a[semconv.KeyMinerID].AsString() != "f01234" {
		t.Errorf("attributes = %v", a)
	}
	if v, ok := a[semconv.KeySectorNumber]; !ok || v.AsInt64() != 0 {
		t.Errorf("sector 0 not recorded: %v", a)
	}
	if !a[semconv.KeyTaskDone].AsBool() || ts.Status.Code != codes.Unset {
		t.Errorf("done = %v status = %v", a[semconv.KeyTaskDone], ts.Status)
	}
}

func TestRunTaskRecordsError(t *testing.T) {
	tp, mem := spantest.NewMemory()
	want := &fs.PathError{Op: "open", Path: "/x", Err: os.ErrNotExist}
	done, err := RunTask(context.Background(), Task{ID: 1, Name: "PoRep", SectorNumber: -1}, func(context.Context) (bool, error) {
		return false, fmt.Errorf("load key: %w", want)
	}, WithTaskTracerProvider(tp))
	if done || !errors.Is(err, want) {
		t.Fatalf("RunTask = %v, %v", done, err)
	}
	s := mem.GetSpans()[0]
	if s.Status.Code != codes.Error || s.Status.Description != err.Error() {
		t.Errorf("status = %+v", s.Status)
	}
	a := spantest.StubAttrs(s)
	if a[semconv.KeyErrorType].AsString() != semconv.ErrorTypeIO { // the *fs.PathError inside
		t.Errorf("error.type = %q", a[semconv.KeyErrorType].AsString())
	}
	if _, ok := a[semconv.KeySectorNumber]; ok {
		t.Error("negative sector recorded")
	}
	if _, ok := a[semconv.KeyMinerID]; ok {
		t.Error("empty miner id recorded")
	}
	if len(s.Events) != 1 || s.Events[0].Name != "exception" {
		t.Errorf("events = %v, want one exception", s.Events)
	}
}

func TestRunTaskPanicEndsSpanAndRepanics(t *testing.T) {
	tp, mem := spantest.NewMemory()
	defer func() {
		if r := recover(); r != "kaput" {
			t.Fatalf("recovered %v, want kaput", r)
		}
		spans := mem.GetSpans()
		if len(spans) != 1 || spans[0].Status.Code != codes.Error || spantest.StubAttrs(spans[0])[semconv.KeyErrorType].AsString() != "panic" {
			t.Fatalf("spans after panic = %v", spans)
		}
	}()
	_, _ = RunTask(context.Background(), Task{ID: 2}, func(context.Context) (bool, error) { panic("kaput") }, WithTaskTracerProvider(tp))
}

func TestRunTaskUsesGlobalProviderByDefault(t *testing.T) {
	tp, mem := spantest.NewMemory()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	defer otel.SetTracerProvider(prev)
	if _, err := RunTask(context.Background(), Task{ID: 3}, func(context.Context) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if len(mem.GetSpans()) != 1 {
		t.Fatal("no span through the global provider")
	}
}
