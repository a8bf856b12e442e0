package main

import (
	"fmt"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/engine"
)

// cancelGrace is how long a proof cancelled at shutdown may take to stop
// before its job is abandoned (engine.WithCancelGrace in serve).
const cancelGrace = time.Second

// rpcGrace is how long, once the engine is done, the gRPC server may take
// to write the answers of the waiting calls before it closes them (the
// server's stop grace).
const rpcGrace = 5 * time.Second

// shutdownBound is the longest `cuzk serve` takes from SIGTERM to exit:
// running proofs get shutdownTimeout, cancelled ones cancelGrace to stop,
// the calls waiting on abandoned ones rpcGrace, then the span flush gets
// the OTLP export timeout plus otelcuzk.ShutdownMargin, whatever the
// endpoint does (refuse, or accept and never answer).
func shutdownBound(shutdownTimeout, exportTimeout time.Duration) time.Duration {
	return shutdownTimeout + cancelGrace + rpcGrace + exportTimeout + otelcuzk.ShutdownMargin
}

// shutdownHelp states the bound for `cuzk serve --help`.
var shutdownHelp = fmt.Sprintf("SIGTERM or SIGINT: stop accepting, let running proofs finish for\n"+
	"--shutdown-timeout, cancel the rest (%v to stop, else abandoned), answer the calls\n"+
	"(up to %v), flush spans (the OTLP export timeout, OTEL_EXPORTER_OTLP_TIMEOUT,\n"+
	"default %v, plus %v), exit 0. So the exit comes within --shutdown-timeout + %v.",
	cancelGrace, rpcGrace, otelcuzk.DefaultExportTimeout, otelcuzk.ShutdownMargin,
	shutdownBound(0, otelcuzk.DefaultExportTimeout))

// shutdownSummary is the daemon's last line: how the jobs since start
// ended, counting those abandoned at shutdown (their runner ignored the
// cancellation past cancelGrace; they are still listed as running).
func shutdownSummary(st engine.Status) string {
	return fmt.Sprintf("cuzk serve: stopped: %d proofs succeeded, %d failed, %d cancelled, %d abandoned at shutdown",
		st.Succeeded, st.Failed, st.Cancelled, len(st.Running))
}
