// Command cuzk-standin stands in for a cuzk daemon (Curio's) in tests:
// cuzk's gRPC API (cuzk.v1.ProvingEngine) served by
// prover/upstream/standin.Fake, whose proofs take -delay and report
// the given times, or fail: with a gRPC code (-fail CODE) or as a FAILED
// proof (-fail-proof MESSAGE), every request or only every n-th
// (-fail-every N) or those whose request id matches (-fail-requests
// REGEXP). As in cuzk, a job's id is its request id. It proves nothing.
// -listen takes a host:port or, as cuzk's daemon, a unix socket
// (unix:///run/curio/cuzk.sock).
//
// With -gpu-kernel-ms each proof, after -delay, holds one of its -gpus
// GPUs (one job at a time each, named in GetStatus' current_job_id as cuzk
// does) for that long, running real kernels of about -kernel-ms each on
// it (cudaspans: libcuda and NVRTC loaded at run time), and reports the
// time as gpu_compute_ms unless -gpu-compute-ms is given: a cuzk whose
// kernels `cuzk gpu-trace` records.
//
//	cuzk-standin -listen 127.0.0.1:9830 -delay 2s -queue-wait-ms 100 \
//	    -srs-load-ms 200 -synthesis-ms 600 -gpu-compute-ms 400 -total-ms 2000
//	cuzk-standin -fail-proof "synthesis: out of memory" -fail-every 3
//	cuzk gpu-trace --jobs jobs.jsonl -- cuzk-standin -listen unix:///tmp/cuzk.sock -gpu-kernel-ms 400
//
// It prints "listening ADDR" once serving and runs until SIGTERM or SIGINT.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/api/endpoint"
	"github.com/otelcuzk/otelcuzk/prover/upstream/standin"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cuzk-standin:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("cuzk-standin", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "gRPC host:port, or unix:///path")
	gpus := fs.Int("gpus", 1, "GPUs (ordinals 0..N-1), each serving one proof's GPU part at a time")
	gpuKernelMS := fs.Int("gpu-kernel-ms", 0, "each proof's GPU part: real kernels on its GPU for this many ms (0: none)")
	kernelMS := fs.Int("kernel-ms", 10, "length of one kernel of -gpu-kernel-ms, ms")
	delay := fs.Duration("delay", time.Second, "how long a proof takes")
	var r standin.Timings
	fs.Uint64Var(&r.QueueWaitMS, "queue-wait-ms", 0, "queue_wait_ms reported")
	fs.Uint64Var(&r.SRSLoadMS, "srs-load-ms", 0, "srs_load_ms reported")
	fs.Uint64Var(&r.SynthesisMS, "synthesis-ms", 0, "synthesis_ms reported")
	fs.Uint64Var(&r.GPUComputeMS, "gpu-compute-ms", 0, "gpu_compute_ms reported")
	fs.Uint64Var(&r.TotalMS, "total-ms", 0, "total_ms reported")
	fail := fs.String("fail", "", "a gRPC code name (UNAVAILABLE, RESOURCE_EXHAUSTED, ...) the failing requests' calls fail with")
	failProof := fs.String("fail-proof", "", "the error_message of a FAILED reply the failing requests' proofs end with, after -delay")
	failEvery := fs.Int("fail-every", 0, "only every N-th request fails (with -fail or -fail-proof)")
	failRequests := fs.String("fail-requests", "", "only requests whose request id matches this regular expression fail (with -fail or -fail-proof)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	f := &standin.Fake{Delay: *delay, Report: r, FailProof: *failProof, FailEvery: *failEvery,
		Metrics: "# TYPE cuzk_standin_up gauge\ncuzk_standin_up 1\n"}
	if *failEvery < 0 {
		return fmt.Errorf("-fail-every %d: want 0 (off) or a positive count", *failEvery)
	}
	if *failRequests != "" {
		re, err := regexp.Compile(*failRequests)
		if err != nil {
			return fmt.Errorf("-fail-requests %q: %w", *failRequests, err)
		}
		f.FailRequests = re
	}
	if (*failEvery > 0 || *failRequests != "") && *fail == "" && *failProof == "" {
		return errors.New("-fail-every and -fail-requests choose which requests fail: give -fail CODE or -fail-proof MESSAGE too")
	}
	if *fail != "" {
		var c codes.Code
		if err := c.UnmarshalJSON([]byte(`"` + *fail + `"`)); err != nil || c == codes.OK {
			return fmt.Errorf("-fail %q: not a gRPC code name other than OK", *fail)
		}
		f.Fail, f.FailMessage = c, "cuzk-standin: failing as told (-fail "+*fail+")"
	}
	if *gpus < 1 {
		return fmt.Errorf("-gpus %d: want 1 or more", *gpus)
	}
	f.GPUs = *gpus
	var w *gpuWork
	if *gpuKernelMS < 0 || *kernelMS < 1 {
		return fmt.Errorf("-gpu-kernel-ms %d -kernel-ms %d: want 0 or more, and 1 or more", *gpuKernelMS, *kernelMS)
	}
	if *gpuKernelMS > 0 {
		w = &gpuWork{total: time.Duration(*gpuKernelMS) * time.Millisecond, kernel: time.Duration(*kernelMS) * time.Millisecond}
		f.Work = w.Work
	}
	if err := endpoint.Check("-listen", *listen); err != nil {
		return err
	}
	lis, err := endpoint.Listen(*listen)
	if err != nil {
		return fmt.Errorf("-listen %s: %w", *listen, err)
	}
	s := grpc.NewServer(grpc.MaxRecvMsgSize(128<<20), grpc.MaxSendMsgSize(128<<20))
	cuzkv1.RegisterProvingEngineServer(s, f)
	fmt.Println("listening", endpoint.String(lis))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; s.Stop() }()
	err = s.Serve(lis)
	if w != nil {
		w.Close()
	}
	return err
}
