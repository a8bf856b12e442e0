package semconv

import (
	"runtime/debug"
	"testing"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
)

// BuildVersion reads this module's version from the build information:
// a dependency's module version (and its replacement), the version go
// build stamped on the main module, else its VCS revision, else
// "(devel)".
func TestBuildVersionIsTheModulesVersionInTheBuild(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "47dd6bd57224f6a824735dee9525dc4967053046"}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "(devel)"},
		{"a dependency", &debug.BuildInfo{Main: debug.Module{Path: "example.com/curio"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.3.0"}}}, "v0.3.0"},
		{"a replaced dependency", &debug.BuildInfo{Main: debug.Module{Path: "example.com/curio"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.3.0", Replace: &debug.Module{Path: "../otelcuzk"}}}}, "v0.3.0 => ../otelcuzk "},
		{"not linked", &debug.BuildInfo{Main: debug.Module{Path: "example.com/other"}}, "(devel)"},
		{"main, stamped by go build", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.0.0-20261207145301-47dd6bd57224+dirty"}, Settings: rev},
			"v0.0.0-20261207145301-47dd6bd57224+dirty"},
		{"main, a revision only", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: rev}, "47dd6bd57224-modified"},
		{"main, no VCS stamp", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "(devel)"},
	} {
		if got := BuildVersion(c.bi); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	bi, _ := debug.ReadBuildInfo()
	if ScopeVersion() != BuildVersion(bi) {
		t.Errorf("ScopeVersion() = %q, want BuildVersion of this binary, %q", ScopeVersion(), BuildVersion(bi))
	}
}

// Tracer's spans name the scope ScopeName at ScopeVersion.
func TestTracerNamesTheScopeAndItsVersion(t *testing.T) {
	tp, exp := spantest.NewMemory()
	_, span := Tracer(tp).Start(t.Context(), SpanEngineJob)
	span.End()
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].InstrumentationScope.Name != ScopeName || spans[0].InstrumentationScope.Version != ScopeVersion() {
		t.Errorf("spans %+v, want one of scope %s %s", spans, ScopeName, ScopeVersion())
	}
}
