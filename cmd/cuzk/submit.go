package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/client"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "submit",
		Usage: "send a proof request to a daemon and wait for the proof",
		Description: "Calls Prove on the daemon at --addr and prints the job id, the trace id,\n" +
			"the timings and the verifier's verdict. With OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT\n" +
			"set, the call itself is traced and the daemon's spans join its trace.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: defaultListen, Usage: "daemon address (host:port)"},
			&cli.StringFlag{Name: "circuit", Value: "mulchain", Usage: "registered circuit"},
			&cli.Uint64Flag{Name: "constraints", Value: 1 << 10, Usage: "R1CS constraints of a built-in circuit"},
			&cli.StringFlag{Name: "priority", Value: "NORMAL", Usage: "LOW|NORMAL|HIGH|CRITICAL"},
			&cli.StringFlag{Name: "request-id", Usage: "idempotency key (default: a fresh one)"},
			&cli.StringFlag{Name: "witness", Usage: "file with a full witness in gnark's binary format (default: the circuit's sample)"},
			&cli.BoolFlag{Name: "verify", Value: true, Usage: "have the daemon verify the proof with gnark's verifier"},
			&cli.StringFlag{Name: "proof", Usage: "write the proof here"},
			&cli.StringFlag{Name: "miner", Usage: "filecoin.miner.id to record"},
			&cli.Int64Flag{Name: "sector", Usage: "filecoin.sector.number to record"},
			&cli.Int64Flag{Name: "task-id", Usage: "curio.task.id to record"},
			&cli.StringFlag{Name: "task-name", Usage: "curio.task.name to record"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Usage: "longest wait for the proof"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"CUZK_TOKEN"}, Usage: "bearer token"},
			&cli.StringFlag{Name: "tls-ca", Usage: "CA certificate (PEM) of a TLS daemon; turns TLS on"},
		},
		Action: func(c *cli.Context) error { return oneLine(submitAction(c)) },
	})
}

func submitAction(c *cli.Context) error {
	prio, err := client.ParsePriority(strings.ToUpper(c.String("priority")))
	if err != nil {
		return err
	}
	req := client.Request{
		RequestID: c.String("request-id"), Circuit: c.String("circuit"), Constraints: c.Uint64("constraints"),
		Priority: prio, Verify: c.Bool("verify"), MinerID: c.String("miner"), SectorNumber: c.Int64("sector"),
		TaskID: c.Int64("task-id"), TaskName: c.String("task-name"),
	}
	if req.RequestID == "" {
		req.RequestID = fmt.Sprintf("submit-%d", time.Now().UnixNano())
	}
	if d := c.Duration("timeout"); d <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration", d)
	}
	// Check where the proof goes before the daemon spends time on it.
	var proofOut *atomicFile
	if path := c.String("proof"); path != "" {
		if proofOut, err = newAtomicFile(path); err != nil {
			return fmt.Errorf("proof file %s: %w", path, err)
		}
	}
	if path := c.String("witness"); path != "" {
		if req.Witness, err = os.ReadFile(path); err != nil {
			return fmt.Errorf("witness: %w", err)
		}
	}
	var opts []client.Option
	if tok := c.String("token"); tok != "" {
		opts = append(opts, client.WithBearerToken(tok))
	}
	if ca := c.String("tls-ca"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return fmt.Errorf("tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("tls-ca %s: no PEM certificate", ca)
		}
		opts = append(opts, client.WithTLS(&tls.Config{RootCAs: pool}))
	}

	ctx := c.Context
	// Trace the call only when an OTLP endpoint is configured: a trace file
	// per submit in the working directory would be litter.
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		topts := []otelcuzk.Option{otelcuzk.WithLogWriter(c.App.ErrWriter)}
		if os.Getenv("OTEL_SERVICE_NAME") == "" {
			topts = append(topts, otelcuzk.WithServiceName("cuzk-submit"))
		}
		shutdown, err := otelcuzk.Setup(ctx, topts...)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		defer shutdown(context.Background())
	}
	// A caller that runs submit from a traced script passes its span in
	// TRACEPARENT; the proof then joins the caller's trace.
	ctx = otelcuzk.ContextWithEnvTraceparent(ctx)
	cl, err := client.Dial(c.String("addr"), opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
	defer cancel()

	res, err := cl.Prove(ctx, req)
	out := c.App.Writer
	if err != nil {
		st, _ := status.FromError(err)
		msg := fmt.Sprintf("submit %s: %s: %s", req.RequestID, st.Code(), st.Message())
		if res != nil {
			msg += fmt.Sprintf(" (job %s, trace %s)", res.JobID, res.TraceID)
		}
		if code := st.Code(); code == codes.DeadlineExceeded || code == codes.Canceled && ctx.Err() != nil {
			msg += fmt.Sprintf("; the daemon keeps proving: submit again with --request-id %s to wait for the same job", req.RequestID)
		}
		return errors.New(msg)
	}
	fmt.Fprintf(out, "job       %s (request %s) on %s, backend %s\n", res.JobID, res.RequestID, res.Worker, res.Backend)
	fmt.Fprintf(out, "trace     %s\n", res.TraceID)
	t := res.Timings
	fmt.Fprintf(out, "timings   queue %s  keys %s  synthesis %s  prove %s  serialize %s  verify %s  total %s\n",
		msStr(t.QueueWait), msStr(t.KeyLoad), msStr(t.Synthesis), msStr(t.Prove), msStr(t.Serialize), msStr(t.Verify), msStr(t.Total))
	switch {
	case !req.Verify:
		fmt.Fprintln(out, "verified  not asked (--verify=false)")
	case res.Verified:
		fmt.Fprintln(out, "verified  true (gnark groth16.Verify in the daemon)")
	default:
		return fmt.Errorf("submit %s: the daemon's verifier rejected the proof (job %s, trace %s)", req.RequestID, res.JobID, res.TraceID)
	}
	if proofOut != nil {
		if err := proofOut.commit(res.Proof); err != nil {
			return fmt.Errorf("proof file %s: %w", proofOut.path, err)
		}
		fmt.Fprintf(out, "proof     %s (%d bytes)\n", proofOut.path, len(res.Proof))
	}
	return nil
}

func msStr(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}
