package daemon

import (
	"fmt"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/engine"
)

// CancelGrace is how long a proof cancelled at shutdown may take to stop
// before its job is abandoned (engine.WithCancelGrace).
const CancelGrace = time.Second

// RPCGrace is how long, once the engine is done, the gRPC server may take
// to write the answers of the waiting calls before it closes them (the
// server's stop grace).
const RPCGrace = 5 * time.Second

// ShutdownBound is the longest a daemon takes from the end of Run's
// context to Run's return: running proofs get shutdownTimeout, cancelled
// ones CancelGrace to stop, the calls waiting on abandoned ones RPCGrace,
// then the span flush gets the OTLP export timeout plus
// otelcuzk.ShutdownMargin, whatever the endpoint does (refuse, or accept
// and never answer).
func ShutdownBound(shutdownTimeout, exportTimeout time.Duration) time.Duration {
	return shutdownTimeout + CancelGrace + RPCGrace + exportTimeout + otelcuzk.ShutdownMargin
}

// shutdownSummary is the daemon's last line: how the jobs since start
// ended, counting those abandoned at shutdown (their runner ignored the
// cancellation past CancelGrace; they are still listed as running).
func shutdownSummary(st engine.Status) string {
	return fmt.Sprintf("cuzk serve: stopped: %d proof%s succeeded, %d failed, %d cancelled, %d abandoned at shutdown",
		st.Succeeded, human.Plural(int(st.Succeeded)), st.Failed, st.Cancelled, len(st.Running))
}
