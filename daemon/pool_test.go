package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/internal/logtest"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/cpu"
	"github.com/otelcuzk/otelcuzk/prover/engine"
)

// The pools of one daemon keep together at most what the budget leaves of
// the host, never more than one Releaser's default, split evenly.
func TestPoolLimitKeepsBudgetAndPoolsWithinTheHost(t *testing.T) {
	const gib = uint64(1) << 30
	for _, tc := range []struct {
		name        string
		mem, budget uint64
		n           int
		want        uint64
	}{
		{"70% budget, 1 GPU + cpu", 100 * gib, 70 * gib, 2, 15 * gib},
		{"70% budget, 4 GPUs + cpu", 100 * gib, 70 * gib, 5, 6 * gib},
		{"70% budget, 8 GPUs, odd bytes", 100 * gib, 70 * gib, 8, 30 * gib / 8},
		{"bytes budget, 2 GPUs", 64 * gib, 40 * gib, 2, 12 * gib},
		{"room above the default: capped at 64 GiB in all", 1024 * gib, 512 * gib, 2, 32 * gib},
		{"cpu alone", 24 * gib, 16 * gib, 1, 8 * gib},
		{"no budget: a quarter", 128 * gib, 0, 2, 16 * gib},
		{"no budget on a large host: capped", 1024 * gib, 0, 4, 16 * gib},
		{"budget is all of memory", 64 * gib, 64 * gib, 2, 0},
		{"budget beyond memory", 64 * gib, 100 * gib, 3, 0},
		{"memory unknown: the default in all", 0, 10 * gib, 4, 16 * gib},
		{"no pipeline counted: as one", 32 * gib, 16 * gib, 0, 16 * gib},
	} {
		got := poolLimit(tc.mem, tc.budget, tc.n)
		if uint64(got) != tc.want {
			t.Errorf("%s: poolLimit(%s, %s, %d) = %s, want %s", tc.name, human.Bytes(tc.mem), human.Bytes(tc.budget), tc.n,
				human.Bytes(uint64(got)), human.Bytes(tc.want))
		}
		if tc.mem > 0 && uint64(got)*uint64(max(tc.n, 1))+tc.budget > max(tc.mem, tc.budget) {
			t.Errorf("%s: budget %s + %d pools of %s exceed the host's %s", tc.name, human.Bytes(tc.budget), tc.n, human.Bytes(uint64(got)), human.Bytes(tc.mem))
		}
	}
}

var poolGPUOnce sync.Once

const poolGPUFactory = "fakecuda-pool-test"

// serve --release pool gives each pipeline's Releaser (two fake GPUs and
// the CPU pipeline here) an even share of what the budget leaves of the
// host, and says the pools in its start line beside the budget.
func TestServeReleasePoolBoundsEachPipelinesPool(t *testing.T) {
	mem := engine.PhysicalMemory()
	if mem == 0 {
		t.Skip("physical memory unknown here")
	}
	poolGPUOnce.Do(func() {
		backend.Register(poolGPUFactory, func(_ context.Context, o backend.Options) (backend.Backend, error) {
			return cpu.New(o.TracerProvider), nil
		})
	})
	for _, tc := range []struct {
		budget string
		want   uint64 // in all
	}{
		{"", min(uint64(buffer.DefaultPoolLimit), mem-uint64(float64(mem)*engine.DefaultBudgetShare))},
		{"0", min(uint64(buffer.DefaultPoolLimit), mem/4)},
	} {
		log := &logtest.Buffer{}
		cfg := cpuConfig(t, log)
		cfg.Backend, cfg.Release, cfg.CPUWorkers, cfg.MemoryBudget, cfg.GPUFactory = "cuda", "pool", 1, tc.budget, poolGPUFactory
		cfg.GPUs = func() ([]cudaspans.DeviceInfo, error) {
			return []cudaspans.DeviceInfo{{Ordinal: 0, Name: "GPU zero"}, {Ordinal: 1, Name: "GPU one"}}, nil
		}
		d, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		stop := start(d)
		pipes := d.stages.pipes
		if len(pipes) != 3 {
			t.Fatalf("--memory-budget %q: %d pipelines, want 3 (2 GPUs and the CPU)", tc.budget, len(pipes))
		}
		each := tc.want / 3
		for i, p := range pipes {
			if got := p.Releaser().PoolLimit(); uint64(got) != each || p.Releaser().Mode() != buffer.ReleasePool {
				t.Errorf("--memory-budget %q: pipeline %d's Releaser: %s, pool limit %s, want pool with %s (a third of %s)",
					tc.budget, i, p.Releaser().Mode(), human.Bytes(uint64(got)), human.Bytes(each), human.Bytes(tc.want))
			}
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("buffer pools %s (%s for each of 3 pipelines)", human.Bytes(each*3), human.Bytes(each))
		line := ""
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.Contains(l, "cuzk serve: listening on") {
				line = l
			}
		}
		if !strings.Contains(line, want) {
			t.Errorf("--memory-budget %q: start line %q, want it to say %q\n%s", tc.budget, line, want, log.String())
		}
	}
}

// Outside pool mode the start line says no pool.
func TestServeStartLineSaysNoPoolOutsidePoolMode(t *testing.T) {
	log := &logtest.Buffer{}
	d, err := New(context.Background(), cpuConfig(t, log))
	if err != nil {
		t.Fatal(err)
	}
	if err := start(d)(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "memory budget") || strings.Contains(log.String(), "buffer pool") {
		t.Errorf("--release sync: %q, want the budget and no buffer pool", log.String())
	}
}

// A --release pool daemon's GetStatus says the mode, the pools' limit (the
// start line's, poolLimit's share for its one pipeline) and, after a proof
// on the CPU backend whose buffers went back to the pool, what they hold;
// its metrics page gives the same two numbers. A --release async daemon
// says its mode and no pool.
func TestPoolDaemonsStatusAndMetricsSayThePoolsLimitAndWhatTheyHold(t *testing.T) {
	for _, mode := range []string{"pool", "async"} {
		cfg := cpuConfig(t, &logtest.Buffer{})
		cfg.Release = mode
		d, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		stop := start(d)
		prove(t, d.Addr(), &cuzkv1.SubmitProofRequest{RequestId: "pooled-" + mode, Circuit: "mulchain", Constraints: 1 << 8})
		conn, err := grpc.NewClient(d.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		status := func() *cuzkv1.Memory {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := cuzkv1.NewProvingEngineClient(conn).GetStatus(ctx, &cuzkv1.GetStatusRequest{})
			if err != nil {
				t.Fatalf("GetStatus: %v", err)
			}
			return st.GetMemory()
		}
		m := status()
		if mode == "pool" {
			// The pool takes the buffers when the proof's release runs,
			// which may end after the answer.
			for deadline := time.Now().Add(30 * time.Second); m.GetPoolHeldBytes() == 0 && time.Now().Before(deadline); m = status() {
				time.Sleep(20 * time.Millisecond)
			}
			limit := uint64(d.stages.pipes[0].Releaser().PoolLimit())
			if m.GetReleaseMode() != "pool" || m.GetPoolLimitBytes() != limit || limit == 0 ||
				m.GetPoolHeldBytes() == 0 || m.GetPoolHeldBytes() > limit {
				t.Errorf("pool: GetStatus memory %v, want release_mode pool, pool_limit_bytes %d, 0 < pool_held_bytes <= the limit", m, limit)
			}
			if want := uint64(poolLimit(engine.PhysicalMemory(), m.GetBudgetBytes(), 1)); limit != want {
				t.Errorf("pool: the one pipeline's limit %s, want poolLimit's %s", human.Bytes(limit), human.Bytes(want))
			}
		} else if m.GetReleaseMode() != mode || m.GetPoolLimitBytes() != 0 || m.GetPoolHeldBytes() != 0 {
			t.Errorf("%s: GetStatus memory %v, want release_mode %s and no pool", mode, m, mode)
		}
		conn.Close()
		res, err := http.Get("http://" + d.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range []struct {
			name  string
			bytes uint64
		}{{"cuzk_memory_pool_limit_bytes", m.GetPoolLimitBytes()}, {"cuzk_memory_pool_held_bytes", m.GetPoolHeldBytes()}} {
			// Nothing proves between GetStatus and the scrape: the same
			// bytes (written as a float, 7.58e+09 for a large limit).
			re := regexp.MustCompile(`(?m)^` + g.name + `\{[^}]*cuzk_release_mode="` + mode + `"[^}]*\} (\S+)$`)
			v := -1.0
			if got := re.FindSubmatch(body); got != nil {
				if v, err = strconv.ParseFloat(string(got[1]), 64); err != nil {
					v = -1
				}
			}
			if v != float64(g.bytes) {
				t.Errorf("%s: metrics lack %s %d with cuzk_release_mode %q:\n%s", mode, g.name, g.bytes, mode, body)
			}
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
}
