// Command lotustask plays Curio keeping its own gRPC client, for the e2e
// suite: tracing set up exactly as Lotus's lib/tracing/setup.go sets it up
// (an OTLP over HTTP exporter behind a batch processor, a service.name
// resource, always sample, and the OpenCensus bridge installed with that
// tracer provider; no global tracer provider and no global propagator), a
// task span started with the OpenCensus API as Curio's harmonytask code
// does, and the daemon called through a plain grpc.NewClient with the two
// lines docs/curio.md documents: otelgrpc's client handler given the
// tracer provider Lotus's setup returned and an explicit W3C propagator.
//
// With -plain-otelgrpc it adds otelgrpc's handler with its defaults
// instead (the globals, which Lotus leaves unset): the call then carries
// no trace context and the daemon's proof is a trace of its own. With
// -prover-client it calls the daemon through prover/client given Lotus's
// tracer provider (docs/curio.md, the other way), same task span.
//
// It prints "task trace ID" and "daemon trace ID" lines.
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	octrace "go.opencensus.io/trace"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/bridge/opencensus"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/client"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9820", "cuzk daemon address")
	endpoint := flag.String("otlp-endpoint", "localhost:4318", "OTLP HTTP receiver, host:port (LOTUS_OTEL_EXPORTER_ENDPOINT)")
	service := flag.String("service", "curio", "service.name")
	requestID := flag.String("request-id", "", "request id of the proof (required)")
	constraints := flag.Uint64("constraints", 1024, "constraints of the mulchain circuit")
	plain := flag.Bool("plain-otelgrpc", false, "use otelgrpc.NewClientHandler() with its defaults (the unset globals)")
	proverClient := flag.Bool("prover-client", false, "call the daemon through prover/client given Lotus's tracer provider instead")
	flag.Parse()
	if err := run(*addr, *endpoint, *service, *requestID, *constraints, *plain, *proverClient); err != nil {
		fmt.Fprintln(os.Stderr, "lotustask:", err)
		os.Exit(1)
	}
}

// setupTracing is Lotus's setup (lib/tracing/setup.go, SetupOTLPTracing,
// line for line but for reading the flags instead of
// LOTUS_OTEL_EXPORTER_ENDPOINT and _INSECURE): it returns the provider and
// sets no global.
func setupTracing(ctx context.Context, endpoint, service string) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithInsecure())
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceNameKey.String(service))),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	opencensus.InstallTraceBridge(opencensus.WithTracerProvider(tp))
	return tp, nil
}

func run(addr, endpoint, service, requestID string, constraints uint64, plain, proverClient bool) (err error) {
	if requestID == "" {
		return errors.New("-request-id is required")
	}
	ctx := context.Background()
	tp, err := setupTracing(ctx, endpoint, service)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = errors.Join(err, tp.Shutdown(sctx))
	}()

	prove := func(ctx context.Context, req *cuzkv1.SubmitProofRequest) (traceID string, err error) {
		if proverClient {
			// docs/curio.md, "Switch to prover/client".
			c, err := client.Dial(addr, client.WithTracerProvider(tp))
			if err != nil {
				return "", err
			}
			defer c.Close()
			res, err := c.Prove(ctx, client.Request{RequestID: req.RequestId, Circuit: req.Circuit,
				Constraints: req.Constraints, Verify: req.Verify})
			if err != nil {
				return "", err
			}
			return res.TraceID, nil
		}
		// The documented lines (docs/curio.md, "Keep Curio's own client").
		handler := otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tp),
			otelgrpc.WithPropagators(propagation.TraceContext{}),
		)
		if plain {
			handler = otelgrpc.NewClientHandler()
		}
		// Curio's lib/cuzk client: a dns:/// target and large messages.
		conn, err := grpc.NewClient("dns:///"+addr,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)),
			grpc.WithStatsHandler(handler),
		)
		if err != nil {
			return "", err
		}
		defer conn.Close()
		res, err := cuzkv1.NewProvingEngineClient(conn).Prove(ctx, &cuzkv1.ProveRequest{Submit: req})
		if err == nil && res.GetResult().GetStatus() != cuzkv1.AwaitProofResponse_COMPLETED {
			err = fmt.Errorf("proof %s: %s", res.GetResult().GetStatus(), res.GetResult().GetErrorMessage())
		}
		return res.GetResult().GetTraceId(), err
	}

	ctx, task := octrace.StartSpan(ctx, "harmonytask.WdPost")
	daemonTrace, err := prove(ctx, &cuzkv1.SubmitProofRequest{
		RequestId: requestID, Circuit: "mulchain", Constraints: constraints,
		Priority: cuzkv1.Priority_NORMAL, Verify: true,
	})
	task.End()
	if err != nil {
		return fmt.Errorf("prove: %w", err)
	}
	tid := task.SpanContext().TraceID
	fmt.Printf("task trace %s\n", hex.EncodeToString(tid[:]))
	fmt.Printf("daemon trace %s\n", daemonTrace)
	return nil
}
