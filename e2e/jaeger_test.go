package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// jaegerVersion is the Go module version of github.com/jaegertracing/jaeger
// (Jaeger v2.13.0) pinned as a tool in tools/jaeger/go.mod.
const jaegerVersion = "v1.76.0"

// jaegerConfig is the Jaeger v2 (OpenTelemetry Collector based)
// configuration of one test instance: in-memory storage, OTLP gRPC and HTTP
// receivers and the query service, every endpoint on loopback and on ports
// picked by the test, and Jaeger's own telemetry off (the all-in-one
// default binds :8888 for metrics, and the query service's traces go to
// 127.0.0.1:4317: both may belong to someone else on a shared machine).
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  jaeger_query:
    enable_tracing: false
    storage:
      traces: memstore
    http:
      endpoint: %[1]s
    grpc:
      endpoint: %[2]s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[3]s
      http:
        endpoint: %[4]s
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// jaegerInstance is a Jaeger process on loopback. Its ports stay the same
// across stop and start, so exporters pointed at it reconnect.
type jaegerInstance struct {
	bin       string
	dir       string
	QueryAddr string // host:port of the HTTP query API and UI
	OTLPGRPC  string // host:port of the OTLP gRPC receiver
	OTLPHTTP  string // host:port of the OTLP HTTP receiver
	queryGRPC string
	cmd       *exec.Cmd
	done      chan error
	logPath   string
}

// jaegerBinary returns the Jaeger binary: $OTELCUZK_JAEGER_BIN when set
// (e2e/run.sh sets it), else the cached build under the user's cache
// directory, building it there when absent (several minutes, once).
func jaegerBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("OTELCUZK_JAEGER_BIN"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("user cache dir: %v", err)
	}
	p := filepath.Join(cache, "otelcuzk", "jaeger-"+jaegerVersion)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("building Jaeger %s into %s (once; takes minutes)", jaegerVersion, p)
	// tools/jaeger is its own module: Jaeger's dependency graph does not
	// build with the newer OTel, gRPC and Prometheus versions of ours.
	cmd := exec.Command("go", "build", "-p", "2", "-o", p+".tmp", "github.com/jaegertracing/jaeger/cmd/jaeger")
	cmd.Dir = filepath.Join("tools", "jaeger")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build jaeger: %v", err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
	return p
}

// freeLoopbackAddrs reserves n distinct loopback ports and returns them as
// host:port. The listeners are closed before return, so another process may
// take one in between; the window is small and the test fails loudly then.
func freeLoopbackAddrs(t testing.TB, n int) []string {
	t.Helper()
	var ls []net.Listener
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("reserve port: %v", err)
		}
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return addrs
}

// startJaeger starts a Jaeger on fresh loopback ports and stops it when the
// test ends.
func startJaeger(t testing.TB) *jaegerInstance {
	t.Helper()
	a := freeLoopbackAddrs(t, 4)
	j := &jaegerInstance{
		bin:       jaegerBinary(t),
		dir:       t.TempDir(),
		QueryAddr: a[0],
		queryGRPC: a[1],
		OTLPGRPC:  a[2],
		OTLPHTTP:  a[3],
	}
	launchJaeger(t, j)
	return j
}

// launchJaeger writes j's configuration (its four addresses) into j.dir,
// starts it and stops it when the test ends, then shows the end of its
// log if the test failed.
func launchJaeger(t testing.TB, j *jaegerInstance) {
	t.Helper()
	cfg := fmt.Sprintf(jaegerConfig, j.QueryAddr, j.queryGRPC, j.OTLPGRPC, j.OTLPHTTP)
	if err := os.WriteFile(filepath.Join(j.dir, "jaeger.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	j.logPath = filepath.Join(j.dir, "jaeger.log")
	if err := j.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		j.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(j.logPath); err == nil {
				t.Logf("jaeger log (last 4 KiB):\n%s", tail(b, 4096))
			}
		}
	})
}

// Start runs the Jaeger process and waits until its query API answers and
// both OTLP receivers accept connections (30 s at most).
func (j *jaegerInstance) Start() error {
	if j.cmd != nil {
		return errors.New("jaeger already running")
	}
	logf, err := os.OpenFile(j.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(j.bin, "--config", filepath.Join(j.dir, "jaeger.yaml"))
	cmd.Env = append(os.Environ(), "JAEGER_LISTEN_HOST=127.0.0.1", "OTEL_SDK_DISABLED=true")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start jaeger: %w", err)
	}
	j.cmd = cmd
	j.done = make(chan error, 1)
	go func() { j.done <- cmd.Wait(); logf.Close() }()

	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-j.done:
			j.cmd = nil
			b, _ := os.ReadFile(j.logPath)
			return fmt.Errorf("jaeger exited during start (%v):\n%s", err, tail(b, 2048))
		default:
		}
		if j.healthy() {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	j.Stop()
	return errors.New("jaeger not healthy after 30 s")
}

func (j *jaegerInstance) healthy() bool {
	resp, err := http.Get("http://" + j.QueryAddr + "/api/services")
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	for _, a := range []string{j.OTLPGRPC, j.OTLPHTTP} {
		c, err := net.DialTimeout("tcp", a, 200*time.Millisecond)
		if err != nil {
			return false
		}
		c.Close()
	}
	return true
}

// Stop ends the process (SIGTERM, then SIGKILL after 10 s) and waits until
// its ports are free again. Safe to call when not running.
func (j *jaegerInstance) Stop() {
	if j.cmd == nil {
		return
	}
	_ = j.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-j.done:
	case <-time.After(10 * time.Second):
		_ = j.cmd.Process.Kill()
		<-j.done
	}
	j.cmd = nil
}

// QueryURL is the base URL of the HTTP query API, e.g. http://127.0.0.1:1234.
func (j *jaegerInstance) QueryURL() string { return "http://" + j.QueryAddr }

// otlpEnv is the environment that points an otelcuzk.Setup program at this
// Jaeger over protocol "grpc" or "http/protobuf".
func (j *jaegerInstance) otlpEnv(protocol, service string) []string {
	endpoint := "http://" + j.OTLPGRPC
	if protocol == "http/protobuf" {
		endpoint = "http://" + j.OTLPHTTP
	}
	return []string{
		// The per-signal variables win over these; empty is unset.
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint,
		"OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol,
		"OTEL_EXPORTER_OTLP_INSECURE=true",
		"OTEL_SERVICE_NAME=" + service,
		"OTEL_BSP_SCHEDULE_DELAY=200",
	}
}

// startLogged starts cmd with its output in a new file at logPath and stops
// it when the test ends (SIGTERM, then SIGKILL after 10 s), logging the
// log's tail as what's when the test failed. The process's exit arrives on
// the channel (put it back after a look: the cleanup waits on it too).
func startLogged(t *testing.T, cmd *exec.Cmd, what, logPath string) chan error {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", what, tail(b, 4096))
		}
	})
	return done
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// waitFor polls f every 200 ms until it returns nil or timeout passes, and
// returns f's last error.
func waitFor(ctx context.Context, timeout time.Duration, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %w", timeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
