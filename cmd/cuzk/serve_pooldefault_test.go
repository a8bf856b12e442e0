package main

import (
	"context"
	"io"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/logtest"
	"github.com/otelcuzk/otelcuzk/prover/client"
)

// `cuzk serve` without --release pools its proofs' buffers: after one
// proof the daemon reports release mode pool, a limit, and the buffers it
// keeps for the next proof; the start line says the pools' bound.
func TestServeReleasesToAPoolByDefault(t *testing.T) {
	clearOTLPEnv(t)
	dir := t.TempDir()
	t.Setenv("CUZK_CACHE_DIR", filepath.Join(dir, "cache"))
	t.Setenv("CUZK_STATE_DIR", filepath.Join(dir, "state"))
	var logBuf logtest.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = io.Discard, &logBuf
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- app.RunContext(ctx, []string{"cuzk", "serve", "--listen", "127.0.0.1:0", "--metrics-listen", "",
			"--backend", "cpu", "--trace-file", filepath.Join(dir, "trace.jsonl")})
	}()
	re := regexp.MustCompile(`listening on (\S+)`)
	var addr string
	for addr == "" {
		if m := re.FindStringSubmatch(logBuf.String()); m != nil {
			addr = m[1]
			break
		}
		select {
		case err := <-served:
			t.Fatalf("serve ended early: %v\n%s", err, logBuf.String())
		case <-ctx.Done():
			t.Fatalf("serve did not start:\n%s", logBuf.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Prove(ctx, client.Request{RequestID: "pool-default", Circuit: "mulchain", Constraints: 4096}); err != nil {
		t.Fatalf("prove: %v\n%s", err, logBuf.String())
	}
	// The buffers reach the pool after the answer: wait for them.
	var st *client.Status
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st, err = c.Status(ctx); err != nil {
			t.Fatal(err)
		}
		if st.Memory.PoolHeld > 0 || st.Memory.ReleaseMode != "pool" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m := st.Memory; m.ReleaseMode != "pool" || m.PoolLimit == 0 || m.PoolHeld == 0 {
		t.Errorf("default release: mode %q, pool limit %d, held %d; want pool with a limit and the proof's buffers held", m.ReleaseMode, m.PoolLimit, m.PoolHeld)
	}
	if !regexp.MustCompile(`buffer pools? [0-9.]+ [KMGT]iB`).MatchString(logBuf.String()) {
		t.Errorf("the start line does not state the pools' bound:\n%s", logBuf.String())
	}
	cancel()
	<-served
}
