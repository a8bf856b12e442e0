package buffer

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"go.opentelemetry.io/otel/codes"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

func TestAFailedFreeMarksItsReleaseSpanWithTheErrorType(t *testing.T) {
	r, rec, _ := newReleaseRecorder(t, ReleaseSync)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"munmap", syscall.EINVAL, semconv.ErrorTypeIO},
		{"other", errors.New("free refused"), semconv.ErrorTypeOther},
	} {
		if err := r.Release(context.Background(), tc.name, &slowBuffer{kind: KindMmap, size: 64, err: tc.err}); !errors.Is(err, tc.err) {
			t.Errorf("%s: Release = %v, want it to wrap %v", tc.name, err, tc.err)
		}
	}
	spans := releaseSpans(rec)
	if len(spans) != 2 {
		t.Fatalf("%d buffer.release spans, want 2", len(spans))
	}
	for i, want := range []struct{ msg, errorType string }{
		{syscall.EINVAL.Error(), semconv.ErrorTypeIO},
		{"free refused", semconv.ErrorTypeOther},
	} {
		s := spans[i]
		if s.Status().Code != codes.Error || s.Status().Description != want.msg {
			t.Errorf("span %d status %+v, want Error %q", i, s.Status(), want.msg)
		}
		if got := relAttr(s, string(semconv.KeyErrorType)); got != want.errorType {
			t.Errorf("span %d error.type %v, want %s", i, got, want.errorType)
		}
		if ev := s.Events(); len(ev) != 1 || ev[0].Name != "exception" {
			t.Errorf("span %d events %v, want one exception", i, ev)
		}
	}
	if got := semconv.ErrorType(ErrUnknownReleaseMode); got != semconv.ErrorTypeInvalidRequest {
		t.Errorf("ErrUnknownReleaseMode's error.type %q", got)
	}
}
