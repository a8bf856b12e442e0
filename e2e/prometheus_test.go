package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/prover"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/server"
)

// prometheusVersion is the Go module version of
// github.com/prometheus/prometheus that tools/prometheus builds (Prometheus
// v3.7.3, the image compose.yaml runs).
const prometheusVersion = "v0.307.3"

// prometheusBinary returns $env (OTELCUZK_PROMETHEUS_BIN or
// OTELCUZK_PROMTOOL_BIN; e2e/run.sh builds both). Without it the test
// skips, except in CI, where it fails.
func prometheusBinary(t testing.TB, env string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not set: run e2e/run.sh, which builds Prometheus", env)
	}
	t.Skipf("%s not set (e2e/run.sh builds Prometheus %s)", env, prometheusVersion)
	return ""
}

// TestPromtoolChecksPrometheusConfig: promtool of the same build accepts
// deploy/prometheus.yml and rejects it with a typo (so the check is real).
func TestPromtoolChecksPrometheusConfig(t *testing.T) {
	promtool := prometheusBinary(t, "OTELCUZK_PROMTOOL_BIN")
	cfg := filepath.Join(deployDir, "prometheus.yml")
	if out, err := exec.Command(promtool, "check", "config", cfg).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config %s: %v\n%s", cfg, err, out)
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "scrape_interval:", "scrape_intervall:", 1)
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	os.WriteFile(path, []byte(broken), 0o644)
	if out, err := exec.Command(promtool, "check", "config", path).CombinedOutput(); err == nil {
		t.Errorf("promtool accepted a config with an unknown field:\n%s", out)
	}
}

// prometheusInstance is a Prometheus server on loopback.
type prometheusInstance struct{ Addr string }

// startPrometheus runs Prometheus with scrapeConfigs (YAML of the
// scrape_configs list, every job scraped each second) until the test ends.
func startPrometheus(t *testing.T, scrapeConfigs string) *prometheusInstance {
	t.Helper()
	bin := prometheusBinary(t, "OTELCUZK_PROMETHEUS_BIN")
	dir := t.TempDir()
	cfg := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" + scrapeConfigs
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &prometheusInstance{Addr: freeLoopbackAddrs(t, 1)[0]}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+p.Addr)
	done := startLogged(t, cmd, "prometheus", filepath.Join(dir, "prometheus.log"))
	err := waitFor(context.Background(), 60*time.Second, func() error {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("prometheus exited: %v", err)
		default:
		}
		resp, err := http.Get("http://" + p.Addr + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/-/ready: HTTP %d", resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// query runs an instant PromQL query and returns the label sets of the
// series it returned.
func (p *prometheusInstance) query(expr string) ([]map[string]string, error) {
	resp, err := http.Get("http://" + p.Addr + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", expr, body.Error)
	}
	var out []map[string]string
	for _, r := range body.Data.Result {
		out = append(out, r.Metric)
	}
	return out, nil
}

// metricsLabelValues runs prover/server's Metrics in-process, one finished
// job per final engine state (a succeeded one verified), and returns the
// values each label takes: the stages and outcomes the daemon can report,
// so a stage added to metrics.go is expected on the dashboard too.
func metricsLabelValues(t *testing.T) map[string][]string {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	m, err := server.NewMetrics(mp, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for s := engine.StateQueued; s.String() != engine.State(-1).String(); s++ {
		if !s.Finished() {
			continue
		}
		info := engine.JobInfo{ID: "j", Circuit: "mulchain", State: s}
		if s == engine.StateSucceeded {
			info.Result = &prover.Result{Verified: true, Backend: "cpu"}
		}
		m.JobFinished(info)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	values := map[string]map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			var sets [][]attribute.KeyValue
			switch d := mt.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes.ToSlice())
				}
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes.ToSlice())
				}
			}
			for _, set := range sets {
				for _, kv := range set {
					// The Prometheus name of an attribute: dots become _.
					k := strings.ReplaceAll(string(kv.Key), ".", "_")
					if values[k] == nil {
						values[k] = map[string]bool{}
					}
					values[k][kv.Value.Emit()] = true
				}
			}
		}
	}
	out := map[string][]string{}
	for k, vs := range values {
		for v := range vs {
			out[k] = append(out[k], v)
		}
		sort.Strings(out[k])
	}
	return out
}

// dashboardTarget is one Prometheus query of the dashboard.
type dashboardTarget struct {
	Panel, RefID, Expr, Legend string
}

// readDashboard decodes deploy's Grafana dashboard into v.
func readDashboard(t *testing.T, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana/dashboards/cuzk.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
}

func dashboardTargets(t *testing.T) []dashboardTarget {
	t.Helper()
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Datasource struct {
					Type string `json:"type"`
				} `json:"datasource"`
				RefID  string `json:"refId"`
				Expr   string `json:"expr"`
				Legend string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	readDashboard(t, &dash)
	var out []dashboardTarget
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			if tg.Datasource.Type == "prometheus" {
				out = append(out, dashboardTarget{p.Title, tg.RefID, tg.Expr, tg.Legend})
			}
		}
	}
	return out
}

var legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

// legends renders legend for each series as Grafana does ({{label}}
// replaced by the series' value), failing on a label a series lacks
// (Grafana would show it empty: lines that cannot be told apart).
func legends(legend string, series []map[string]string) ([]string, error) {
	var out []string
	for _, s := range series {
		var missing []string
		l := legendLabel.ReplaceAllStringFunc(legend, func(m string) string {
			name := legendLabel.FindStringSubmatch(m)[1]
			v, ok := s[name]
			if !ok || v == "" {
				missing = append(missing, name)
			}
			return v
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("series %v has no %v for legend %q", s, missing, legend)
		}
		out = append(out, l)
	}
	sort.Strings(out)
	return out, nil
}

// badWitness is a full mulchain witness, well formed, that does not
// satisfy the circuit: the daemon accepts it and the job fails in solving.
func badWitness(t *testing.T) []byte {
	t.Helper()
	return circuitstest.Marshal(t, circuitstest.NewWitness(t, &circuits.MulChain{X: 3, Out: 5}))
}

// TestDashboardQueriesAgainstPrometheus scrapes, with a real Prometheus,
// a daemon that proved, failed and cancelled jobs and the Collector its
// spans went through, then runs every Prometheus query of the Grafana
// dashboard: each returns one series per line its legend names, every
// legend label is set, no two lines share a legend, the duration panel has
// one line per stage and the failures one per outcome (the stages and
// outcomes prover/server's Metrics reports), and the tail-sampling panel
// one per policy of otel-collector.yaml. The Collector's lines are drawn
// from what happened: an export failed (a backend away), a late span came
// after its trace's decision. The $instance variable lists the daemon
// before its first job.
func TestDashboardQueriesAgainstPrometheus(t *testing.T) {
	labels := metricsLabelValues(t)
	stages, outcomes := labels["cuzk_stage"], labels["cuzk_outcome"]
	if len(stages) < 2 || len(outcomes) < 2 {
		t.Fatalf("metrics.go reports stages %v and outcomes %v: the label names changed; update the test and the dashboard", stages, outcomes)
	}
	j := startJaeger(t)
	// "Tempo" is a port nobody listens on, its retries off: its exports
	// fail at once, so the export-failed line has something to draw.
	col := startCollectorConfigs(t, "otelcol",
		[]string{collectorConfig, "yaml:exporters::otlp_grpc/tempo::retry_on_failure::enabled: false"},
		"JAEGER_OTLP_ENDPOINT="+j.OTLPGRPC, "TEMPO_OTLP_ENDPOINT="+freeLoopbackAddrs(t, 1)[0],
		"OTELCOL_DECISION_WAIT=2s", "OTELCOL_DECISION_AFTER_ROOT=1s")
	d := startDaemon(t, col.otlpEnv(fmt.Sprintf("e2e-dash-%d", time.Now().UnixNano())))
	prom := startPrometheus(t, fmt.Sprintf(`  - job_name: cuzk
    static_configs: [{targets: [%q]}]
  - job_name: otel-collector
    static_configs: [{targets: [%q]}]
`, d.MetricsAddr, col.Metrics))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := waitFor(ctx, 60*time.Second, func() error {
		up, err := prom.query(`up == 1`)
		if err != nil || len(up) < 2 {
			return fmt.Errorf("targets up: %v %v", up, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// The dashboard's variables list every daemon before it proved
	// anything (a fresh or failing daemon is on the dashboard too).
	for _, v := range dashboardVariables(t) {
		series, err := prom.query(fmt.Sprintf("group by (%s) (%s)", v.Label, v.Metric))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, s := range series {
			found = found || s[v.Label] == d.MetricsAddr
		}
		if !found {
			t.Errorf("variable $%s (label_values(%s, %s)) lists %v before the first job, not the daemon %s", v.Name, v.Metric, v.Label, series, d.MetricsAddr)
		}
	}

	// Jobs after the first scrape, so rates have something to compare.
	c, err := client.Dial(d.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stamp := time.Now().UnixNano()
	req := func(name string) client.Request {
		return client.Request{RequestID: fmt.Sprintf("dash-%s-%d", name, stamp), Circuit: "mulchain", Constraints: e2eConstraints, Verify: true}
	}
	for i := range 2 {
		if _, err := c.Prove(ctx, req(fmt.Sprint("ok", i))); err != nil {
			t.Fatal(err)
		}
	}
	bad := req("bad")
	bad.Witness = badWitness(t)
	if _, err := c.Prove(ctx, bad); status.Code(err) == codes.OK {
		t.Fatal("a witness that does not satisfy the circuit was proved")
	}
	// A job cancelled while queued behind another.
	cancelled := false
	for i := 0; i < 5 && !cancelled; i++ {
		if _, err := c.Submit(ctx, req(fmt.Sprint("busy", i))); err != nil {
			t.Fatal(err)
		}
		jb, err := c.Submit(ctx, req(fmt.Sprint("cancel", i)))
		if err != nil {
			t.Fatal(err)
		}
		c.Cancel(ctx, jb.ID)
		res, _ := c.Await(ctx, jb.ID, time.Minute)
		cancelled = res != nil && res.Status == client.Cancelled
	}
	if !cancelled {
		t.Fatal("no job could be cancelled before it finished")
	}
	// A failed trace and, 3 s later, a late span of it: the decision
	// cache joins it to the kept trace ("late spans").
	sendTraces(t, col, fmt.Sprintf("e2e-dash-late-%d", stamp), "-late-after", "3s")

	// Every query, again each second until all draw what they should or
	// 30 s passed (rates need two scrapes after the jobs).
	policies := collectorPolicies(t)
	targets := dashboardTargets(t)
	var problems []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		problems = problems[:0]
		var report []string
		for _, tg := range targets {
			series, err := prom.query(strings.ReplaceAll(tg.Expr, "$instance", ".+"))
			var got []string
			if err == nil {
				got, err = legends(tg.Legend, series)
			}
			if err == nil {
				if len(got) == 0 {
					if reason := mayBeEmpty(tg.Expr, d); reason != "" {
						report = append(report, fmt.Sprintf("%s %s: no series (%s)", tg.Panel, tg.RefID, reason))
						continue
					}
				}
				err = checkPanelLines(tg, got, stages, outcomes, policies)
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("panel %q query %s:\n  %s\n  %v", tg.Panel, tg.RefID, tg.Expr, err))
				continue
			}
			report = append(report, fmt.Sprintf("%s %s: %v", tg.Panel, tg.RefID, got))
		}
		if len(problems) == 0 || time.Now().After(deadline) {
			for _, r := range report {
				t.Log(r)
			}
			break
		}
		time.Sleep(time.Second)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// checkPanelLines says what is wrong with the lines one query drew.
func checkPanelLines(tg dashboardTarget, got, stages, outcomes, policies []string) error {
	if len(got) == 0 {
		return fmt.Errorf("no series")
	}
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			return fmt.Errorf("two lines called %q: %v", got[i], got)
		}
	}
	want := func(label string, values []string) error {
		for _, v := range values {
			found := false
			for _, g := range got {
				found = found || strings.Contains(" "+g+" ", " "+v+" ")
			}
			if !found {
				return fmt.Errorf("no line for %s=%s: %v", label, v, got)
			}
		}
		return nil
	}
	switch {
	case strings.Contains(tg.Legend, "{{cuzk_stage}}"):
		if len(got) != len(stages) {
			return fmt.Errorf("%d lines %v, want one per stage %v", len(got), got, stages)
		}
		return want("cuzk_stage", stages)
	case strings.Contains(tg.Legend, "{{cuzk_outcome}}"):
		return want("cuzk_outcome", outcomes)
	case strings.Contains(tg.Legend, "{{policy}}"):
		return want("policy", policies)
	}
	return nil
}

// mayBeEmpty names why a query may rightly return nothing in this test
// ("" when it may not).
func mayBeEmpty(expr string, d *daemon) string {
	switch {
	case strings.Contains(expr, "cuzk_device_memory_"):
		if exp, err := d.metrics(); err == nil && !strings.Contains(exp, "cuzk_device_memory_") {
			return "the daemon found no GPU"
		}
	case strings.Contains(expr, "dropped_too_early"):
		return "num_traces never filled up"
	}
	return ""
}

// dashboardVariable is a query variable of the dashboard,
// label_values(Metric, Label).
type dashboardVariable struct{ Name, Metric, Label string }

func dashboardVariables(t *testing.T) []dashboardVariable {
	t.Helper()
	var dash struct {
		Templating struct {
			List []struct {
				Name, Type, Query string
			} `json:"list"`
		} `json:"templating"`
	}
	readDashboard(t, &dash)
	re := regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:{}="~.*+ -]*?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)
	var out []dashboardVariable
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := re.FindStringSubmatch(v.Query)
		if m == nil {
			t.Fatalf("variable $%s: query %q is not label_values(METRIC, LABEL)", v.Name, v.Query)
		}
		out = append(out, dashboardVariable{v.Name, m[1], m[2]})
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no query variable")
	}
	return out
}

// collectorPolicies returns the names of the tail-sampling policies of
// deploy/otel-collector.yaml.
func collectorPolicies(t *testing.T) []string {
	t.Helper()
	var cfg struct {
		Processors struct {
			TailSampling struct {
				Policies []struct {
					Name string `yaml:"name"`
				} `yaml:"policies"`
			} `yaml:"tail_sampling"`
		} `yaml:"processors"`
	}
	readYAML(t, "otel-collector.yaml", &cfg)
	var out []string
	for _, p := range cfg.Processors.TailSampling.Policies {
		out = append(out, p.Name)
	}
	if len(out) == 0 {
		t.Fatal("otel-collector.yaml has no tail-sampling policies")
	}
	return out
}
