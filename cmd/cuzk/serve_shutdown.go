package main

import (
	"fmt"

	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
)

// shutdownHelp states the daemon's shutdown bound (daemon.ShutdownBound)
// for `cuzk serve --help`.
var shutdownHelp = fmt.Sprintf("SIGTERM or SIGINT: stop accepting, let running proofs finish for\n"+
	"--shutdown-timeout, cancel the rest (%v to stop, else abandoned), answer the calls\n"+
	"(up to %v), flush spans (the OTLP export timeout, OTEL_EXPORTER_OTLP_TIMEOUT,\n"+
	"default %v, plus %v), exit 0. So the exit comes within --shutdown-timeout + %v.",
	daemon.CancelGrace, daemon.RPCGrace, otelcuzk.DefaultExportTimeout, otelcuzk.ShutdownMargin,
	daemon.ShutdownBound(0, otelcuzk.DefaultExportTimeout))
