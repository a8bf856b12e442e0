package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
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

// TestDashboardJSONStructure loads the dashboard with the Grafana
// Foundation SDK (Apache-2.0; Grafana itself is AGPL and not used here),
// strictly: an unknown or mistyped field, a panel or query type it does not
// know, or a value its schema forbids fails the test.
func TestDashboardJSONStructure(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	b, err := os.ReadFile("../deploy/grafana/dashboards/cuzk.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard.Dashboard
	if err := sdkErr(d.UnmarshalJSONStrict(b)); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if err := sdkErr(d.Validate()); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	if d.Uid == nil || *d.Uid != "cuzk-proving" || len(d.Panels) < 10 {
		t.Errorf("uid %v, %d panels: not the dashboard the provisioning expects", d.Uid, len(d.Panels))
	}
	var broken map[string]any
	json.Unmarshal(b, &broken)
	broken["refresh"] = 30 // a string in the schema
	bb, _ := json.Marshal(broken)
	if err := sdkErr(new(dashboard.Dashboard).UnmarshalJSONStrict(bb)); err == nil {
		t.Error("a dashboard with a numeric refresh loaded")
	}
}

// sdkErr turns the SDK's empty cog.BuildErrors, returned as a non-nil
// error interface, into nil.
func sdkErr(err error) error {
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		return nil
	}
	return err
}
