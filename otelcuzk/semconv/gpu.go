package semconv

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	otelsemconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// GPU describes one GPU of the trace resource (the hw.* attributes of the
// OTel hardware conventions): not a device worker (engine), nor a
// device GetStatus reports (server.Device).
type GPU struct {
	ID            string // stable identifier, e.g. the CUDA UUID "GPU-5c0e…"; hw.id
	Ordinal       int    // CUDA device ordinal
	Model         string // e.g. "NVIDIA H200"; hw.model
	Vendor        string // e.g. "NVIDIA"; hw.vendor
	DriverVersion string // e.g. "12.8" or "570.86.15"; hw.driver_version
	MemoryBytes   int64  // total device memory, bytes
}

// GPUAttributes returns the resource attributes for devices, after the
// OpenTelemetry hardware semantic conventions (hw.id, hw.model, hw.vendor,
// hw.type = "gpu", hw.driver_version; semconv v1.37.0). A resource holds one
// value per key, so each key carries a slice with one element per device, in
// the order given; cuda.device.ordinal and hw.gpu.memory.limit (bytes) follow
// the same order. It returns nil for no devices.
func GPUAttributes(devices []GPU) []attribute.KeyValue {
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
		otelsemconv.HwIDKey.StringSlice(ids),
		otelsemconv.HwTypeKey.StringSlice(types),
		otelsemconv.HwModelKey.StringSlice(models),
		otelsemconv.HwVendorKey.StringSlice(vendors),
		otelsemconv.HwDriverVersionKey.StringSlice(drivers),
		KeyCUDADeviceOrdinal.Int64Slice(ordinals),
		KeyHWGPUMemoryLimit.Int64Slice(mem),
	}
}
