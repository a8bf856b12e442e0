package main

import (
	"os"
	"runtime/debug"
	"strings"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// buildVersion names the build of this binary for its traces'
// service.version (cuzk trace diff's header shows it): the VCS revision's
// first 12 digits, "-modified" after it for a build from a modified tree,
// else the main module's version ("(devel)" for a build without VCS
// information: go run, -buildvcs=false), "" without build information.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
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
		return bi.Main.Version
	}
	rev = rev[:min(12, len(rev))]
	if modified {
		rev += "-modified"
	}
	return rev
}

// versionOption sets service.version to buildVersion, unless
// OTEL_RESOURCE_ATTRIBUTES names one (the operator's word wins).
func versionOption() []otelcuzk.Option {
	v := buildVersion()
	if v == "" || strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.version=") {
		return nil
	}
	return []otelcuzk.Option{otelcuzk.WithResourceAttributes(semconv.ServiceVersion(v))}
}
