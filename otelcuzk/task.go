package otelcuzk

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Task identifies a Curio harmonytask run for its span.
type Task struct {
	ID           int64  // harmonytask id; curio.task.id
	Name         string // task type, e.g. "WdPost", "PoRep"; curio.task.name
	MinerID      string // e.g. "f01234"; filecoin.miner.id, left out when empty
	SectorNumber int64  // filecoin.sector.number; negative means no sector and is left out
}

// Attributes returns the span attributes of t.
func (t Task) Attributes() []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.KeyTaskID.Int64(t.ID), semconv.KeyTaskName.String(t.Name)}
	if t.MinerID != "" {
		attrs = append(attrs, semconv.KeyMinerID.String(t.MinerID))
	}
	if t.SectorNumber >= 0 {
		attrs = append(attrs, semconv.KeySectorNumber.Int64(t.SectorNumber))
	}
	return attrs
}

// TaskOption configures RunTask.
type TaskOption interface {
	applyTask(taskConfig) taskConfig
}

type taskConfig struct {
	tp trace.TracerProvider
}

type taskOptionFunc func(taskConfig) taskConfig

func (f taskOptionFunc) applyTask(c taskConfig) taskConfig { return f(c) }

// WithTaskTracerProvider makes RunTask use tp instead of the global
// TracerProvider.
func WithTaskTracerProvider(tp trace.TracerProvider) TaskOption {
	return taskOptionFunc(func(c taskConfig) taskConfig { c.tp = tp; return c })
}

// RunTask runs do inside a span named SpanCurioTask carrying t's attributes,
// shaped for a harmonytask Do(taskID, stillOwned) (done bool, err error):
// do receives the span's context (pass it to the prover client so the proof
// joins the task's trace), and RunTask returns what do returned. The span
// records done as curio.task.done; an error is recorded with SetError. A
// panic in do is recorded (error.type panic) and re-raised after the span
// ends. Safe for
// concurrent use.
func RunTask(ctx context.Context, t Task, do func(ctx context.Context) (done bool, err error), opts ...TaskOption) (done bool, err error) {
	if do == nil {
		return false, errors.New("RunTask: nil task function")
	}
	var c taskConfig
	for _, o := range opts {
		if o != nil {
			c = o.applyTask(c)
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	tracer := semconv.Tracer(c.tp)
	ctx, span := tracer.Start(ctx, semconv.SpanCurioTask, trace.WithAttributes(t.Attributes()...))
	defer span.End()
	defer func() {
		if r := recover(); r != nil {
			semconv.SetError(span, semconv.NewError(semconv.ErrorTypePanic, fmt.Sprintf("panic: %v", r)))
			panic(r) // the deferred span.End still runs
		}
	}()
	done, err = do(ctx)
	span.SetAttributes(semconv.KeyTaskDone.Bool(done))
	if err != nil {
		semconv.SetError(span, err)
	}
	return done, err
}
