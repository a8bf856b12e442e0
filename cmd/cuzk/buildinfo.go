package main

import (
	"os"
	"strings"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// versionOption sets service.version to otelcuzk.Version, the one version
// string of this build (cuzk --version, the scope version, GetStatus),
// unless OTEL_RESOURCE_ATTRIBUTES names one (the operator's word wins).
func versionOption() []otelcuzk.Option {
	if strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.version=") {
		return nil
	}
	return []otelcuzk.Option{otelcuzk.WithResourceAttributes(semconv.ServiceVersion(otelcuzk.Version()))}
}
