package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/engine"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "cancel",
		Usage: "cancel a daemon's job by its request id",
		Description: "Calls CancelProof on the daemon at --addr for the job of --request-id: a\n" +
			"queued job is removed, a running one has its context cancelled. Prints the\n" +
			"job id and its state after the call.",
		Flags: daemonFlags(10*time.Second, "longest wait for the answer",
			&cli.StringFlag{Name: "request-id", Usage: "the request id the job was submitted with (required)"},
		),
		Action: func(c *cli.Context) error { return oneLine(cancelAction(c)) },
	})
}

func cancelAction(c *cli.Context) error {
	rid := c.String("request-id")
	if rid == "" {
		return fmt.Errorf("cancel: --request-id is required")
	}
	cl, ctx, done, err := dialDaemon(c)
	if err != nil {
		return err
	}
	defer done()
	job, st, err := cancelRequest(ctx, cl, rid)
	if what, ask, ok := unreachable(err, daemonAddr(c)); ok {
		return fmt.Errorf("cancel %s: %s; nothing was cancelled%s", rid, what, askServe(ask))
	}
	if err != nil {
		return fmt.Errorf("cancel %s at %s: %w", rid, daemonAddr(c), err)
	}
	if st == client.Cancelled {
		fmt.Fprintf(c.App.Writer, "cancelled job %s (request %s), now %s\n", job, rid, st)
		return nil
	}
	// A running step ends when its runner returns: the job is not
	// cancelled yet, it is being stopped.
	fmt.Fprintf(c.App.Writer, "cancelling job %s (request %s): it is being stopped (%s until its running step returns; cuzk status shows when it ends)\n", job, rid, st)
	return nil
}

// cancelRequest cancels the job of rid; its errors say in words what the
// daemon's codes mean for a request id (cancel and an interrupted submit).
func cancelRequest(ctx context.Context, cl *client.Client, rid string) (string, client.JobStatus, error) {
	job, st, err := cl.CancelRequest(ctx, rid)
	if err == nil {
		return job, st, nil
	}
	s, _ := status.FromError(err)
	switch s.Code() {
	case codes.NotFound:
		return "", "", fmt.Errorf("the daemon has no job of request id %q", rid)
	case codes.FailedPrecondition:
		// "job already finished: job-1 is SUCCEEDED" would say the same
		// thing twice.
		return "", "", fmt.Errorf("the job already ended: %s", strings.TrimPrefix(s.Message(), engine.ErrJobFinished.Error()+": "))
	case codes.DeadlineExceeded:
		return "", "", fmt.Errorf("no answer in time")
	}
	if _, _, ok := unreachable(err, ""); ok {
		return "", "", err // the caller says it in words
	}
	return "", "", rpcError(err)
}
