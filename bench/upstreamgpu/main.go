// Command upstreamgpu checks, on a GPU host, that the kernels of an
// upstream cuzk land under the job that caused them (issue 22, item 3):
// a cuzk stand-in running real kernels per proof (e2e/cmd/cuzk-standin
// -gpu-kernel-ms) under `cuzk gpu-trace --jobs FILE`, and `cuzk serve
// --upstream` in front of it publishing its jobs to FILE.
//
//	upstreamgpu send -addr 127.0.0.1:9830 -n 6 -concurrency 2
//	upstreamgpu check -daemon serve.jsonl -gpu gputrace.jsonl
//
// send proves n PoRep C2 requests through the daemon with cuzk's schema,
// c at a time. check reads the daemon's trace file and gpu-trace's and,
// for each forwarded engine.job, finds its upstream.gpu_compute and the
// kernel spans gpu-trace parented under it, and prints per job and in
// all: kernels, their GPU time, how much of it lies inside the job's own
// upstream.gpu_compute (the stand-in's measured GPU part), and kernels
// inside another job's gpu_compute (misattributed) or under no job. It
// exits 1 when a job lacks its gpu_compute or its kernels, or a kernel
// is misattributed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/otelcuzk/otelcuzk/bench/internal/benchutil"
	"github.com/otelcuzk/otelcuzk/bench/internal/spanfile"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: upstreamgpu send|check ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "send":
		err = send(os.Args[2:])
	case "check":
		err = check(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	benchutil.Exit("upstreamgpu", err)
}

func send(args []string) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9830", "the daemon (cuzk serve --upstream)")
	n := fs.Int("n", 6, "proofs")
	conc := fs.Int("concurrency", 1, "proofs at once")
	prefix := fs.String("prefix", "porep", "request id prefix")
	if err := fs.Parse(args); err != nil {
		return err
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rpc := cuzkv1.NewProvingEngineClient(conn)
	sem := make(chan struct{}, max(*conc, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range *n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id := fmt.Sprintf("%s-%d", *prefix, i)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			t0 := time.Now()
			res, err := rpc.Prove(ctx, &cuzkv1.ProveRequest{Submit: &cuzkv1.SubmitProofRequest{
				RequestId: id, ProofKind: cuzkv1.ProofKind_POREP_SEAL_COMMIT, SectorSize: 32 << 30, RegisteredProof: 3,
				VanillaProof: make([]byte, 1<<20)}})
			mu.Lock()
			defer mu.Unlock()
			if err != nil || res.GetResult().GetStatus() != cuzkv1.AwaitProofResponse_COMPLETED {
				errs = append(errs, fmt.Errorf("%s: %v %v", id, res.GetResult().GetStatus(), err))
				return
			}
			r := res.GetResult()
			fmt.Printf("sent %s: wall %.1f ms, reported gpu_compute %d ms, total %d ms\n", id,
				float64(time.Since(t0).Microseconds())/1e3, r.GetGpuComputeMs(), r.GetTotalMs())
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// overlap is the part of [s, e) inside [a, b).
func overlap(s, e, a, b time.Time) time.Duration {
	if s.Before(a) {
		s = a
	}
	if e.After(b) {
		e = b
	}
	if e.Before(s) {
		return 0
	}
	return e.Sub(s)
}

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	daemonFile := fs.String("daemon", "serve.jsonl", "the daemon's trace file")
	gpuFile := fs.String("gpu", "gputrace.jsonl", "gpu-trace's trace file")
	kernel := fs.String("kernel", "standin_gpu_compute", "the stand-in's kernel name")
	tol := fs.Duration("tolerance", 5*time.Millisecond, "how far a kernel may lie outside its job's gpu_compute (the reply's transfer, clock calibration)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ds, err := spanfile.Read(*daemonFile)
	if err != nil {
		return fmt.Errorf("-daemon: %w", err)
	}
	gs, err := spanfile.Read(*gpuFile)
	if err != nil {
		return fmt.Errorf("-gpu: %w", err)
	}
	type jobInfo struct {
		job, gpu tracefile.Span
		hasGPU   bool
		kernels  []tracefile.Span
	}
	jobs := map[string]*jobInfo{} // by span id
	for _, s := range ds {
		if s.Name == "engine.job" && s.Attrs["cuzk.upstream"] != nil {
			jobs[s.SpanID] = &jobInfo{job: s}
		}
	}
	for _, s := range ds {
		if j := jobs[s.ParentID]; j != nil && s.Name == "upstream.gpu_compute" && s.TraceID == j.job.TraceID {
			j.gpu, j.hasGPU = s, true
		}
	}
	var orphans, total int
	for _, s := range gs {
		if s.Name != *kernel {
			continue
		}
		total++
		if j := jobs[s.ParentID]; j != nil && s.TraceID == j.job.TraceID {
			j.kernels = append(j.kernels, s)
		} else {
			orphans++
		}
	}
	var ids []string
	for id := range jobs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return jobs[ids[a]].job.Start.Before(jobs[ids[b]].job.Start) })
	var bad []string
	var mis, inside int
	var kernTime, insideTime time.Duration
	for _, id := range ids {
		j := jobs[id]
		rid, _ := j.job.Attrs["cuzk.request.id"].(string)
		if !j.hasGPU {
			bad = append(bad, rid+": no upstream.gpu_compute under its engine.job")
			continue
		}
		if len(j.kernels) == 0 {
			bad = append(bad, rid+": no kernel span under its engine.job")
		}
		a, b := j.gpu.Start.Add(-*tol), j.gpu.End.Add(*tol)
		var kt, in time.Duration
		var jmis int
		for _, k := range j.kernels {
			kt += k.Duration()
			in += overlap(k.Start, k.End, a, b)
			if overlap(k.Start, k.End, a, b) < k.Duration()/2 {
				// Mostly outside its own job's GPU part: inside another's?
				for _, oid := range ids {
					o := jobs[oid]
					if oid != id && o.hasGPU && overlap(k.Start, k.End, o.gpu.Start, o.gpu.End) > k.Duration()/2 {
						jmis++
					}
				}
			} else {
				inside++
			}
		}
		mis += jmis
		kernTime += kt
		insideTime += in
		fmt.Printf("job %s: engine.job %.1f ms, upstream.gpu_compute %.1f ms, %d kernels under it (GPU time %.1f ms, %.1f%% inside its gpu_compute), %d inside another job's\n",
			rid, human.Milliseconds(j.job.Duration()), human.Milliseconds(j.gpu.Duration()), len(j.kernels), human.Milliseconds(kt), 100*float64(in)/float64(max(kt, 1)), jmis)
	}
	fmt.Printf("summary: %d jobs, %d %s kernels (%d under a job, %d under none), GPU time under jobs %.1f ms, %.1f%% of it inside its own job's gpu_compute; %d misattributed\n",
		len(ids), total, *kernel, total-orphans, orphans, human.Milliseconds(kernTime), 100*float64(insideTime)/float64(max(kernTime, 1)), mis)
	if len(ids) == 0 {
		bad = append(bad, "no forwarded engine.job in "+*daemonFile)
	}
	if mis > 0 {
		bad = append(bad, fmt.Sprintf("%d kernels under the wrong job", mis))
	}
	if len(bad) > 0 {
		return errors.New(fmt.Sprint(bad))
	}
	fmt.Println("check: PASS")
	return nil
}
