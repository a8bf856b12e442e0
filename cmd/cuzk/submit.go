package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/consensys/gnark/logger"
	"github.com/urfave/cli/v2"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/internal/interrupt"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "submit",
		Usage: "send a proof request to a daemon and wait for the proof",
		Description: "Calls Prove on the daemon at --addr and prints each stage it sees the job in\n" +
			"(QUEUED with its position among the jobs not started, or waiting for the memory\n" +
			"budget; SYNTHESIZING, WAITING_DEVICE, PROVING, or RUNNING on a serial daemon;\n" +
			"read from GetStatus every 200 ms for 5 s, then every second: it may miss a\n" +
			"shorter stage, the timings line has them all), the final state, then\n" +
			"the job id, the trace id, the timings and the verifier's verdict. A request id\n" +
			"the daemon knows returns that earlier job (submit says so), or ALREADY_EXISTS\n" +
			"when that job had other parameters. --witness more than once, or --partitions\n" +
			"N, asks for a multi-partition proof: one proof per partition. With\n" +
			"OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT set, the call itself is traced and the\n" +
			"daemon's spans join its trace. Ctrl-C (SIGINT) or SIGTERM cancels the job on the\n" +
			"daemon (CancelProof by request id, 5 s at most), prints the outcome and exits\n" +
			"130. An --addr without a port gets :" + defaultPort + ".",
		Flags: daemonFlags(10*time.Minute, "longest wait for the proof",
			// prove's defaults: the proof of the README's first command,
			// whose key `cuzk prove` left in the cache the daemon reads.
			&cli.StringFlag{Name: "circuit", Value: "merkle", Usage: "registered circuit (built-in: " + strings.Join(circuits.Names(), "|") + ", or one of the daemon's --circuit-file)"},
			&cli.Int64Flag{Name: "constraints", Value: defaultConstraints, Usage: "R1CS constraints of a built-in circuit"},
			&cli.StringFlag{Name: "priority", Value: "NORMAL", Usage: "LOW|NORMAL|HIGH|CRITICAL"},
			&cli.StringFlag{Name: "request-id", Usage: "idempotency key (default: a fresh one)"},
			&cli.StringSliceFlag{Name: "witness", Usage: "file with a full witness in gnark's binary format (default: the circuit's sample); repeated: one partition each"},
			&cli.IntFlag{Name: "partitions", Usage: "partitions of the built-in sample witness (a multi-partition proof); with --witness: must match their number"},
			&cli.BoolFlag{Name: "verify", Value: true, Usage: "have the daemon verify the proof with gnark's verifier"},
			&cli.StringFlag{Name: "proof", Usage: "write the proof here"},
			&cli.StringFlag{Name: "miner", Usage: "filecoin.miner.id to record"},
			&cli.Int64Flag{Name: "sector", Usage: "filecoin.sector.number to record"},
			&cli.Int64Flag{Name: "task-id", Usage: "curio.task.id to record"},
			&cli.StringFlag{Name: "task-name", Usage: "curio.task.name to record"},
		),
		Action: func(c *cli.Context) error { return oneLine(submitAction(c)) },
	})
}

func submitAction(c *cli.Context) error {
	prio, err := client.ParsePriority(strings.ToUpper(c.String("priority")))
	if err != nil {
		return err
	}
	// Signed, so -1 is refused in prove's words, not as a flag parse error.
	n := c.Int64("constraints")
	if n < 0 {
		return fmt.Errorf("%w: %d (must be positive: want 1 to 2^32 = %d)", circuits.ErrBadConstraints, n, uint64(circuits.MaxConstraints))
	}
	// Before any dial, naming the flag: the client refused a negative
	// sector only once connected ("client: sector number -1 is negative").
	for _, f := range []string{"sector", "task-id"} {
		if v := c.Int64(f); v < 0 {
			return fmt.Errorf("--%s %d: must be 0 or more (0 to 2^63-1 = %d)", f, v, int64(math.MaxInt64))
		}
	}
	// Any circuit's count above circuits.MaxConstraints is refused here,
	// in the daemon's words, before any dial (it was sent, to be refused).
	if err := circuits.CheckMax(uint64(n)); err != nil {
		return err
	}
	// A built-in's size is checked here, as prove checks it, before any
	// dial: --constraints 0 waited on a daemon that is not there, to be
	// refused by one that is. A circuit this binary does not know (the
	// daemon's --circuit-file) is the daemon's to check.
	if _, err := circuits.LookupBuiltin(c.String("circuit")); err == nil {
		logger.Disable() // merkle's and porep's checks compile a small instance: no gnark log lines
		if err := circuits.CheckSize(c.String("circuit"), int(n)); err != nil {
			return err
		}
	}
	req := client.Request{
		RequestID: c.String("request-id"), Circuit: c.String("circuit"), Constraints: uint64(n),
		Priority: prio, Verify: c.Bool("verify"), MinerID: c.String("miner"), SectorNumber: c.Int64("sector"),
		TaskID: c.Int64("task-id"), TaskName: c.String("task-name"),
	}
	// gRPC refuses to marshal a string that is not UTF-8, in words that
	// name no flag ("Internal: grpc: error while marshaling: ...").
	for _, f := range []string{"request-id", "circuit", "miner", "task-name"} {
		if v := c.String(f); !utf8.ValidString(v) {
			return fmt.Errorf("--%s %q: not valid UTF-8", f, v)
		}
	}
	if req.RequestID == "" {
		req.RequestID = fmt.Sprintf("submit-%d", time.Now().UnixNano())
	}
	ui, err := jaegerUI()
	if err != nil {
		return err
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
	if err := readPartitions(&req, c.StringSlice("witness"), c.Int("partitions")); err != nil {
		return err
	}
	opts, err := clientOptions(c)
	if err != nil {
		return err
	}

	// The first SIGINT or SIGTERM ends the wait and cancels the job; a
	// second one quits at once (interrupt.Context).
	ctx, stopSignals := interrupt.Context(c.Context)
	defer stopSignals()
	interrupted := ctx
	// Trace the call only when an OTLP endpoint is configured: a trace file
	// per submit in the working directory would be litter.
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		topts := []otelcuzk.Option{otelcuzk.WithLogWriter(c.App.ErrWriter)}
		if os.Getenv("OTEL_SERVICE_NAME") == "" {
			topts = append(topts, otelcuzk.WithServiceName(submitServiceName))
		}
		tel, err := otelcuzk.New(ctx, topts...)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		defer tel.Shutdown(context.Background())
		// Nothing listening there would lose the call's spans after the
		// proof, said only as an export failure: refused first, as prove
		// refuses it.
		if err := probeOTLPEndpoint(ctx, tel, "to submit without tracing the call (the daemon traces the proof to its own destination)"); err != nil {
			return err
		}
		// A UI's port or the other transport's would lose the call's
		// spans without an error: said before anything is submitted.
		if err := tel.ProbeProtocol(ctx, time.Second); err != nil {
			return err
		}
	}
	// A caller that runs submit from a traced script passes its span in
	// TRACEPARENT; the proof then joins the caller's trace.
	ctx = otelcuzk.ContextWithEnvTraceparent(ctx)
	cl, err := client.Dial(daemonAddr(c), opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
	defer cancel()

	out := c.App.Writer
	// The stage polls are not part of the proof's trace: their own client,
	// untraced, with a context that carries no span.
	poll, err := client.Dial(daemonAddr(c), append(opts, client.WithTracerProvider(noop.NewTracerProvider()))...)
	if err != nil {
		return err
	}
	defer poll.Close()
	res, answered, err := submitAndAwait(ctx, cl, poll, req, out)
	if err != nil && interrupted.Err() != nil {
		return cancelInterrupted(ctx, cl, req.RequestID, daemonAddr(c), answered)
	}
	if err != nil {
		st, _ := status.FromError(err)
		if !answered && ctx.Err() != nil {
			return fmt.Errorf("submit %s: the daemon at %s did not answer within --timeout %v: nothing was submitted (is it a cuzk daemon, with TLS if it uses TLS?)",
				req.RequestID, daemonAddr(c), c.Duration("timeout"))
		}
		if !answered && st.Code() == codes.Unavailable {
			what, ask, ok := unreachable(err, daemonAddr(c))
			if !ok {
				what = fmt.Sprintf("no daemon answers at %s: UNAVAILABLE: %s", daemonAddr(c), st.Message())
			}
			return fmt.Errorf("submit %s: %s; nothing was submitted%s", req.RequestID, what, askServe(ask))
		}
		if answered && st.Code() == codes.Unavailable {
			// The daemon took the request and went away during the job
			// (stopped by a second signal, killed, or the connection
			// broke): gRPC's words are its transport's ("closing transport
			// due to: ... received prior goaway: ... graceful_stop").
			how := "the connection to it broke"
			if strings.Contains(st.Message(), "goaway") {
				how = "it shut down"
			}
			return fmt.Errorf("submit %s: the daemon at %s stopped answering during the job (%s); the proof was not made: submit again with --request-id %s once cuzk serve runs there",
				req.RequestID, daemonAddr(c), how, req.RequestID)
		}
		msg := fmt.Sprintf("submit %s: %v", req.RequestID, rpcError(err))
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
	if link := jaegerTraceURL(ui, res.TraceID); link != "" {
		fmt.Fprintf(out, "jaeger    %s\n", link)
	}
	t := res.Timings
	fmt.Fprintf(out, "timings   queue %s  memory %s  keys %s  synthesis %s  device wait %s  prove %s  serialize %s  verify %s  total %s\n",
		msStr(t.QueueWait), msStr(t.MemoryWait), msStr(t.KeyLoad), msStr(t.Synthesis), msStr(t.DeviceWait),
		msStr(t.Prove), msStr(t.Serialize), msStr(t.Verify), msStr(t.Total))
	for _, p := range res.Partitions {
		fmt.Fprintf(out, "partition %d  proof %d bytes  synthesis %s  device wait %s  prove %s\n",
			p.Index, len(p.Proof), msStr(p.Timings.Synthesis), msStr(p.Timings.DeviceWait), msStr(p.Timings.Prove))
	}
	switch {
	case !req.Verify:
		fmt.Fprintln(out, "verified  not asked (--verify=false)")
	case res.Verified:
		fmt.Fprintln(out, "verified  true (gnark groth16.Verify in the daemon)")
	default:
		return fmt.Errorf("submit %s: the daemon's verifier rejected the proof (job %s, trace %s)", req.RequestID, res.JobID, res.TraceID)
	}
	if proofOut != nil {
		proof := res.Proof
		if len(res.Partitions) > 1 {
			// One file of the partitions' proofs in order, each with its
			// length first (4 bytes, big endian).
			proof = nil
			for _, p := range res.Partitions {
				proof = binary.BigEndian.AppendUint32(proof, uint32(len(p.Proof)))
				proof = append(proof, p.Proof...)
			}
		}
		if err := proofOut.commit(proof); err != nil {
			return fmt.Errorf("proof file %s: %w", proofOut.path, err)
		}
		fmt.Fprintf(out, "proof     %s (%d bytes)\n", proofOut.path, len(proof))
	}
	return nil
}

// cancelOnInterruptTimeout bounds the CancelProof of an interrupted
// submit: Ctrl-C must not hang on a daemon that stopped answering.
const cancelOnInterruptTimeout = 5 * time.Second

// exitInterrupted is the exit status of a submit ended by SIGINT or
// SIGTERM, the shell's 128+SIGINT.
const exitInterrupted = 130

// cancelInterrupted cancels the job of an interrupted submit (by request
// id: the Prove call never returned a job id) and returns its one-line
// outcome as an error of exit status 130. answered false: the daemon never
// answered, so no job was made and none is cancelled.
func cancelInterrupted(ctx context.Context, cl *client.Client, rid, addr string, answered bool) error {
	if !answered {
		return cli.Exit(fmt.Sprintf("submit %s: interrupted before the daemon at %s answered: nothing was submitted", rid, addr), exitInterrupted)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelOnInterruptTimeout)
	defer cancel()
	job, st, err := cancelRequest(cctx, cl, rid)
	if err != nil {
		return cli.Exit(fmt.Sprintf("submit %s: interrupted; cancel failed (%v): a job of it, if any, goes on: see `cuzk status --addr %s`, wait with `cuzk submit --request-id %s`, or `cuzk cancel --addr %s --request-id %s`",
			rid, err, addr, rid, addr, rid), exitInterrupted)
	}
	if st != client.Cancelled {
		return cli.Exit(fmt.Sprintf("submit %s: interrupted: cancelling job %s: it is being stopped (%s until its running step returns)", rid, job, st), exitInterrupted)
	}
	return cli.Exit(fmt.Sprintf("submit %s: interrupted: cancelled job %s, now %s", rid, job, st), exitInterrupted)
}

// readPartitions sets req's witness from the --witness files: one file is
// the witness, several are the partitions; --partitions N without files
// asks for N partitions of the built-in sample.
func readPartitions(req *client.Request, paths []string, n int) error {
	if n < 0 || n > 256 {
		return fmt.Errorf("--partitions %d: want 0 to 256", n)
	}
	if n > 0 && len(paths) > 0 && n != len(paths) {
		return fmt.Errorf("--partitions %d with %d --witness files: give one witness per partition", n, len(paths))
	}
	var ws [][]byte
	for _, path := range paths {
		w, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("witness: %w", err)
		}
		if len(w) == 0 {
			// An empty witness asks the daemon for the circuit's sample:
			// a file cut short would prove the sample, not its witness.
			return fmt.Errorf("witness %s: empty file (want a full witness in gnark's binary format)", path)
		}
		// The daemon's own check, before the dial: a file of another
		// kind is named here, not refused as INVALID_ARGUMENT there.
		if err := server.CheckWitness(w); err != nil {
			return fmt.Errorf("%s is not a gnark witness file (%s): want a full witness in gnark's binary format (witness.Witness MarshalBinary over BLS12-381's scalar field)",
				path, strings.TrimPrefix(err.Error(), groth16.ErrBadWitness.Error()+": "))
		}
		ws = append(ws, w)
	}
	switch {
	case len(ws) == 1 && n <= 1:
		req.Witness = ws[0]
	case len(ws) > 1:
		req.Partitions = ws
	case n > 1:
		req.Partitions = make([][]byte, n)
	}
	return nil
}

// statePoll is how often submit reads the job's stage from GetStatus
// during the first statePollFastFor of its wait, when the short stages
// (queue, synthesis of a small proof, device wait) pass; then every
// statePollSlow. Each poll is a GetStatus the daemon traces as a trace of
// its own, so a long proof is not polled five times a second.
var (
	statePoll        = 200 * time.Millisecond
	statePollFastFor = 5 * time.Second
	statePollSlow    = time.Second
)

// submitAndAwait proves req and prints each stage the job is seen in
// (read from GetStatus while it waits; a stage shorter than statePoll may
// pass unseen, the timings line has them all), then its final state.
//
// A new request is one Prove call, whose span is the parent of the
// daemon's engine.job for the whole job. A request id the daemon already
// knows (asked first with AwaitProof, which makes no job) is submitted
// with SubmitProof: the daemon answers ALREADY_EXISTS when the earlier job
// had other parameters (returned as is, with no note), or the earlier job,
// which submit then says it returns and awaits. Errors are the RPCs' (a
// failed job's carries its result, see client.ResultOf). answered is
// true once the daemon answered the first AwaitProof: only then can a job
// exist, so only then may an error say the daemon keeps proving.
func submitAndAwait(ctx context.Context, cl, poll *client.Client, req client.Request, out io.Writer) (_ *client.Result, answered bool, _ error) {
	_, err := cl.AwaitRequest(ctx, req.RequestID, time.Millisecond)
	// A DEADLINE_EXCEEDED of the 1 ms wait is the daemon's answer (the
	// job exists and runs); one of ctx, or UNAVAILABLE, is no answer.
	answered = ctx.Err() == nil && status.Code(err) != codes.Unavailable
	wait := func() (*client.Result, error) { return cl.Prove(ctx, req) }
	switch status.Code(err) {
	case codes.NotFound:
	case codes.Unavailable, codes.Unauthenticated, codes.PermissionDenied, codes.Unimplemented:
		return nil, answered, err
	default:
		if !answered {
			return nil, false, err
		}
		job, err := cl.Submit(ctx, req)
		if err != nil {
			return nil, true, err
		}
		if job.Existing {
			now := "still running"
			if job.Status != "" {
				now = "now " + string(job.Status)
			}
			fmt.Fprintf(out, "note      request id %s was submitted before: this returns the earlier job (%s), not a new proof; use another --request-id for a new one\n",
				req.RequestID, now)
		}
		wait = func() (*client.Result, error) { return cl.Await(ctx, job.ID, 0) }
	}
	pctx, stop := context.WithCancel(context.Background())
	polled := make(chan struct{})
	var seen string // the last state printed; the poller's until polled closes
	go func() {
		defer close(polled)
		start := time.Now()
		t := time.NewTimer(statePoll)
		defer t.Stop()
		for {
			if st, err := poll.Status(pctx); err == nil {
				if line := stateOf(st, req.RequestID); line != "" && line != seen && pctx.Err() == nil {
					seen = line
					fmt.Fprintf(out, "state     %s\n", seen)
				}
			}
			select {
			case <-pctx.Done():
				return
			case <-t.C:
			}
			if time.Since(start) < statePollFastFor {
				t.Reset(statePoll)
			} else {
				t.Reset(statePollSlow)
			}
		}
	}()
	res, err := wait()
	stop()
	<-polled
	if res != nil && res.Status != "" && string(res.Status) != seen {
		fmt.Fprintf(out, "state     %s\n", res.Status)
	}
	return res, true, err
}

// stateOf is the state line of request id rid in st: QUEUED with its
// place among the jobs not started yet ("QUEUED, position 2 of 5") or
// its wait for the memory budget, else its stage past the queue and the
// step in it when the daemon says (jobDoing); "" when
// st does not list it or lists it ended (an end is printed from the
// result).
func stateOf(st *client.Status, rid string) string {
	for i, q := range st.Waiting {
		if q.RequestID != rid {
			continue
		}
		if q.MemoryWait {
			return "QUEUED, waiting for the memory budget"
		}
		return fmt.Sprintf("QUEUED, position %d of %d", i+1, len(st.Waiting))
	}
	for _, r := range st.Running {
		if r.RequestID == rid && r.Status != "" && !ended(r.Status) {
			return jobDoing(r, st.Workers) // with its step: "RUNNING: keys.setup"
		}
	}
	return ""
}

// ended reports whether s is a final state (printed once, from the
// result, not from a poll).
func ended(s client.JobStatus) bool {
	return s == client.Succeeded || s == client.Failed || s == client.Cancelled
}

// msStr writes one of a job's timings (human.Duration, as every
// duration cuzk prints).
func msStr(d time.Duration) string { return human.Duration(d) }
