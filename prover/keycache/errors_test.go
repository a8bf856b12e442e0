package keycache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// failedSpans lists the spans with an error status as "name error.type".
func failedSpans(exp *tracetest.InMemoryExporter) []string {
	var out []string
	for _, s := range exp.GetSpans() {
		if s.Status.Code != codes.Error {
			continue
		}
		et := ""
		for _, kv := range s.Attributes {
			if kv.Key == semconv.KeyErrorType {
				et = kv.Value.AsString()
			}
		}
		out = append(out, s.Name+" "+et)
	}
	return out
}

func TestDamagedCacheFilesFailTheirReadSpanAsCorrupt(t *testing.T) {
	dir := t.TempDir()
	c, _ := New(dir, WithRevision("rev1"))
	comp := &compiler{n: 1 << 10}
	first, err := c.Compile(context.Background(), "mulchain", 1<<10, comp.compile)
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.LoadHashed(context.Background(), first.CCS, first.Hash)
	if err != nil {
		t.Fatal(err)
	}
	circuitPath, keyPath := c.circuitPath("mulchain", 1<<10), c.path(k.Hash)
	circuitData, _ := os.ReadFile(circuitPath)
	keyData, _ := os.ReadFile(keyPath)

	for _, tc := range []struct {
		name   string
		damage func()
		load   func(*Cache) error
		want   string
	}{
		{"circuit with a flipped bit", func() {
			b := bytes.Clone(circuitData)
			b[len(b)/3] ^= 0x40
			os.WriteFile(circuitPath, b, 0o644)
		}, func(c *Cache) error {
			_, err := c.Compile(context.Background(), "mulchain", 1<<10, comp.compile)
			return err
		},
			semconv.SpanCircuitCacheRead + " corrupt"},
		{"not a circuit file", func() { os.WriteFile(circuitPath, []byte("not a circuit file"), 0o644) },
			func(c *Cache) error {
				_, err := c.Compile(context.Background(), "mulchain", 1<<10, comp.compile)
				return err
			},
			semconv.SpanCircuitCacheRead + " corrupt"},
		{"key file with a flipped byte", func() {
			b := bytes.Clone(keyData)
			b[len(b)/2] ^= 0x01
			os.WriteFile(keyPath, b, 0o644)
		}, func(c *Cache) error {
			// Refused, not replaced: the load itself fails as corrupt.
			if _, err := c.LoadHashed(context.Background(), first.CCS, first.Hash); !errors.Is(err, ErrCorruptKey) {
				return fmt.Errorf("a damaged key file: %v, want ErrCorruptKey", err)
			}
			return nil
		},
			semconv.SpanKeysRead + " corrupt, " + semconv.SpanKeyLoad + " corrupt"},
	} {
		tc.damage()
		exp := tracetest.NewInMemoryExporter()
		c2, _ := New(dir, WithRevision("rev1"), WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))))
		if err := tc.load(c2); err != nil {
			t.Fatalf("%s: %v (a damaged circuit file is rebuilt, not an error)", tc.name, err)
		}
		if got := strings.Join(failedSpans(exp), ", "); got != tc.want {
			t.Errorf("%s: failed spans %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCacheErrorsHaveTheirErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w (field of 254 bits)", ErrUnsupported), semconv.ErrorTypeUnsupported},
		{fmt.Errorf("%w: bytes 0 to 16", errChecksum), semconv.ErrorTypeCorrupt},
		{errNoTrailer, semconv.ErrorTypeCorrupt},
		{fmt.Errorf("read k: %w", corrupt(errors.New("short point"))), semconv.ErrorTypeCorrupt},
	} {
		if got := semconv.ErrorType(tc.err); got != tc.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	if corrupt(nil) != nil {
		t.Error("corrupt(nil) is not nil")
	}
	inner := errors.New("short point")
	if e := corrupt(inner); e.Error() != "short point" || !errors.Is(e, inner) {
		t.Errorf("corrupt changed the error: %v", e)
	}
}
