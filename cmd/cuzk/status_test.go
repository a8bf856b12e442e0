package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/daemon"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
)

// A worker counts proofs (partitions), the totals count jobs: each line
// says its unit, and the totals line gives the workers' proofs beside the
// jobs (one 10-partition job and one plain job: 2 jobs, 11 proofs).
func TestStatusSaysWhatItCounts(t *testing.T) {
	st := &client.Status{
		Uptime: time.Minute, Ready: true,
		Workers: []client.WorkerStatus{
			{Name: "cuda:0", Succeeded: 6, Failed: 1},
			{Name: "cuda:1", Succeeded: 5, Cancelled: 2},
		},
		Succeeded: 2, Failed: 1, Cancelled: 1,
	}
	var out bytes.Buffer
	printStatus(&out, "127.0.0.1:9000", st)
	for _, want := range []string{
		"worker    cuda:0  idle  busy 0 s (0% of uptime)  proofs succeeded 6 failed 1 cancelled 0\n",
		"worker    cuda:1  idle  busy 0 s (0% of uptime)  proofs succeeded 5 failed 0 cancelled 2\n",
		"totals    jobs succeeded 2  failed 1  cancelled 1;  proofs on workers succeeded 11  failed 1  cancelled 2\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}

// Small budgets and devices show in a unit that shows them.
func TestStatusBytesInAUnitThatShowsThem(t *testing.T) {
	for b, want := range map[uint64]string{
		0: "0 B", 512: "512 B", 3 << 10: "3.0 KiB", 5 << 20: "5.0 MiB", 12<<20 + 1<<19: "12.5 MiB",
		4 << 30: "4.0 GiB", 3 << 40: "3.0 TiB",
	} {
		if got := bytesStr(b); got != want {
			t.Errorf("bytesStr(%d) = %q, want %q", b, got, want)
		}
	}
	st := &client.Status{Memory: client.Memory{Budget: 64 << 20, Reserved: 3 << 20, Keys: 512 << 10, Peak: 5 << 20},
		Keys: []client.Key{{Circuit: "merkle", Constraints: 262144, ID: "merkle/262144"}, {Circuit: "mine", ID: "mine"},
			{Circuit: "cube", Constraints: 8, ID: "ab12"}, {Circuit: "porep", Constraints: 1024, ID: "porep/1024", Bytes: 3 << 20},
			{Circuit: "rangecheck", Constraints: 64, ID: "cd34", Bytes: 5 << 10}}}
	var out bytes.Buffer
	printStatus(&out, "a", st)
	if want := "memory    budget 64.0 MiB, in flight 3.5 MiB (proofs 3.0 MiB, keys 512.0 KiB), peak 5.0 MiB\n"; !strings.Contains(out.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, out.String())
	}
	// A key's id is shown when it says more than its circuit and size
	// ("key merkle/262144  merkle/262144" said it twice; "mine/0" a size
	// the circuit file does not have).
	for _, want := range []string{"key       merkle/262144\n", "key       mine\n", "key       cube/8  ab12\n",
		"key       porep/1024  3.0 MiB\n", "key       rangecheck/64  5.0 KiB  cd34\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}

// An upstream cuzk's queues (cuzk serve --upstream) are lines of their
// own; this daemon's own "local" kind is not repeated.
func TestStatusShowsTheUpstreamsQueues(t *testing.T) {
	st := &client.Status{Kinds: []client.KindQueue{{Kind: "local", Pending: 1}, {Kind: "porep", Pending: 2, InProgress: 1}}}
	var out bytes.Buffer
	printStatus(&out, "a", st)
	if want := "upstream  porep  pending 2  in progress 1\n"; !strings.Contains(out.String(), want) || strings.Contains(out.String(), "upstream  local") {
		t.Errorf("status lacks %q or shows local:\n%s", want, out.String())
	}
}

// The tuner's choice and why, and the queued jobs in the order they
// start (request id, circuit and size, priority, age; a memory wait
// said), are lines of their own.
func TestStatusShowsTheTuningAndTheQueuedJobs(t *testing.T) {
	now := time.Now()
	st := &client.Status{
		Tuning: []client.Tuning{{Circuit: "merkle", Constraints: 1 << 20, Workers: 12, SolverTasks: 1,
			Reason: "synthesis 800 ms / device 100 ms on 1 device(s): 11.1 syntheses at once keep the devices 90% busy"}},
		Waiting: []client.QueuedJob{
			{RequestID: "b", Circuit: "merkle", Constraints: 1 << 20, Priority: client.Normal, Submitted: now.Add(-90 * time.Second), Partitions: 1, MemoryWait: true},
			{RequestID: "d", Circuit: "mulchain", Constraints: 16, Priority: client.Critical, Submitted: now.Add(-2 * time.Second), Partitions: 3},
		},
	}
	var out bytes.Buffer
	printStatus(&out, "a", st)
	for _, want := range []string{
		"tuning    merkle/1048576  12 synthesis workers, 1 solver tasks each  (synthesis 800 ms / device 100 ms on 1 device(s): 11.1 syntheses at once keep the devices 90% busy)\n",
		"queued    #1  request b  merkle/1048576  NORMAL  age 1 min 30 s  waiting for the memory budget\n",
		"queued    #2  request d  mulchain/16  CRITICAL  age 2.0 s  3 partitions\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}

// A job cancelled during its key setup (groth16.Setup cannot stop) left
// the setup running while cuzk status showed the worker idle and nothing
// of it: now status lists it (step, circuit and size, job, request) and
// the worker it holds, until it ends and stores its key.
func TestStatusShowsTheSetupACancelledJobLeftRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("a key setup of 2^15 constraints")
	}
	clearOTLPEnv(t)
	// The circuit compiled beforehand (the daemon, this same executable,
	// finds it in the circuit cache), so the cancel lands in the setup.
	cache := filepath.Join(t.TempDir(), "cache")
	kc, err := keycache.New(cache, keycache.WithProgress(nil, false))
	if err != nil {
		t.Fatal(err)
	}
	in, err := circuits.Build("mulchain", 1<<15)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.Compile(context.Background(), "mulchain", 1<<15, in.Compile); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, daemon.Config{CacheDir: cache})
	c := d.client(t)
	if _, err := c.Submit(context.Background(), client.Request{RequestID: "big-1", Circuit: "mulchain", Constraints: 1 << 15}); err != nil {
		t.Fatal(err)
	}
	id := waitRunning(t, c, "big-1")
	time.Sleep(time.Second) // into the setup (of 15 s and more), past the compile's cache hit
	if _, err := c.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	awaitCancelled(t, c, id)
	var out string
	line := regexp.MustCompile(`(?m)^abandoned keys\.setup  mulchain/32768  job ` + regexp.QuoteMeta(id) +
		`  request big-1  left running [0-9.]+ (s|min)( [0-9]+ s)? ago \(it cannot stop\); holds worker cpu:0 and [0-9.]+ [KMG]?i?B until it ends$`)
	t.Cleanup(func() { t.Logf("last status:\n%s", out) })
	waitFor(t, "status listing the abandoned work", 30*time.Second, func() bool {
		var err error
		out, _, err = runCuzk(t, "status", "--addr", d.addr)
		return err == nil && line.MatchString(out)
	})
	if !strings.Contains(out, "worker    cpu:0  held by the abandoned ") || !strings.Contains(out, ", abandoned 1; waiting 0 of queue size ") {
		t.Errorf("status does not show the worker held or the count:\n%s", out)
	}
	// Once it ends it is gone, and the worker is free again.
	waitFor(t, "the abandoned work to end", 3*time.Minute, func() bool {
		st, err := c.Status(context.Background())
		return err == nil && len(st.Stages.Abandoned) == 0
	})
	out, _, _ = runCuzk(t, "status", "--addr", d.addr)
	if strings.Contains(out, "abandoned") || !strings.Contains(out, "worker    cpu:0  idle") {
		t.Errorf("status after the work ended:\n%s", out)
	}
}

// The release mode has a line of its own after the memory line; in pool
// mode it says what the buffer pools hold of their limit, outside the
// budget. A daemon that does not say its mode (older than the field)
// gets no line.
func TestStatusShowsTheReleaseModeAndTheBufferPools(t *testing.T) {
	for _, tc := range []struct {
		mem  client.Memory
		want string
	}{
		{client.Memory{Budget: 64 << 20, ReleaseMode: "pool", PoolLimit: 7<<30 + 1<<29, PoolHeld: 18 << 20},
			"release   pool: buffer pools hold 18.0 MiB of their 7.5 GiB limit (idle buffers kept for reuse, outside the memory budget)\n"},
		{client.Memory{ReleaseMode: "pool", PoolLimit: 16 << 30}, "release   pool: buffer pools hold 0 B of their 16.0 GiB limit"},
		{client.Memory{Budget: 64 << 20, ReleaseMode: "async"}, "release   async: no buffer pool\n"},
		{client.Memory{ReleaseMode: "sync"}, "release   sync: no buffer pool\n"},
	} {
		var out bytes.Buffer
		printStatus(&out, "a", &client.Status{Memory: tc.mem})
		if !strings.Contains(out.String(), tc.want) || !regexp.MustCompile(`(?m)^memory .*\nrelease `).MatchString(out.String()) {
			t.Errorf("%+v: status lacks %q right after the memory line:\n%s", tc.mem, tc.want, out.String())
		}
	}
	var out bytes.Buffer
	printStatus(&out, "a", &client.Status{Memory: client.Memory{Budget: 64 << 20}})
	if strings.Contains(out.String(), "release") {
		t.Errorf("a daemon that does not say its release mode got a release line:\n%s", out.String())
	}
}

// cuzk status of a --release pool daemon, after a proof whose buffers went
// back to the pool (CPU backend), says what the pools hold (more than
// nothing) of their limit, the numbers GetStatus gives.
func TestStatusOfAPoolDaemonShowsWhatItsPoolsHold(t *testing.T) {
	clearOTLPEnv(t)
	d := startDaemon(t, daemon.Config{Release: "pool"})
	c := d.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Prove(ctx, client.Request{RequestID: "pooled-1", Circuit: "mulchain", Constraints: 256}); err != nil {
		t.Fatal(err)
	}
	var st *client.Status
	waitFor(t, "the proof's buffers in the pool", 30*time.Second, func() bool {
		var err error
		st, err = c.Status(ctx)
		return err == nil && st.Memory.PoolHeld > 0
	})
	if m := st.Memory; m.ReleaseMode != "pool" || m.PoolLimit == 0 || m.PoolHeld > m.PoolLimit {
		t.Fatalf("GetStatus memory %+v, want mode pool with a limit above what is held", m)
	}
	out, errOut, err := runCuzk(t, "status", "--addr", d.addr)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, errOut)
	}
	// Nothing proves between the two calls, so the pools hold the same.
	want := "release   pool: buffer pools hold " + bytesStr(st.Memory.PoolHeld) + " of their " + bytesStr(st.Memory.PoolLimit) + " limit"
	if !strings.Contains(out, want) {
		t.Errorf("status lacks %q:\n%s", want, out)
	}
}

// A daemon up for less than a second says how long, not "0.00 ms" (its
// uptime rounded to whole seconds); from a second on, whole seconds.
func TestStatusUptimeUnderASecond(t *testing.T) {
	for up, want := range map[time.Duration]string{
		0:                         "  up 0 s  ",
		412300 * time.Microsecond: "  up 412.3 ms  ",
		1400 * time.Millisecond:   "  up 1.0 s  ",
		125 * time.Second:         "  up 2 min 5 s  ",
	} {
		var out bytes.Buffer
		printStatus(&out, "127.0.0.1:9000", &client.Status{Uptime: up, Version: "v", Ready: true})
		if line := strings.SplitN(out.String(), "\n", 2)[0]; !strings.Contains(line, want) {
			t.Errorf("uptime %v: %q, want %q", up, line, want)
		}
	}
}

// A fresh worker's busy time reads "busy 0 s" (it read "busy 0.00 ms",
// a measurement of nothing); a worker that worked keeps its unrounded
// time.
func TestStatusBusyOfAFreshWorker(t *testing.T) {
	for busy, want := range map[time.Duration]string{
		0:                       "  busy 0 s  ",
		4120 * time.Microsecond: "  busy 4.12 ms ",
		9300 * time.Millisecond: "  busy 9.3 s ",
	} {
		var out bytes.Buffer
		printStatus(&out, "127.0.0.1:9000", &client.Status{Version: "v", Ready: true, Workers: []client.WorkerStatus{{Name: "cpu:0", Busy: busy}}})
		var line string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(l, "worker ") {
				line = l
			}
		}
		if !strings.Contains(line, want) {
			t.Errorf("busy %v: %q, want %q", busy, line, want)
		}
	}
}
