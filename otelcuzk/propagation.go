package otelcuzk

import (
	"context"
	"go.opentelemetry.io/otel"
	"os"
	"strings"

	"go.opentelemetry.io/otel/propagation"
)

// Environment variables that carry trace context to a child process
// (OpenTelemetry specification, "Environment Variables as Context
// Propagation Carriers").
const (
	EnvTraceparent = "TRACEPARENT"
	EnvTracestate  = "TRACESTATE"
	EnvBaggage     = "BAGGAGE"
)

// envPropagator is fixed, not the global one: the variables' format is W3C
// whatever the process installed.
var envPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// ContextWithEnvTraceparent returns ctx carrying the remote span context of
// the TRACEPARENT (and TRACESTATE, BAGGAGE) environment variables, so spans
// started from it join the parent process's trace. A missing or malformed
// TRACEPARENT returns ctx unchanged (a new trace starts), as W3C Trace
// Context prescribes.
func ContextWithEnvTraceparent(ctx context.Context) context.Context {
	carrier := propagation.MapCarrier{}
	for _, name := range []string{EnvTraceparent, EnvTracestate, EnvBaggage} {
		if v := os.Getenv(name); v != "" {
			carrier[strings.ToLower(name)] = v
		}
	}
	if len(carrier) == 0 {
		return ctx
	}
	return envPropagator.Extract(ctx, carrier)
}

// EnvWithTraceparent returns a copy of env (KEY=value entries, as os.Environ
// gives) with TRACEPARENT, TRACESTATE and BAGGAGE set from ctx's span
// context and baggage, for a child process (exec.Cmd.Env). When ctx carries
// a valid span context, earlier entries of those three names are removed;
// when it carries none, env is returned unchanged (copied), so an inherited
// context still passes through.
func EnvWithTraceparent(ctx context.Context, env []string) []string {
	carrier := propagation.MapCarrier{}
	envPropagator.Inject(ctx, carrier)
	out := make([]string, 0, len(env)+3)
	if carrier.Get("traceparent") == "" {
		return append(out, env...)
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name == EnvTraceparent || name == EnvTracestate || name == EnvBaggage {
			continue
		}
		out = append(out, kv)
	}
	for _, name := range []string{EnvTraceparent, EnvTracestate, EnvBaggage} {
		if v := carrier.Get(strings.ToLower(name)); v != "" {
			out = append(out, name+"="+v)
		}
	}
	return out
}

// TextMapPropagator returns the global propagator, or W3C TraceContext and
// Baggage when the global is still the no-op default. Lotus and Curio
// install W3C trace context; a client or server that silently used the
// no-op would drop its callers' trace context and split every trace.
func TextMapPropagator() propagation.TextMapPropagator {
	if p := otel.GetTextMapPropagator(); len(p.Fields()) > 0 {
		return p
	}
	return envPropagator
}
