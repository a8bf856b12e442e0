package cudaspans

import (
	"fmt"
	"strings"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// ResourceDevices describes devices for the OTel resource
// (otelcuzk.WithDevices: hw.id, hw.model, hw.vendor, hw.driver_version).
// The driver version is the CUDA version the driver supports, "13.0".
func ResourceDevices(devices []DeviceInfo) []semconv.GPU {
	out := make([]semconv.GPU, len(devices))
	for i, d := range devices {
		vendor := "NVIDIA"
		if !strings.HasPrefix(d.Name, "NVIDIA") {
			vendor = "" // the driver API names no vendor; don't guess
		}
		out[i] = semconv.GPU{
			ID:            d.UUID,
			Ordinal:       d.Ordinal,
			Model:         d.Name,
			Vendor:        vendor,
			DriverVersion: fmt.Sprintf("%d.%d", d.DriverVersion/1000, d.DriverVersion%1000/10),
			MemoryBytes:   int64(d.TotalMemory),
		}
	}
	return out
}
