package main

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/cudaspans"
)

// openKernels opens GPU 0 tracing to tp, compiles source as module name
// and returns the context (the caller closes it), a new stream on it and
// the functions named by fns, in that order. On error nothing is left
// open.
func openKernels(ctx context.Context, tp trace.TracerProvider, name, source string, fns ...string) (*cudaspans.Context, *cudaspans.Stream, []*cudaspans.Function, error) {
	c, err := cudaspans.Open(0, cudaspans.WithTracerProvider(tp))
	if err != nil {
		return nil, nil, nil, err
	}
	fail := func(err error) (*cudaspans.Context, *cudaspans.Stream, []*cudaspans.Function, error) {
		c.Close()
		return nil, nil, nil, err
	}
	mod, err := c.Compile(ctx, name, source, cudaspans.CompileOptions{})
	if err != nil {
		return fail(err)
	}
	funcs := make([]*cudaspans.Function, len(fns))
	for i, fn := range fns {
		if funcs[i], err = mod.Function(fn); err != nil {
			return fail(err)
		}
	}
	s, err := c.NewStream()
	if err != nil {
		return fail(err)
	}
	return c, s, funcs, nil
}
