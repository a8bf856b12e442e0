package otelcuzk

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// checkEnv rejects malformed values of the variables the OTel libraries
// would otherwise report through otel.Handle and silently replace with
// defaults: a typo in OTEL_TRACES_SAMPLER would quietly trace everything.
// Values are those of the OpenTelemetry specification ("Environment Variable
// Specification"); samplers the Go SDK lacks (jaeger_remote, xray) are
// refused by name.
func checkEnv(c config) error {
	if c.sampler == nil {
		if err := checkSamplerEnv(); err != nil {
			return err
		}
	}
	if !c.syncExport {
		for _, name := range []string{"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"} {
			if v := strings.TrimSpace(os.Getenv(name)); v != "" {
				if n, err := strconv.Atoi(v); err != nil || n < 0 {
					return fmt.Errorf("%s=%q: want a non-negative integer", name, v)
				}
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" && c.timeout == 0 {
			if n, err := strconv.Atoi(v); err != nil || n < 0 {
				return fmt.Errorf("%s=%q: want milliseconds as a non-negative integer", name, v)
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" && c.protocol == "" && v != ProtocolGRPC && v != ProtocolHTTPProtobuf {
			return fmt.Errorf("%s=%q: want %s or %s", name, v, ProtocolGRPC, ProtocolHTTPProtobuf)
		}
	}
	// The exporters log a malformed header list and a missing certificate
	// through otel.Handle and carry on without them: no auth, no TLS trust.
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" && c.headers == nil {
			for _, kv := range strings.Split(v, ",") {
				k, val, ok := strings.Cut(kv, "=")
				_, kerr := url.PathUnescape(strings.TrimSpace(k))
				_, verr := url.PathUnescape(strings.TrimSpace(val))
				if !ok || strings.TrimSpace(k) == "" || kerr != nil || verr != nil {
					return fmt.Errorf("%s: %q is not key=value (URL-encoded, comma-separated)", name, kv)
				}
			}
		}
	}
	if err := checkResourceAttributesEnv(); err != nil {
		return err
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			if _, err := os.ReadFile(v); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE"} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			if _, err := strconv.ParseBool(v); err != nil {
				return fmt.Errorf("%s=%q: want true or false", name, v)
			}
		}
	}
	return nil
}

func checkSamplerEnv() error {
	name := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER_ARG"))
	switch name {
	case "", "always_on", "always_off", "parentbased_always_on", "parentbased_always_off":
		return nil
	case "traceidratio", "parentbased_traceidratio":
		if arg == "" {
			return nil
		}
		if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
			return fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio between 0 and 1 for %s", arg, name)
		}
		return nil
	default:
		return fmt.Errorf("OTEL_TRACES_SAMPLER=%q is not supported (always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio)", name)
	}
}

// checkResourceAttributesEnv refuses an OTEL_RESOURCE_ATTRIBUTES entry that
// is not key=value with a URL-decodable value (specification, "Resource SDK",
// W3C Baggage octets percent-encoded). The SDK would log a bad escape through
// otel.Handle, a stray line before any error, and keep the raw text.
func checkResourceAttributesEnv() error {
	v := strings.TrimSpace(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if v == "" {
		return nil
	}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q is not key=value (comma-separated, values URL-encoded)", kv)
		}
		if _, err := url.PathUnescape(strings.TrimSpace(val)); err != nil {
			return fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q: the value is not URL-encoded (%v)", kv, err)
		}
	}
	return nil
}
