package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/priority"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

// heldRunner proves once gate is closed (or its context ends).
type heldRunner struct{ gate chan struct{} }

func (r *heldRunner) Run(ctx context.Context, req *prover.Request) (*prover.Result, error) {
	select {
	case <-r.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &prover.Result{Proof: []byte("proof"), Backend: "held", Verified: req.Verify}, nil
}

// Against a daemon whose one worker is held by another job, submit says
// its job is QUEUED with its place, then RUNNING, then SUCCEEDED.
func TestSubmitSaysQueuedBehindAHeldJob(t *testing.T) {
	clearOTLPEnv(t)
	fast := statePoll
	t.Cleanup(func() { statePoll = fast })
	statePoll = 5 * time.Millisecond
	run := &heldRunner{gate: make(chan struct{})}
	eng, err := engine.New([]engine.Worker{{Name: "w0", Runner: run}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Shutdown(context.Background()) })
	srv, err := server.New(eng, server.WithKnownCircuit(func(c string) bool { return c == "mulchain" }))
	if err != nil {
		t.Fatal(err)
	}
	addr := serveEngine(t, srv)
	held, err := eng.Submit(context.Background(), &prover.Request{RequestID: "held", Circuit: "mulchain", Constraints: 16, Priority: priority.Normal})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, _, err := runCuzk(t, "submit", "--addr", addr, "--request-id", "behind", "--circuit", "mulchain", "--constraints", "16")
		done <- result{out, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if w := eng.Status().Waiting; len(w) == 1 && w[0].RequestID == "behind" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the submitted job never queued: %+v", eng.Status())
		}
	}
	time.Sleep(50 * time.Millisecond) // polls that see it queued
	if eng.Job(held.ID).State != engine.StateRunning {
		t.Fatalf("the held job is %v", eng.Job(held.ID).State)
	}
	close(run.gate)
	r := <-done
	if r.err != nil {
		t.Fatalf("submit: %v\n%s", r.err, r.out)
	}
	var states []string
	for _, line := range strings.Split(r.out, "\n") {
		if rest, ok := strings.CutPrefix(line, "state     "); ok {
			states = append(states, rest)
		}
	}
	got := strings.Join(states, "; ")
	if !strings.HasPrefix(got, "QUEUED, position 1 of 1; ") || !strings.HasSuffix(got, "SUCCEEDED") {
		t.Errorf("states printed: %s, want QUEUED, position 1 of 1 first and SUCCEEDED last\n%s", got, r.out)
	}
}
