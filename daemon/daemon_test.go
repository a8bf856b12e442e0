package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/logtest"
)

func cpuConfig(t *testing.T, log *logtest.Buffer) Config {
	cfg := DefaultConfig()
	dir := t.TempDir()
	cfg.Backend, cfg.Release, cfg.Listen, cfg.MetricsListen = "cpu", "sync", "127.0.0.1:0", "127.0.0.1:0"
	cfg.TraceFile, cfg.CacheDir, cfg.Log = filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "cache"), log
	cfg.ShutdownTimeout = time.Second
	return cfg
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
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	if got := <-ready; got[0] != d.Addr() || got[1] != d.MetricsAddr() {
		t.Errorf("Ready(%v), want %s %s", got, d.Addr(), d.MetricsAddr())
	}
	cancel()
	if err := <-ran; err != nil {
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
