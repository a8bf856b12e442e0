package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

func init() {
	commands = append(commands, &cli.Command{
		Name:  "status",
		Usage: "print a daemon's state: readiness, stages, tuning, memory budget, buffer pools, devices, workers, keys, jobs",
		Description: "Calls GetStatus on the daemon at --addr and prints whether it is ready (its\n" +
			"grpc.health.v1 answer, and why not), the depth of each stage (queue, memory\n" +
			"wait, synthesis, device queue, proving), the memory budget and what is in\n" +
			"flight, the release mode (--release) and with pool what the buffer pools hold\n" +
			"of their limit, devices, workers with their busy time, the keys held, per\n" +
			"circuit and size the synthesis workers and solver tasks chosen and why, the\n" +
			"queued jobs in the order they start (request id, circuit, priority, age) and\n" +
			"the jobs past the queue (request id, stage and step, priority, time since\n" +
			"they started).",
		Flags:  daemonFlags(10*time.Second, "longest wait for the answer"),
		Action: func(c *cli.Context) error { return oneLine(statusAction(c)) },
	})
}

func statusAction(c *cli.Context) error {
	if c.Args().Len() > 0 {
		return fmt.Errorf("status takes no arguments (got %q)", c.Args().First())
	}
	cl, ctx, done, err := dialDaemon(c)
	if err != nil {
		return err
	}
	defer done()
	st, err := cl.Status(ctx)
	if err != nil {
		if what, ask, ok := unreachable(err, daemonAddr(c)); ok {
			return fmt.Errorf("status: %s%s", what, askServe(ask))
		}
		return fmt.Errorf("status of %s: %w", daemonAddr(c), rpcError(err))
	}
	printStatus(c.App.Writer, daemonAddr(c), st)
	return nil
}

var priorities = []client.Priority{client.Critical, client.High, client.Normal, client.Low}

// byPriority is "3 (CRITICAL 1, NORMAL 2)", or "0".
func byPriority(m map[client.Priority]int) string {
	total := 0
	var parts []string
	for _, p := range priorities {
		if n := m[p]; n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%s %d", p, n))
		}
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

// age is the time since t, whole seconds (0s for a t ahead of this
// host's clock).
func age(t time.Time) time.Duration {
	return max(time.Since(t), 0).Round(time.Second)
}

// jobDoing is a running job's stage with the step it is in when the
// daemon says ("RUNNING: keys.setup", "PROVING: gpu.lock"): a serial
// daemon's job is RUNNING from its compile to its proof, and a worker
// holding a job was shown as "proving" it through a minutes-long key setup.
// A synthesized job waiting for a device says which kind of worker of
// workers (the daemon's) it waits for: "WAITING_DEVICE: for a CPU worker
// (gpu.queue)" on a daemon without GPUs, where the span's name alone said
// it waited for a GPU.
func jobDoing(j client.RunningJob, workers []client.WorkerStatus) string {
	step := j.Step
	if j.Status == client.WaitingDevice && step == semconv.SpanGPUQueue {
		step = "for " + deviceKind(workers) + " (" + step + ")"
	}
	if step == "" {
		return fmt.Sprint(j.Status)
	}
	return fmt.Sprintf("%s: %s", j.Status, step)
}

// deviceKind names the device workers of a daemon as a job waiting for
// one would: "a CPU worker" when they all prove on the CPU ("cpu:0"), "a
// GPU" when none does, else "a device worker".
func deviceKind(workers []client.WorkerStatus) string {
	cpu := 0
	for _, w := range workers {
		if strings.HasPrefix(w.Name, "cpu:") {
			cpu++
		}
	}
	switch {
	case len(workers) > 0 && cpu == len(workers):
		return "a CPU worker"
	case len(workers) > 0 && cpu == 0:
		return "a GPU"
	}
	return "a device worker"
}

// bytesStr writes bytes in binary units (human.Bytes).
var bytesStr = human.Bytes

// releaseLine is the status line of the daemon's release mode (serve
// --release) and, in pool mode, its buffer pools: what they hold now of
// their limit, both outside the memory budget. Empty when the daemon does
// not say its mode (one older than the field).
func releaseLine(m client.Memory) string {
	switch m.ReleaseMode {
	case "":
		return ""
	case "pool":
		return fmt.Sprintf("release   pool: buffer pools hold %s of their %s limit (idle buffers kept for reuse, outside the memory budget)",
			bytesStr(m.PoolHeld), bytesStr(m.PoolLimit))
	}
	return fmt.Sprintf("release   %s: no buffer pool", m.ReleaseMode)
}

// sinceText is a time since an event (the daemon's uptime, an abandoned
// work's age) as cuzk status prints it: in whole seconds from 1 s on
// ("3.0 s", "2 min 5 s"); below, unrounded ("412.3 ms"), as whole seconds
// would read "0.00 ms"; "0 s" for none.
func sinceText(d time.Duration) string {
	switch {
	case d <= 0:
		return "0 s"
	case d < time.Second:
		return human.Duration(d)
	}
	return human.Duration(d.Round(time.Second))
}

// busyText is a worker's busy time as cuzk status prints it: "0 s" for a
// worker that has not worked yet (it read "0.00 ms"), else unrounded
// (human.Duration: "4.12 ms", "9.3 s").
func busyText(d time.Duration) string {
	if d <= 0 {
		return "0 s"
	}
	return human.Duration(d)
}

// printStatus writes st as cuzk status prints it, one line per fact.
func printStatus(out io.Writer, addr string, st *client.Status) {
	ready := "ready"
	if !st.Ready {
		ready = "NOT READY: " + st.NotReadyReason
	}
	if st.Closing {
		ready += ", shutting down"
	}
	fmt.Fprintf(out, "daemon    %s  version %s  up %s  %s\n", addr, st.Version, sinceText(st.Uptime), ready)
	s := st.Stages
	engine := "serial engine"
	if s.SynthesisWorkers > 0 {
		engine = fmt.Sprintf("%d synthesis workers", s.SynthesisWorkers)
	}
	abandoned := ""
	if n := len(s.Abandoned); n > 0 {
		abandoned = fmt.Sprintf(", abandoned %d", n)
	}
	// A serial engine's worker runs a job whole (compile, keys, synthesis,
	// proof): its count is of jobs running, not proving.
	proving := "proving"
	if s.SynthesisWorkers == 0 {
		proving = "running"
	}
	// The queue size bounds the waiting stages together (queue, memory
	// wait, device queue), not the first queue alone.
	waiting := s.WaitingMemory
	for _, m := range []map[client.Priority]int{st.Queued, s.WaitingDevice} {
		for _, n := range m {
			waiting += n
		}
	}
	fmt.Fprintf(out, "stages    %s: queue %s, memory wait %d, synthesizing %d, device queue %s, %s %d%s; waiting %d of queue size %d\n",
		engine, byPriority(st.Queued), s.WaitingMemory, s.Synthesizing, byPriority(s.WaitingDevice), proving, s.Proving, abandoned, waiting, st.QueueCapacity)
	if m := st.Memory; m.Budget > 0 {
		fmt.Fprintf(out, "memory    budget %s, in flight %s (proofs %s, keys %s), peak %s\n",
			bytesStr(m.Budget), bytesStr(m.Reserved+m.Keys), bytesStr(m.Reserved), bytesStr(m.Keys), bytesStr(m.Peak))
	} else {
		fmt.Fprintln(out, "memory    no budget")
	}
	if line := releaseLine(st.Memory); line != "" {
		fmt.Fprintln(out, line)
	}
	for _, d := range st.Devices {
		if d.Ordinal < 0 {
			fmt.Fprintf(out, "device    host (%s backend)\n", d.Backend)
			continue
		}
		fmt.Fprintf(out, "device    %d %s (%s)  memory %s used of %s\n", d.Ordinal, d.Name, d.Backend, bytesStr(d.MemoryUsed), bytesStr(d.MemoryTotal))
	}
	up := st.Uptime.Seconds()
	// A worker counts proofs (one per partition); the daemon's totals count
	// jobs (requests). Both say their unit, and the totals line gives the
	// workers' proofs beside the jobs, so a 10-partition job reads as
	// 1 job and 10 proofs, not as a contradiction.
	var proofs [3]uint64
	steps := map[string]string{} // job id -> what it does now
	for _, j := range st.Running {
		steps[j.ID] = jobDoing(j, st.Workers)
	}
	for _, w := range st.Workers {
		job := "idle"
		if w.JobID != "" {
			doing := steps[w.JobID]
			if doing == "" {
				doing = "RUNNING"
			}
			job = w.JobID + " " + doing
		}
		for _, a := range s.Abandoned {
			if a.Worker == w.Name {
				job = "held by the abandoned " + a.Step + " of job " + a.JobID
			}
		}
		if w.Faulted {
			job = "FAULTED (" + w.Fault + "), no more work"
		}
		share := ""
		if up > 0 {
			share = fmt.Sprintf(" (%.0f%% of uptime)", 100*w.Busy.Seconds()/up)
		}
		fmt.Fprintf(out, "worker    %s  %s  busy %s%s  proofs succeeded %d failed %d cancelled %d\n",
			w.Name, job, busyText(w.Busy), share, w.Succeeded, w.Failed, w.Cancelled)
		proofs[0] += w.Succeeded
		proofs[1] += w.Failed
		proofs[2] += w.Cancelled
	}
	for _, k := range st.Keys {
		name := k.Circuit
		if k.Constraints > 0 {
			name = fmt.Sprintf("%s/%d", k.Circuit, k.Constraints)
		}
		line := name
		if k.Bytes > 0 { // the daemon's estimate of the host memory the keys hold
			line += "  " + bytesStr(k.Bytes)
		}
		if k.ID != "" && k.ID != name { // the constraint system's hash, or this name itself
			line += "  " + k.ID
		}
		fmt.Fprintf(out, "key       %s\n", line)
	}
	for _, tu := range st.Tuning {
		fmt.Fprintf(out, "tuning    %s/%d  %d synthesis workers, %d solver tasks each  (%s)\n",
			tu.Circuit, tu.Constraints, tu.Workers, tu.SolverTasks, tu.Reason)
	}
	for i, q := range st.Waiting {
		line := fmt.Sprintf("queued    #%d  request %s  %s/%d  %s  age %s", i+1, q.RequestID, q.Circuit, q.Constraints, q.Priority, human.Duration(age(q.Submitted)))
		if q.Partitions > 1 {
			line += fmt.Sprintf("  %d partitions", q.Partitions)
		}
		if q.MemoryWait {
			line += "  waiting for the memory budget"
		}
		fmt.Fprintln(out, line)
	}
	for _, j := range st.Running {
		parts := ""
		if j.Partitions > 1 {
			parts = fmt.Sprintf("  %d partitions", j.Partitions)
		}
		where := ""
		if j.Worker != "" {
			where = " on " + j.Worker
		}
		// Its priority and how long since it left the queue, as the
		// queued lines say theirs: a job waiting for the device is
		// passed by a higher one.
		since := ""
		if !j.Started.IsZero() && j.Started.UnixNano() > 0 {
			since = "  started " + human.Duration(age(j.Started)) + " ago"
		}
		fmt.Fprintf(out, "job       %s  request %s  %s  %s%s%s  %s%s  trace %s\n", j.ID, j.RequestID, j.Circuit, jobDoing(j, st.Workers), where, parts, j.Priority, since, j.TraceID)
	}
	for _, a := range s.Abandoned {
		holds := "a synthesis slot"
		if a.Worker != "" {
			holds = "worker " + a.Worker
		}
		if a.MemoryBytes > 0 {
			holds += " and " + bytesStr(a.MemoryBytes)
		}
		fmt.Fprintf(out, "abandoned %s  %s/%d  job %s  request %s  left running %s ago (it cannot stop); holds %s until it ends\n",
			a.Step, a.Circuit, a.Constraints, a.JobID, a.RequestID, sinceText(a.Age), holds)
	}
	for _, k := range st.Kinds {
		if k.Kind != server.LocalProofKind {
			fmt.Fprintf(out, "upstream  %s  pending %d  in progress %d\n", k.Kind, k.Pending, k.InProgress)
		}
	}
	fmt.Fprintf(out, "totals    jobs succeeded %d  failed %d  cancelled %d;  proofs on workers succeeded %d  failed %d  cancelled %d\n",
		st.Succeeded, st.Failed, st.Cancelled, proofs[0], proofs[1], proofs[2])
}
