package semconv

import (
	"runtime/debug"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// modulePath is this project's Go module, whose version ScopeVersion reads
// from the build information.
const modulePath = "github.com/otelcuzk/otelcuzk"

// Tracer is the tracer of this project's spans from tp: instrumentation
// scope ScopeName at version ScopeVersion, so every span of the project
// names one scope, with the build's version (they named it without a
// version, or "0.1.0").
func Tracer(tp trace.TracerProvider) trace.Tracer {
	return tp.Tracer(ScopeName, trace.WithInstrumentationVersion(ScopeVersion()))
}

// ScopeVersion is the version of this module in the running binary: one
// string for every place that names the build, the instrumentation scope
// version of the project's spans (Tracer), cuzk --version, the
// service.version of cuzk's spans and the version the daemon's GetStatus
// reports (they were "0.1.0", "(devel)", "build" and revision digits for
// one build). It is BuildVersion of the running binary, read once.
func ScopeVersion() string { return scopeVersion() }

var scopeVersion = sync.OnceValue(func() string {
	bi, _ := debug.ReadBuildInfo()
	return BuildVersion(bi)
})

// BuildVersion is the version of this module in the build bi: its module
// version when it is a dependency ("v0.3.0", with " => PATH VERSION" for a
// replacement); when it is the main module, the version go build stamped
// (Go 1.24 and later, from the VCS: a tag "v0.3.0" or a pseudo-version
// naming the revision, "v0.0.0-20261207145301-3578246a1b2c", "+dirty" for a
// modified tree), else the VCS revision's first 12 digits ("-modified" for
// a modified tree) when bi has one; else "(devel)" (go run, go test,
// -buildvcs=false: no VCS stamp), also for a nil bi.
func BuildVersion(bi *debug.BuildInfo) string {
	const devel = "(devel)"
	if bi == nil {
		return devel
	}
	if bi.Main.Path != modulePath {
		for _, d := range bi.Deps {
			if d.Path != modulePath {
				continue
			}
			if d.Replace != nil {
				return d.Version + " => " + d.Replace.Path + " " + d.Replace.Version
			}
			return d.Version
		}
		return devel
	}
	if v := bi.Main.Version; v != "" && v != devel {
		return v
	}
	rev, modified := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return devel
	}
	rev = rev[:min(12, len(rev))]
	if modified {
		rev += "-modified"
	}
	return rev
}
