package e2e

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// dashboardMetrics returns the Prometheus metric names the Grafana
// dashboard of deploy/ queries, histogram series (_bucket, _sum, _count)
// reduced to their base name.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../deploy/grafana/dashboards/cuzk.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	names := map[string]bool{}
	// A metric name is followed by its label matchers; label names
	// (cuzk_circuit_id in "by (...)") are not.
	re := regexp.MustCompile(`\b(cuzk_[a-z_]+)\{`)
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range re.FindAllStringSubmatch(tg.Expr, -1) {
				names[m[1]] = true
			}
		}
	}
	var out []string
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	if len(out) < 5 {
		t.Fatalf("dashboard queries only %v", out)
	}
	return out
}

// assertDashboardMetrics checks that every metric the dashboard queries is
// served by the daemon (after at least one successful proof). Device memory
// exists only where the daemon found a GPU, and an OTel counter appears at
// its first increment, so the failed-proofs counter only after a failure.
func assertDashboardMetrics(t *testing.T, d *daemon) {
	t.Helper()
	exp, err := d.metrics()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range dashboardMetrics(t) {
		if _, ok := metricValue(exp, name); ok {
			continue
		}
		if strings.HasPrefix(name, "cuzk_device_memory_") || name == "cuzk_proofs_failed_total" {
			t.Logf("%s absent (no GPU on this host, or no failure yet)", name)
			continue
		}
		t.Errorf("the dashboard queries %s, which cuzk serve does not serve", name)
	}
}
