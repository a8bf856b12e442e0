package otelcuzk_test

import (
	"context"
	"fmt"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A harmonytask's Do wrapped in a curio.task span. In Curio the provider is
// the global one set up by otelcuzk.Setup (or Lotus's own setup); the prover
// client called inside do takes ctx, so the proof joins the task's trace.
func ExampleRunTask() {
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))

	do := func(taskID int64, stillOwned func() bool) (bool, error) {
		task := otelcuzk.Task{ID: taskID, Name: "WdPost", MinerID: "f01234", SectorNumber: 17}
		return otelcuzk.RunTask(context.Background(), task, func(ctx context.Context) (bool, error) {
			if !stillOwned() {
				return false, nil
			}
			// client.Prove(ctx, ...) here.
			return true, nil
		}, otelcuzk.WithTaskTracerProvider(tp))
	}
	done, err := do(42, func() bool { return true })
	fmt.Println(done, err)
	for _, s := range mem.GetSpans() {
		fmt.Println(s.Name)
		for _, kv := range s.Attributes {
			fmt.Printf("  %s=%s\n", kv.Key, kv.Value.Emit())
		}
	}
	// Output:
	// true <nil>
	// curio.task
	//   curio.task.id=42
	//   curio.task.name=WdPost
	//   filecoin.miner.id=f01234
	//   filecoin.sector.number=17
	//   curio.task.done=true
}

// Setup with no endpoint writes OTLP JSON lines to a local file; with
// OTEL_EXPORTER_OTLP_ENDPOINT set it exports over OTLP instead.
func ExampleSetup() {
	ctx := context.Background()
	shutdown, err := otelcuzk.Setup(ctx, otelcuzk.WithServiceName("cuzk"), otelcuzk.WithTraceFile("/tmp/cuzk-example.jsonl"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := shutdown(ctx); err != nil {
			fmt.Println(err) // e.g. spans dropped because the endpoint was unreachable
		}
	}()
	// ... otel.Tracer(semconv.ScopeName).Start(ctx, semconv.SpanEngineJob) ...
}
