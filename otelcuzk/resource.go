package otelcuzk

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/sdk/resource"
	otelsemconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// newResource builds the resource: SDK, host, process (without the command
// line, which may carry secrets), then OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME, then options. Later sources win. Malformed
// OTEL_RESOURCE_ATTRIBUTES is an error; a host or process detail that cannot
// be read is left out.
func newResource(ctx context.Context, c config) (*resource.Resource, error) {
	env, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME: %w", err)
	}
	detected, err := resource.New(ctx,
		resource.WithAttributes(otelsemconv.ServiceName(DefaultServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
		resource.WithProcessExecutableName(),
		resource.WithProcessExecutablePath(),
		resource.WithProcessOwner(),
		resource.WithProcessRuntimeName(),
		resource.WithProcessRuntimeVersion(),
		resource.WithProcessRuntimeDescription(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("resource: %w", err)
	}
	res, err := resource.Merge(detected, env)
	if err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	attrs := semconv.GPUAttributes(c.devices)
	attrs = append(attrs, c.resAttrs...)
	if c.serviceName != "" {
		attrs = append(attrs, otelsemconv.ServiceName(c.serviceName))
	}
	if len(attrs) == 0 {
		return res, nil
	}
	res, err = resource.Merge(res, resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	return res, nil
}
