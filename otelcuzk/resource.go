package otelcuzk

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// Device describes one GPU for the resource.
type Device struct {
	ID            string // stable identifier, e.g. the CUDA UUID "GPU-5c0e…"; hw.id
	Ordinal       int    // CUDA device ordinal
	Model         string // e.g. "NVIDIA H200"; hw.model
	Vendor        string // e.g. "NVIDIA"; hw.vendor
	DriverVersion string // e.g. "12.8" or "570.86.15"; hw.driver_version
	MemoryBytes   int64  // total device memory, bytes
}

// DeviceAttributes returns the resource attributes for devices, after the
// OpenTelemetry hardware semantic conventions (hw.id, hw.model, hw.vendor,
// hw.type = "gpu", hw.driver_version; semconv v1.37.0). A resource holds one
// value per key, so each key carries a slice with one element per device, in
// the order given; cuda.device.ordinal and hw.gpu.memory.limit (bytes) follow
// the same order. It returns nil for no devices.
func DeviceAttributes(devices []Device) []attribute.KeyValue {
	if len(devices) == 0 {
		return nil
	}
	n := len(devices)
	ids, models, vendors, drivers, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ordinals, mem := make([]int64, n), make([]int64, n)
	for i, d := range devices {
		ids[i] = d.ID
		if ids[i] == "" {
			ids[i] = fmt.Sprintf("gpu%d", d.Ordinal)
		}
		models[i], vendors[i], drivers[i], types[i] = d.Model, d.Vendor, d.DriverVersion, "gpu"
		ordinals[i], mem[i] = int64(d.Ordinal), d.MemoryBytes
	}
	return []attribute.KeyValue{
		semconv.HwIDKey.StringSlice(ids),
		semconv.HwTypeKey.StringSlice(types),
		semconv.HwModelKey.StringSlice(models),
		semconv.HwVendorKey.StringSlice(vendors),
		semconv.HwDriverVersionKey.StringSlice(drivers),
		KeyCUDADeviceOrdinal.Int64Slice(ordinals),
		KeyHWGPUMemoryLimit.Int64Slice(mem),
	}
}

// newResource builds the resource: SDK, host, process (without the command
// line, which may carry secrets), then OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME, then options. Later sources win. Malformed
// OTEL_RESOURCE_ATTRIBUTES is an error; a host or process detail that cannot
// be read is left out.
func newResource(ctx context.Context, c config) (*resource.Resource, error) {
	env, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("otelcuzk: OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME: %w", err)
	}
	detected, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName)),
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
		return nil, fmt.Errorf("otelcuzk: resource: %w", err)
	}
	res, err := resource.Merge(detected, env)
	if err != nil {
		return nil, fmt.Errorf("otelcuzk: resource: %w", err)
	}
	attrs := DeviceAttributes(c.devices)
	attrs = append(attrs, c.resAttrs...)
	if c.serviceName != "" {
		attrs = append(attrs, semconv.ServiceName(c.serviceName))
	}
	if len(attrs) == 0 {
		return res, nil
	}
	res, err = resource.Merge(res, resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("otelcuzk: resource: %w", err)
	}
	return res, nil
}
