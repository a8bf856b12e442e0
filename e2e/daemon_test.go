package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelcuzk/otelcuzk/internal/logtest"
)

// daemon is a `cuzk serve` process on loopback.
type daemon struct {
	Addr        string // gRPC host:port
	MetricsAddr string // Prometheus host:port
	cmd         *exec.Cmd
	done        chan error
	stderr      *logtest.Buffer
	exited      bool
}

// startTracedDaemon starts a Jaeger and a daemon exporting to it over
// OTLP/gRPC as service e2e-serve-STAMP, STAMP the start's Unix time in ns
// (for the test's other names).
func startTracedDaemon(t *testing.T) (j *jaegerInstance, d *daemon, service string, stamp int64) {
	j = startJaeger(t)
	stamp = time.Now().UnixNano()
	service = fmt.Sprintf("e2e-serve-%d", stamp)
	return j, startDaemon(t, j.otlpEnv("grpc", service)), service, stamp
}

// startDaemon runs `cuzk serve` with env (the OTEL_* of the test) and
// waits until its gRPC and metrics ports answer; it is stopped with SIGTERM
// at the end of the test, which must exit 0.
func startDaemon(t *testing.T, env []string, extraArgs ...string) *daemon {
	t.Helper()
	a := freeLoopbackAddrs(t, 2)
	d := &daemon{Addr: a[0], MetricsAddr: a[1], done: make(chan error, 1), stderr: &logtest.Buffer{}}
	// CPU and sync release: the tree of cpuLayerParents.
	args := append([]string{"serve", "--listen", d.Addr, "--metrics-listen", d.MetricsAddr,
		"--backend", "cpu", "--release", "sync", "--cache-dir", filepath.Join(binDir, "keys")}, extraArgs...)
	d.cmd = exec.Command(cuzkBin(t), args...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = d.stderr, d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		d.Stop(t)
		if t.Failed() {
			t.Logf("cuzk serve output (last 4 KiB):\n%s", tail([]byte(d.stderr.String()), 4096))
		}
	})
	err := waitFor(context.Background(), 60*time.Second, func() error {
		select {
		case err := <-d.done:
			d.exited = true
			return fmt.Errorf("cuzk serve exited: %v\n%s", err, d.stderr.String())
		default:
		}
		c, err := net.DialTimeout("tcp", d.Addr, 200*time.Millisecond)
		if err != nil {
			return err
		}
		c.Close()
		_, err = d.metrics()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Stop sends SIGTERM and checks a clean exit (0) within 60 s.
func (d *daemon) Stop(t *testing.T) {
	if d.exited {
		return
	}
	d.exited = true
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("cuzk serve after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		t.Error("cuzk serve still running 60 s after SIGTERM")
	}
}

// metrics returns the Prometheus text exposition of the daemon.
func (d *daemon) metrics() (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + d.MetricsAddr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	return string(b), nil
}

// metricValue sums the samples of metric (any labels) in a Prometheus text
// exposition; found is false when there is none.
func metricValue(exposition, metric string) (sum float64, found bool) {
	sc := bufio.NewScanner(strings.NewReader(exposition))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric) {
			continue
		}
		rest := line[len(metric):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // a longer name with this prefix
		}
		fields := strings.Fields(line[strings.LastIndex(line, "}")+1:])
		if strings.HasPrefix(rest, " ") {
			fields = strings.Fields(rest)
		}
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

var anyTraceID = regexp.MustCompile(`(?i)trace(?:[ _-]?id)?\W{0,8}([0-9a-f]{32})\b`)

// submit runs `cuzk submit` against d and returns its output and the trace
// id it printed.
func submit(t *testing.T, d *daemon, env []string, requestID string) (out, traceID string) {
	t.Helper()
	out, _ = runProgram(t, 3*time.Minute, env, cuzkBin(t), "submit", "--addr", d.Addr,
		"--circuit", "mulchain", "--constraints", fmt.Sprint(e2eConstraints), "--request-id", requestID)
	m := anyTraceID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("cuzk submit printed no trace id:\n%s", out)
	}
	if !regexp.MustCompile(`(?i)ACCEPTED|verified:?\s+true`).MatchString(out) {
		t.Errorf("cuzk submit: proof not reported verified:\n%s", out)
	}
	return out, strings.ToLower(m[1])
}

// daemonLayers checks the daemon's tree: engine.job under a gRPC server
// span of the daemon, and every CPU layer below it as in a local prove.
func daemonLayers(t *testing.T, j *jaegerInstance, traceID, daemonService string) spanTree {
	t.Helper()
	spans := traceOf(t, j, traceID, layerNames()...)
	st := newSpanTree(spans)
	job := st.one(t, "engine.job")
	server := st.byID[job.ParentID]
	if server.Service != daemonService || !strings.HasPrefix(server.Name, "cuzk.v1.ProvingEngine/") {
		t.Errorf("engine.job's parent is %q of service %q, want the daemon's cuzk.v1.ProvingEngine/* server span", server.Name, server.Service)
	}
	// engine.job's parent is checked above; the rest as in a local prove.
	assertLayers(t, spans, server.Name)
	for _, s := range spans {
		if _, isLayer := cpuLayerParents[s.Name]; isLayer && s.Service != daemonService {
			t.Errorf("%s reported by service %q, want %q", s.Name, s.Service, daemonService)
		}
	}
	return st
}

// submitService is the service name `cuzk submit` reports its client
// spans under: the OTEL_SERVICE_NAME that otlpEnv sets, which is also
// submit's own default.
const submitService = "cuzk-submit"

// TestSubmitTraceCrossesDaemon: `cuzk submit` talks to `cuzk serve`; both
// export over OTLP gRPC. Jaeger holds one trace, with the trace id submit
// printed, across the two services: submit's client span at the root, the
// daemon's server span under it, engine.job and every layer below. The
// request id finds it through the tag search, and the dashboard's metrics
// are served.
func TestSubmitTraceCrossesDaemon(t *testing.T) {
	j, d, daemonService, stamp := startTracedDaemon(t)

	requestID := fmt.Sprintf("e2e-req-%d", stamp)
	_, traceID := submit(t, d, j.otlpEnv("grpc", submitService), requestID)
	st := daemonLayers(t, j, traceID, daemonService)

	// Walk up from engine.job: through the daemon's server span to the
	// client span of submit, the root.
	s := st.one(t, "engine.job")
	services := map[string]bool{}
	for hops := 0; hops < 20; hops++ {
		services[s.Service] = true
		p, ok := st.byID[s.ParentID]
		if !ok {
			break
		}
		s = p
	}
	if s.ParentID != "" || s.Service != submitService {
		t.Errorf("top of engine.job's ancestry is %s of %q (parent %q), want the root client span of %s", s.Name, s.Service, s.ParentID, submitService)
	}
	if len(services) != 2 {
		t.Errorf("engine.job's ancestry crosses services %v, want %s and %s", services, submitService, daemonService)
	}
	job := st.one(t, "engine.job")
	if job.Attrs["cuzk.request.id"] != requestID {
		t.Errorf("engine.job cuzk.request.id = %v, want %s", job.Attrs["cuzk.request.id"], requestID)
	}
	assertFoundByTag(t, j, daemonService, "cuzk.request.id", requestID, traceID)
	assertDashboardMetrics(t, d)

	// A caller that traces itself hands submit its span in TRACEPARENT:
	// the proof joins the caller's trace, under the caller's span.
	callerTrace := fmt.Sprintf("%016x%016x", stamp, stamp^0x5a5a5a5a)
	const callerSpan = "00f067aa0ba902b7"
	env := append(j.otlpEnv("grpc", submitService), "TRACEPARENT=00-"+callerTrace+"-"+callerSpan+"-01")
	_, got := submit(t, d, env, requestID+"-traced")
	if got != callerTrace {
		t.Fatalf("submit with TRACEPARENT reported trace %s, want the caller's %s", got, callerTrace)
	}
	st = daemonLayers(t, j, callerTrace, daemonService)
	s = st.one(t, "engine.job")
	for hops := 0; hops < 20; hops++ {
		p, ok := st.byID[s.ParentID]
		if !ok {
			break
		}
		s = p
	}
	if s.Service != submitService || s.ParentID != callerSpan {
		t.Errorf("top of engine.job's ancestry is %s of %q with parent %q, want submit's client span under the caller's span %s",
			s.Name, s.Service, s.ParentID, callerSpan)
	}
}

// TestCurioTaskExampleIsOneTraceWithDaemon: examples/curio-task plays
// Curio (tracing set up as Lotus does: OTLP over HTTP; a harmonytask span;
// the daemon called through prover/client); with the daemon exporting over
// gRPC, Jaeger holds one trace whose root is Curio's task span, with the
// task's trace id kept through the daemon, and whose engine.job carries
// the task's correlation fields, by which the tag search finds it.
func TestCurioTaskExampleIsOneTraceWithDaemon(t *testing.T) {
	j, d, daemonService, stamp := startTracedDaemon(t)
	curioService := fmt.Sprintf("e2e-curio-%d", stamp)

	taskID, sector := fmt.Sprint(stamp%1_000_000_000), fmt.Sprint(stamp%100_000)
	out, _ := runProgram(t, 3*time.Minute, nil, curioTaskBin(t),
		"--addr", d.Addr, "--otlp-endpoint", j.OTLPHTTP, "--service", curioService,
		"--circuit", "mulchain", "--constraints", fmt.Sprint(e2eConstraints),
		"--task-id", taskID, "--task-name", "WdPost", "--miner", "f01234", "--sector", sector)
	m := anyTraceID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("curio-task printed no trace id:\n%s", out)
	}
	traceID := strings.ToLower(m[1])
	st := daemonLayers(t, j, traceID, daemonService)

	task := st.one(t, "curio.task")
	if task.ParentID != "" || task.Service != curioService {
		t.Errorf("curio.task: parent %q service %q, want the root, of %s", task.ParentID, task.Service, curioService)
	}
	// engine.job descends from the task span, through the daemon's server
	// span and Curio's client span.
	s, hops := st.one(t, "engine.job"), 0
	for ; s.ParentID != "" && hops < 20; hops++ {
		s = st.byID[s.ParentID]
	}
	if s.SpanID != task.SpanID {
		t.Errorf("engine.job's root is %q, want curio.task", s.Name)
	}
	job := st.one(t, "engine.job")
	want := map[string]string{"curio.task.id": taskID, "curio.task.name": "WdPost", "filecoin.miner.id": "f01234", "filecoin.sector.number": sector}
	for key, v := range want {
		if fmt.Sprint(job.Attrs[key]) != v {
			t.Errorf("engine.job %s = %v, want %s", key, job.Attrs[key], v)
		}
	}
	// An integer correlation key is searchable too.
	assertFoundByTag(t, j, daemonService, "filecoin.sector.number", sector, traceID)
}
