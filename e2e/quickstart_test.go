package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
)

// devComposeUp is the command of the README's quickstart that starts the
// dev profile; the line after it in the same block is the prove command.
const devComposeUp = "docker compose -f deploy/compose.dev.yaml up -d"

// readmeQuickstart returns the README's command that proves against the
// dev profile: the line after devComposeUp in its quickstart block.
func readmeQuickstart(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == devComposeUp && sc.Scan() {
			return strings.TrimSpace(sc.Text())
		}
	}
	t.Fatalf("README has no line %q followed by the prove command", devComposeUp)
	return ""
}

// quickstartPorts are the host ports the README's prove command names: the
// OTLP endpoint's and the Jaeger UI's.
func quickstartPorts(t *testing.T, cmd string) (otlp, ui *url.URL) {
	t.Helper()
	for _, f := range strings.Fields(cmd) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		u, err := url.Parse(v)
		if err != nil {
			t.Fatalf("README quickstart: %s: %v", f, err)
		}
		switch k {
		case "OTEL_EXPORTER_OTLP_ENDPOINT":
			otlp = u
		case "JAEGER_UI":
			ui = u
		}
	}
	if otlp == nil || ui == nil {
		t.Fatalf("README quickstart %q sets no OTEL_EXPORTER_OTLP_ENDPOINT or no JAEGER_UI", cmd)
	}
	return otlp, ui
}

// TestDevProfilePublishesWhatTheREADMESends: deploy/compose.dev.yaml loads
// with compose-go, is as safe as compose.yaml (127.0.0.1 binds only), runs
// Jaeger alone (no Collector: no sampling), and publishes Jaeger's OTLP
// HTTP port where the README's quickstart sends and its UI where the
// README's JAEGER_UI points, plus OTLP gRPC on 4317.
func TestDevProfilePublishesWhatTheREADMESends(t *testing.T) {
	path, err := filepath.Abs(filepath.Join(deployDir, "compose.dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadCompose(context.Background(), path)
	if err != nil {
		t.Fatalf("compose-go: %v", err)
	}
	for _, problem := range composeProblems(p) {
		t.Error(problem)
	}
	if names := p.ServiceNames(); len(names) != 1 || names[0] != "jaeger" {
		t.Fatalf("the dev profile runs %v, want jaeger alone", names)
	}
	published := map[uint32]string{} // container port -> host port
	for _, port := range p.Services["jaeger"].Ports {
		published[port.Target] = port.Published
	}
	otlp, ui := quickstartPorts(t, readmeQuickstart(t))
	for _, c := range []struct {
		what   string
		target uint32
		u      *url.URL
	}{{"OTLP HTTP", 4318, otlp}, {"UI", 16686, ui}, {"OTLP gRPC", 4317, nil}} {
		host, ok := published[c.target]
		if !ok {
			t.Errorf("the dev profile does not publish Jaeger's %s port %d", c.what, c.target)
			continue
		}
		if c.u != nil && (c.u.Hostname() != "127.0.0.1" || c.u.Port() != host) {
			t.Errorf("README sends %s to %s, the dev profile publishes it on 127.0.0.1:%s", c.what, c.u.Host, host)
		}
	}
	if !strings.Contains(p.Services["jaeger"].Image, "jaegertracing/jaeger:") {
		t.Errorf("the dev profile's image is %q, not Jaeger", p.Services["jaeger"].Image)
	}
}

// startJaegerOn starts a Jaeger whose query API and OTLP receivers listen
// on the given host:port addresses (the dev profile's), skipping the test
// when one is taken on this machine.
func startJaegerOn(t *testing.T, query, otlpGRPC, otlpHTTP string) *jaegerInstance {
	t.Helper()
	for _, a := range []string{query, otlpGRPC, otlpHTTP} {
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Skipf("the dev profile's port %s is taken on this machine: %v", a, err)
		}
		l.Close()
	}
	j := &jaegerInstance{bin: jaegerBinary(t), dir: t.TempDir(), QueryAddr: query, OTLPGRPC: otlpGRPC, OTLPHTTP: otlpHTTP,
		queryGRPC: freeLoopbackAddrs(t, 1)[0]}
	launchJaeger(t, j)
	return j
}

// TestREADMEQuickstartFindsTheTraceInJaeger runs the README's quickstart
// prove command as written (go run ./cmd/cuzk is the cuzk binary of this
// run) against a real Jaeger on the dev profile's ports, then opens the
// link cuzk prove printed: the trace, engine.job included, is in Jaeger
// within 10 s of the command's end.
func TestREADMEQuickstartFindsTheTraceInJaeger(t *testing.T) {
	cmdline := readmeQuickstart(t)
	otlp, ui := quickstartPorts(t, cmdline)
	j := startJaegerOn(t, ui.Host, "127.0.0.1:4317", otlp.Host)
	if !strings.Contains(cmdline, "go run ./cmd/cuzk prove") {
		t.Fatalf("README quickstart %q does not run go run ./cmd/cuzk prove", cmdline)
	}
	shell := strings.Replace(cmdline, "go run ./cmd/cuzk", cuzkBin(t), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", shell)
	cmd.Dir = t.TempDir() // its proof and nothing else land here
	// The caller's OTEL_* must not redirect the README's command.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "OTEL_") && !strings.HasPrefix(e, "JAEGER_UI=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", shell, err, out)
	}
	end := time.Now()
	m := regexp.MustCompile(`(?m)^jaeger +(\S+/trace/([0-9a-f]{32}))$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("cuzk prove printed no jaeger link:\n%s", out)
	}
	link, id := string(m[1]), string(m[2])
	if want := strings.TrimRight(ui.String(), "/") + "/trace/" + id; link != want {
		t.Errorf("link %s, want %s", link, want)
	}
	var spans []tracefile.Span
	err = waitFor(context.Background(), 10*time.Second, func() error {
		got, err := tracefile.FetchJaeger(context.Background(), nil, j.QueryURL(), id)
		if err != nil {
			return err
		}
		if missing := missingNames(got, []string{"engine.job", "groth16.prove", "proof.verify"}); len(missing) > 0 {
			return fmt.Errorf("trace %s lacks %v", id, missing)
		}
		spans = got
		return nil
	})
	if err != nil {
		t.Fatalf("%v (%.1f s after cuzk prove ended)", err, time.Since(end).Seconds())
	}
	t.Logf("trace %s: %d spans in Jaeger %.1f s after cuzk prove ended", id, len(spans), time.Since(end).Seconds())
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s", link, resp.Status)
	}
}

// TestComposePassesEveryCollectorVariable: every OTELCOL_* variable that
// deploy/otel-collector.yaml reads (except its listen addresses, fixed
// inside the container) and deploy/README.md documents reaches the
// Collector's container in compose.yaml, with otel-collector.yaml's own
// default when unset and the shell's value when set; the sampling-note
// service's line states the same defaults.
func TestComposePassesEveryCollectorVariable(t *testing.T) {
	col, err := os.ReadFile(filepath.Join(deployDir, "otel-collector.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(deployDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{}
	for _, m := range regexp.MustCompile(`\$\{env:(OTELCOL_[A-Z_0-9]+):-([^}]*)\}`).FindAllStringSubmatch(string(col), -1) {
		if !strings.HasSuffix(m[1], "_LISTEN") {
			defaults[m[1]] = m[2]
		}
	}
	if len(defaults) < 8 {
		t.Fatalf("found %d OTELCOL_ variables in otel-collector.yaml: not the file", len(defaults))
	}
	path, err := filepath.Abs(filepath.Join(deployDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	load := func(env map[string]string) *types.Project {
		var kv []string
		for k, v := range env {
			kv = append(kv, k+"="+v)
		}
		opts, err := cli.NewProjectOptions([]string{path}, cli.WithWorkingDirectory(filepath.Dir(path)),
			cli.WithEnv(kv), cli.WithName("otelcuzk"), cli.WithResolvedPaths(true))
		if err != nil {
			t.Fatal(err)
		}
		p, err := opts.LoadProject(context.Background())
		if err != nil {
			t.Fatalf("compose-go: %v", err)
		}
		return p
	}
	unset, set := load(nil), load(map[string]string{"OTELCOL_DECISION_WAIT": "2s", "OTELCOL_SAMPLE_PERCENT": "100"})
	for name, def := range defaults {
		if name != "OTELCOL_METRICS_HOST" && name != "OTELCOL_METRICS_PORT" && !strings.Contains(string(doc), name) {
			t.Errorf("deploy/README.md does not document %s", name)
		}
		v := unset.Services["otel-collector"].Environment[name]
		if v == nil {
			t.Errorf("compose.yaml does not pass %s to the Collector", name)
			continue
		}
		if name != "OTELCOL_METRICS_HOST" && *v != def {
			t.Errorf("%s unset: the Collector gets %q, otel-collector.yaml's default is %q", name, *v, def)
		}
	}
	for name, want := range map[string]string{"OTELCOL_DECISION_WAIT": "2s", "OTELCOL_SAMPLE_PERCENT": "100"} {
		if v := set.Services["otel-collector"].Environment[name]; v == nil || *v != want {
			t.Errorf("%s=%s in the shell: the Collector gets %v", name, want, v)
		}
	}
	note := strings.Join(unset.Services["sampling-note"].Command, " ")
	for _, want := range []string{defaults["OTELCOL_SLOW_PROOF_MS"] + " ms", defaults["OTELCOL_SAMPLE_PERCENT"] + " %",
		defaults["OTELCOL_DECISION_WAIT"] + " after", "error", "compose.dev.yaml"} {
		if !strings.Contains(note, want) {
			t.Errorf("the sampling note %q lacks %q", note, want)
		}
	}
	if note2 := strings.Join(set.Services["sampling-note"].Command, " "); !strings.Contains(note2, "100 %") || !strings.Contains(note2, "2s after") {
		t.Errorf("the sampling note does not follow the shell's values: %q", note2)
	}
}
