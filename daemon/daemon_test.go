package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/internal/logtest"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/keycache/keycachetest"
)

func cpuConfig(t *testing.T, log *logtest.Buffer) Config {
	cfg := DefaultConfig()
	dir := t.TempDir()
	cfg.Backend, cfg.Release, cfg.Listen, cfg.MetricsListen = "cpu", "sync", "127.0.0.1:0", "127.0.0.1:0"
	cfg.TraceFile, cfg.CacheDir, cfg.Log = filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "cache"), log
	cfg.ShutdownTimeout = time.Second
	return cfg
}

// start runs d (Run) until stop, which ends Run's context and returns
// Run's error.
func start(d *Daemon) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	return func() error { cancel(); return <-ran }
}

// prove asks the daemon at addr for req's proof over gRPC (Prove, within
// 10 s) and returns it; any error fails t.
func prove(t *testing.T, addr string, req *cuzkv1.SubmitProofRequest) []byte {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cuzkv1.NewProvingEngineClient(conn).Prove(ctx, &cuzkv1.ProveRequest{Submit: req})
	if err != nil {
		t.Fatalf("prove %s at %s: %v", req.GetRequestId(), addr, err)
	}
	return res.GetResult().GetProof()
}

// A program embeds the daemon with New and Run: it binds before Run,
// serves, and stops when Run's context ends, its last line the summary.
func TestNewRunStopsWhenTheContextEnds(t *testing.T) {
	log := &logtest.Buffer{}
	cfg := cpuConfig(t, log)
	ready := make(chan [2]string, 1)
	cfg.Ready = func(a, m string) { ready <- [2]string{a, m} }
	d, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.Addr() == "" || d.MetricsAddr() == "" || len(d.Engine().Workers()) != 1 {
		t.Fatalf("addr %q metrics %q workers %v", d.Addr(), d.MetricsAddr(), d.Engine().Workers())
	}
	stop := start(d)
	if got := <-ready; got[0] != d.Addr() || got[1] != d.MetricsAddr() {
		t.Errorf("Ready(%v), want %s %s", got, d.Addr(), d.MetricsAddr())
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "cuzk serve: stopped: 0 proofs succeeded") {
		t.Errorf("last line %q, want the summary\n%s", last, log.String())
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Errorf("a second Shutdown: %v", err)
	}
}

// A Config New cannot run is refused naming the flag, before anything
// is bound or opened.
func TestNewRefusesABadConfigNamingTheFlag(t *testing.T) {
	for flag, mend := range map[string]func(*Config){
		"--queue-size":        func(c *Config) { c.QueueSize = 0 },
		"--cpu-workers":       func(c *Config) { c.CPUWorkers = -2 },
		"--memory-budget":     func(c *Config) { c.MemoryBudget = "lots" },
		"--tls-cert":          func(c *Config) { c.TLSCert = "c.pem" },
		"--listen":            func(c *Config) { c.Listen = " " },
		"--max-message-bytes": func(c *Config) { c.MaxMessageBytes = 0 },
		"--upstream":          func(c *Config) { c.Upstream = " " },
	} {
		log := &logtest.Buffer{}
		cfg := cpuConfig(t, log)
		mend(&cfg)
		if _, err := New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: %v, want an error naming it", flag, err)
		}
		if log.String() != "" {
			t.Errorf("%s: logged %q before refusing", flag, log.String())
		}
	}
}

// --max-message-bytes below MinMaxMessageBytes is refused in one line
// naming the flag, the value and the minimum (1 was taken, and every
// request would have been refused); at the minimum a proof, the status
// and the metrics pass.
func TestMaxMessageBytesHasAMinimum(t *testing.T) {
	log := &logtest.Buffer{}
	cfg := cpuConfig(t, log)
	cfg.MaxMessageBytes = 1
	want := "serve: --max-message-bytes 1: want at least 65536 (64KiB): every request and reply must fit"
	if _, err := New(context.Background(), cfg); err == nil || err.Error() != want {
		t.Errorf("--max-message-bytes 1: %v, want %q", err, want)
	}
	cfg.MaxMessageBytes = MinMaxMessageBytes
	d, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("--max-message-bytes %d: %v", MinMaxMessageBytes, err)
	}
	stop := start(d)
	defer stop()
	if proof := prove(t, d.Addr(), &cuzkv1.SubmitProofRequest{RequestId: "small", Circuit: "mulchain", Constraints: 1 << 9}); len(proof) == 0 {
		t.Error("no proof at the minimum bound")
	}
	conn, err := grpc.NewClient(d.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	api := cuzkv1.NewProvingEngineClient(conn)
	if _, err := api.GetStatus(ctx, &cuzkv1.GetStatusRequest{}); err != nil {
		t.Errorf("GetStatus at the minimum bound: %v", err)
	}
	if _, err := api.GetMetrics(ctx, &cuzkv1.GetMetricsRequest{}); err != nil {
		t.Errorf("GetMetrics at the minimum bound: %v", err)
	}
}

// A --memory-budget above physical memory bounds nothing: it is said in
// one warning line at start (it was taken silently), and a budget within
// memory is not.
func TestABudgetAbovePhysicalMemoryIsSaidAtStart(t *testing.T) {
	mem := engine.PhysicalMemory()
	if mem == 0 {
		t.Skip("physical memory unknown on this host")
	}
	for budget, warn := range map[string]bool{"99999TiB": true, "1GiB": false, "": false} {
		log := &logtest.Buffer{}
		cfg := cpuConfig(t, log)
		cfg.MemoryBudget = budget
		d, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatalf("--memory-budget %q: %v", budget, err)
		}
		if err := start(d)(); err != nil {
			t.Fatalf("--memory-budget %q: Run: %v", budget, err)
		}
		var lines []string
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.Contains(l, "--memory-budget") {
				lines = append(lines, l)
			}
		}
		want := "cuzk serve: warning: --memory-budget 99999.0 TiB is above the host's physical memory (" + human.Bytes(mem) + "): it bounds nothing"
		if warn && (len(lines) != 1 || lines[0] != want) {
			t.Errorf("--memory-budget %q: %q, want one line %q", budget, lines, want)
		}
		if !warn && len(lines) != 0 {
			t.Errorf("--memory-budget %q: %q, want no warning", budget, lines)
		}
	}
}

// A malformed --listen or --metrics-listen is refused by its form before
// the GPU probe and the key loads (it failed at the listen, after them):
// with --backend cuda on a host without CUDA the listen error still comes
// first, naming the flag and what it wants.
func TestNewRefusesAMalformedListenAddressBeforeTheGPUProbe(t *testing.T) {
	for _, c := range []struct {
		metrics bool
		addr    string
		want    string
	}{
		{false, "nonsense", `serve: --listen "nonsense": want host:port or unix:///path: address nonsense: missing port in address`},
		{false, "127.0.0.1:99999", `serve: --listen "127.0.0.1:99999": port 99999 out of range (want 0 to 65535)`},
		{false, "127.0.0.1:no-such-service", `serve: --listen "127.0.0.1:no-such-service": port "no-such-service" is neither a number from 0 to 65535 nor a service name`},
		{true, "9464", `serve: --metrics-listen "9464": want host:port (e.g. 127.0.0.1:9820): missing port in address`},
	} {
		log := &logtest.Buffer{}
		cfg := cpuConfig(t, log)
		cfg.Backend = "cuda"
		if c.metrics {
			cfg.MetricsListen = c.addr
		} else {
			cfg.Listen = c.addr
		}
		if _, err := New(context.Background(), cfg); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.addr, err, c.want)
		}
		if log.String() != "" {
			t.Errorf("%s: logged %q before refusing", c.addr, log.String())
		}
	}
	for _, ok := range []string{"127.0.0.1:0", "[::1]:9820", ":9820", "localhost:http"} {
		if err := checkListen("--listen", ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}

// The last line counts one proof in the singular ("1 proofs succeeded").
func TestShutdownSummaryCountsOneProofInTheSingular(t *testing.T) {
	for n, want := range map[uint64]string{0: "stopped: 0 proofs succeeded", 1: "stopped: 1 proof succeeded", 2: "stopped: 2 proofs succeeded"} {
		if got := shutdownSummary(engine.Status{Succeeded: n}); !strings.HasPrefix(got, "cuzk serve: "+want+",") {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}

// A --cache-dir nothing can be stored in is said once, at start, before
// the daemon listens, and proving still works without storing: it was
// said only at the first job (a new user's trial), by each pipeline.
func TestAnUnwritableCacheDirIsSaidAtStartAndProvingGoesOn(t *testing.T) {
	for how, dir := range keycachetest.UnwritableDirs(t) {
		t.Run(how, func(t *testing.T) {
			log := &logtest.Buffer{}
			cfg := cpuConfig(t, log)
			cfg.CacheDir = dir
			d, err := New(context.Background(), cfg)
			if err != nil {
				t.Fatalf("New with an unwritable --cache-dir: %v, want a daemon that proves uncached", err)
			}
			said := func() []string {
				var lines []string
				for _, l := range strings.Split(log.String(), "\n") {
					if strings.Contains(l, "cache") && !strings.Contains(l, "circuit cache: keyed") {
						lines = append(lines, l)
					}
				}
				return lines
			}
			if lines := said(); len(lines) != 1 || !strings.HasPrefix(lines[0], "cuzk serve: warning: the cache directory "+dir+" cannot store files (") ||
				!strings.Contains(lines[0], "--cache-dir") {
				t.Fatalf("at start: %q, want one warning naming the directory, why and --cache-dir", lines)
			}
			stop, stopped := start(d), false
			defer func() {
				if !stopped {
					stop()
				}
			}()
			proof := prove(t, d.Addr(), &cuzkv1.SubmitProofRequest{RequestId: "uncached", Circuit: "mulchain", Constraints: 1 << 9})
			stopped = true
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if len(proof) == 0 {
				t.Error("no proof")
			}
			if lines := said(); len(lines) != 1 {
				t.Errorf("after a job: %q, want the start's line alone", lines)
			} else {
				t.Log(lines[0])
			}
		})
	}
}
