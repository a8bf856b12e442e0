package buffer

import (
	"context"
	"testing"
)

// TestNilArgumentsAreSafe proves that the exported entry points of buffer
// given a nil or typed-nil argument (a nil Buffer, a nil *Mmap, a nil
// callback, a nil Option) return without panicking: a nil buffer is
// nothing to release, a nil *Mmap holds no memory.
func TestNilArgumentsAreSafe(t *testing.T) {
	ctx := context.Background()
	var nilMmap *Mmap
	for _, mode := range []ReleaseMode{ReleaseSync, ReleaseAsync, ReleasePool} {
		t.Run(string(mode), func(t *testing.T) {
			r, err := NewReleaser(mode, WithTracerProvider(nil))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name string
				call func() error
			}{
				{"Release nil Buffer", func() error { return r.Release(ctx, "x", nil) }},
				{"Release typed-nil *Mmap", func() error { return r.Release(ctx, "x", nilMmap) }},
				{"AfterQueued nil", func() error { r.AfterQueued(nil); return nil }},
				{"Reuse", func() error { r.Reuse(-1); return nil }},
				{"Close", func() error { return r.Close(ctx) }},
				{"Release nil after Close", func() error { return r.Release(ctx, "x", nilMmap) }},
			} {
				err, p := callNoPanic(c.call)
				if p != nil {
					t.Errorf("%s panicked: %v", c.name, p)
				} else if err != nil {
					t.Errorf("%s: %v, want nil", c.name, err)
				}
			}
		})
	}
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"nil *Mmap Free", func() error { return nilMmap.Free() }},
		{"nil *Mmap Bytes", func() error {
			if nilMmap.Bytes() != nil || nilMmap.Size() != 0 || nilMmap.Kind() != KindMmap {
				t.Error("a nil *Mmap holds memory")
			}
			return nil
		}},
		{"NewReleaser nil option", func() error {
			r, err := NewReleaser(ReleaseSync, nil)
			if err != nil {
				return err
			}
			return r.Close(ctx)
		}},
		{"nil Releaser AfterQueued nil", func() error { (*Releaser)(nil).AfterQueued(nil); return nil }},
	} {
		err, p := callNoPanic(c.call)
		if p != nil {
			t.Errorf("%s panicked: %v", c.name, p)
		} else if err != nil {
			t.Errorf("%s: %v, want nil", c.name, err)
		}
	}
}

// callNoPanic runs f and returns the value of its panic, if any.
func callNoPanic(f func() error) (err error, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	return f(), nil
}
