package e2e

import (
	"fmt"
	"regexp"
	"testing"
	"time"
)

func lotustaskBin(t testing.TB) string {
	return program(t, "OTELCUZK_LOTUSTASK_BIN", "lotustask", ".", "./cmd/lotustask")
}

var lotusTraces = regexp.MustCompile(`task trace ([0-9a-f]{32})\ndaemon trace ([0-9a-f]{32})`)

// TestLotusStyleClientJoinsWithDocumentedLines: a program set up exactly as
// Lotus sets up tracing (OTLP HTTP, OpenCensus bridge, no globals) starts
// an OpenCensus task span and calls the daemon through its own plain gRPC
// client with the lines docs/curio.md documents (Curio's dns:/// target),
// and again through prover/client given the same provider (the other way
// docs/curio.md shows). Each time Jaeger holds one trace: the task span at
// the root, the client span under it, the daemon's server span under that
// and engine.job under the server span. With
// otelgrpc's defaults instead (the globals Lotus leaves unset) the daemon's
// proof is a trace of its own, which is why the lines are needed.
func TestLotusStyleClientJoinsWithDocumentedLines(t *testing.T) {
	j, d, daemonService, stamp := startTracedDaemon(t)
	lotusService := fmt.Sprintf("e2e-lotus-%d", stamp)
	prove := func(requestID string, extra ...string) (task, daemon string) {
		args := append([]string{"-addr", d.Addr, "-otlp-endpoint", j.OTLPHTTP, "-service", lotusService,
			"-request-id", requestID, "-constraints", fmt.Sprint(e2eConstraints)}, extra...)
		out, _ := runProgram(t, 3*time.Minute, nil, lotustaskBin(t), args...)
		m := lotusTraces.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("lotustask printed no trace ids:\n%s", out)
		}
		return m[1], m[2]
	}

	for _, way := range []struct{ name, flag string }{
		{"own client with the documented lines", ""},
		{"prover/client", "-prover-client"},
	} {
		var extra []string
		if way.flag != "" {
			extra = append(extra, way.flag)
		}
		task, daemon := prove(fmt.Sprintf("lotus-%d%s", stamp, way.flag), extra...)
		if task != daemon {
			t.Errorf("%s: the daemon traced the proof in %s, not in the task's trace %s", way.name, daemon, task)
			continue
		}
		st := newSpanTree(traceOf(t, j, task, "harmonytask.WdPost", "cuzk.v1.ProvingEngine/Prove", "engine.job"))
		job := st.one(t, "engine.job")
		server := st.byID[job.ParentID]
		client := st.byID[server.ParentID]
		root := st.byID[client.ParentID]
		for _, c := range []struct {
			what, name, service, gotName, gotService string
		}{
			{"engine.job's parent", "cuzk.v1.ProvingEngine/Prove", daemonService, server.Name, server.Service},
			{"the server span's parent", "cuzk.v1.ProvingEngine/Prove", lotusService, client.Name, client.Service},
			{"the client span's parent", "harmonytask.WdPost", lotusService, root.Name, root.Service},
		} {
			if c.gotName != c.name || c.gotService != c.service {
				t.Errorf("%s: %s is %q of %q, want %q of %q", way.name, c.what, c.gotName, c.gotService, c.name, c.service)
			}
		}
		if root.ParentID != "" {
			t.Errorf("%s: the task span has parent %s, want the root", way.name, root.ParentID)
		}
	}

	task, daemon := prove(fmt.Sprintf("lotus-plain-%d", stamp), "-plain-otelgrpc")
	if task == daemon {
		t.Errorf("with otelgrpc's defaults and no globals the proof still joined the task's trace %s: docs/curio.md's reason is wrong", task)
	}
}
