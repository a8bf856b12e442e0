package otelcuzk

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// setEnv sets (or, for "", unsets) the variables for one fuzz input and
// returns the function restoring them. t.Setenv is not used: it would
// accumulate one cleanup per input.
func setEnv(kv map[string]string) (restore func()) {
	old := map[string]*string{}
	for k, v := range kv {
		if o, ok := os.LookupEnv(k); ok {
			old[k] = &o
		} else {
			old[k] = nil
		}
		if v == "" {
			os.Unsetenv(k)
		} else {
			os.Setenv(k, v)
		}
	}
	return func() {
		for k, o := range old {
			if o == nil {
				os.Unsetenv(k)
			} else {
				os.Setenv(k, *o)
			}
		}
	}
}

// FuzzEnvTraceparent: whatever TRACEPARENT, TRACESTATE and BAGGAGE hold,
// ContextWithEnvTraceparent does not panic; a span context it accepts is
// one the input spelled (W3C lowercase hex) and survives EnvWithTraceparent
// and a second read unchanged; EnvWithTraceparent leaves one entry of each
// variable.
func FuzzEnvTraceparent(f *testing.F) {
	for _, s := range [][3]string{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "congo=t61rcWkgMzE", "userId=alice"},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "", ""},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-extra", "a=1,b=2", "k=v;p=1"},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", ""},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", ""},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", "", ""},
		{"garbage", "=,=", "%zz"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, tp, ts, bg string) {
		restore := setEnv(map[string]string{EnvTraceparent: tp, EnvTracestate: ts, EnvBaggage: bg})
		defer restore()
		ctx := ContextWithEnvTraceparent(context.Background())
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsValid() {
			return
		}
		if !strings.Contains(tp, sc.TraceID().String()) || !strings.Contains(tp, sc.SpanID().String()) {
			t.Fatalf("accepted %v from %q, which does not spell it", sc, tp)
		}
		env := EnvWithTraceparent(ctx, append(os.Environ(), EnvTraceparent+"=stale"))
		counts := map[string]int{}
		got := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			if k == EnvTraceparent || k == EnvTracestate || k == EnvBaggage {
				counts[k]++
				got[k] = v
			}
		}
		if counts[EnvTraceparent] != 1 || counts[EnvTracestate] > 1 || counts[EnvBaggage] > 1 {
			t.Fatalf("EnvWithTraceparent left %v entries", counts)
		}
		restore2 := setEnv(map[string]string{EnvTraceparent: got[EnvTraceparent], EnvTracestate: got[EnvTracestate], EnvBaggage: got[EnvBaggage]})
		defer restore2()
		sc2 := trace.SpanContextFromContext(ContextWithEnvTraceparent(context.Background()))
		if !sc2.Equal(sc) {
			t.Fatalf("round trip changed the span context: %v -> %q -> %v", sc, got[EnvTraceparent], sc2)
		}
	})
}

// handlerLog records what the OTel libraries report through otel.Handle.
type handlerLog struct {
	mu   sync.Mutex
	errs []string
}

func (h *handlerLog) Handle(err error) {
	h.mu.Lock()
	h.errs = append(h.errs, err.Error())
	h.mu.Unlock()
}

// FuzzOTELEnv: for any values of the OTEL_* variables New checks, New
// either fails with one line naming the variable, or succeeds; in neither
// case do the libraries report a malformed value through otel.Handle (a
// stray log line, and a value silently replaced by a default).
func FuzzOTELEnv(f *testing.F) {
	f.Add("parentbased_traceidratio", "0.25", "5000", "http/protobuf", "http://127.0.0.1:4318", "api-key=secret", "service.name=cuzk,host.name=h%201", "512", "true")
	f.Add("always_on", "", "", "grpc", "127.0.0.1:4317", "", "", "", "")
	f.Add("traceidratio", "1.5", "-3", "thrift", "ftp://x", "novalue", "a=%zz", "-1", "maybe")
	f.Add("PARENTBASED_ALWAYS_OFF", " 0 ", " 10 ", " grpc ", "https://collector:4317/", "a=b,c=d", "k=v,", "0", "FALSE")
	f.Add("", "", "", "", "http://[::1]:4318", "a=%20b", "=v", "x", "")
	h := &handlerLog{}
	otel.SetErrorHandler(h)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, sampler, arg, timeout, protocol, endpoint, headers, resAttrs, bsp, insecure string) {
		restore := setEnv(map[string]string{
			"OTEL_TRACES_SAMPLER": sampler, "OTEL_TRACES_SAMPLER_ARG": arg,
			"OTEL_EXPORTER_OTLP_TIMEOUT": timeout, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
			"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_HEADERS": headers,
			"OTEL_RESOURCE_ATTRIBUTES": resAttrs, "OTEL_BSP_MAX_QUEUE_SIZE": bsp,
			"OTEL_EXPORTER_OTLP_INSECURE": insecure,
		})
		defer restore()
		h.mu.Lock()
		h.errs = nil
		h.mu.Unlock()
		tel, err := New(context.Background(), WithoutGlobal(), WithTraceFile(filepath.Join(dir, "t.jsonl")), WithLogWriter(nil))
		if err != nil {
			if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "OTEL_") {
				t.Fatalf("error is not one line naming a variable: %q", err)
			}
		} else {
			_ = tel.Shutdown(context.Background())
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.errs) > 0 {
			t.Fatalf("New (err %v) let the libraries report: %q", err, h.errs)
		}
	})
}
