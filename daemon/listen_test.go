package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/logtest"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/api/endpoint"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/upstream/standin"
)

// socketDir is a short folder for unix sockets (a socket path is at most
// 107 bytes; t.TempDir's can be longer).
func socketDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "cuzk-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// As cuzk's daemon, this one listens on a unix socket (--listen
// unix:///path) and forwards to an upstream cuzk on one (--upstream
// unix:///path): Curio's client, which dials "unix://..." as it is, and
// prover/client reach it; the socket file goes with the daemon.
func TestListenAndUpstreamOnUnixSockets(t *testing.T) {
	dir := socketDir(t)
	fake := &standin.Fake{Delay: 50 * time.Millisecond, Report: standin.Timings{GPUComputeMS: 20, TotalMS: 50}}
	upAddr := "unix://" + filepath.Join(dir, "cuzk.sock")
	upLis, err := endpoint.Listen(upAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer fake.ServeListener(upLis)()
	log := &logtest.Buffer{}
	cfg := cpuConfig(t, log)
	front := "unix://" + filepath.Join(dir, "run", "front.sock") // its folder made
	cfg.Listen, cfg.Upstream = front, upAddr
	d, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.Addr() != front {
		t.Errorf("Addr %q, want %q", d.Addr(), front)
	}
	stop := start(d)
	if proof := prove(t, front, &cuzkv1.SubmitProofRequest{RequestId: "sock-1", ProofKind: cuzkv1.ProofKind_WINNING_POST, SectorSize: 32 << 30, RegisteredProof: 3}); string(proof) != "proof:sock-1" {
		t.Fatalf("prove over the sockets: proof %q", proof)
	}
	c, err := client.Dial(front)
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	st, err := c.Status(sctx)
	scancel()
	c.Close()
	if err != nil || !strings.Contains(fmt.Sprint(st.Kinds), "porep") {
		t.Errorf("prover/client over the socket: %+v %v", st, err)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(log.String(), "listening on "+front) || strings.Contains(log.String(), "reachable from other hosts") {
		t.Errorf("the start line does not name the socket, or warns of other hosts:\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "run", "front.sock")); !os.IsNotExist(err) {
		t.Errorf("the socket file outlives the daemon: %v", err)
	}
}

// Addresses that are neither host:port nor unix:///path are refused
// before anything starts, naming the flag.
func TestBadListenAndUpstreamAddressesAreRefused(t *testing.T) {
	for _, tc := range []struct{ listen, upstream, want string }{
		{"unix://", "", "--listen \"unix://\": no socket path"},
		{"localhost", "", "--listen \"localhost\": want host:port or unix:///path"},
		{"127.0.0.1:0", "unix://rel.sock", "--upstream \"unix://rel.sock\": unix:// takes an absolute path"},
		{"127.0.0.1:0", "cuzk host:9820", "--upstream \"cuzk host:9820\": blanks"},
	} {
		cfg := cpuConfig(t, &logtest.Buffer{})
		cfg.Listen, cfg.Upstream = tc.listen, tc.upstream
		d, err := New(context.Background(), cfg)
		if err == nil {
			d.Shutdown(context.Background())
			t.Errorf("%q %q: no error", tc.listen, tc.upstream)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q: %v, want %q", tc.listen, tc.upstream, err, tc.want)
		}
	}
}
