package cudaspans

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"
)

// A struct as a kernel would declare it: struct { uint8_t tag; uint64_t
// x[3]; uint16_t w; } (40 bytes, 8-aligned: w at 32, then padding).
type oddParam struct {
	Tag uint8
	X   [3]uint64
	W   uint16
}

func TestPackParamsLaysArgumentsOutAtTheirAlignment(t *testing.T) {
	args := []any{uint8(0xaa), DevicePtr(0x1122334455667788), int32(-2), [3]byte{1, 2, 3},
		oddParam{Tag: 7, X: [3]uint64{1, 2, 3}, W: 0xbeef}, float32(1.5), true, uint16(0x1234), float64(2)}
	buf, offs, sizes, err := packParams(args)
	if err != nil {
		t.Fatal(err)
	}
	wantOffs := []int{0, 8, 16, 20, 24, 64, 68, 70, 72}
	wantSizes := []int{1, 8, 4, 3, 40, 4, 1, 2, 8}
	for i := range args {
		if offs[i] != wantOffs[i] || sizes[i] != wantSizes[i] {
			t.Errorf("argument %d (%T) at %d size %d, want %d size %d", i, args[i], offs[i], sizes[i], wantOffs[i], wantSizes[i])
		}
	}
	if len(buf) != 80 {
		t.Errorf("buffer %d bytes, want 80", len(buf))
	}
	le := binary.LittleEndian
	if le.Uint64(buf[8:]) != 0x1122334455667788 || int32(le.Uint32(buf[16:])) != -2 {
		t.Error("pointer or int32 bytes wrong")
	}
	if !bytes.Equal(buf[20:23], []byte{1, 2, 3}) || buf[24] != 7 || le.Uint64(buf[32:]) != 1 || le.Uint64(buf[48:]) != 3 || le.Uint16(buf[56:]) != 0xbeef {
		t.Errorf("array or struct bytes wrong: % x", buf[20:64])
	}
	if math.Float32frombits(le.Uint32(buf[64:])) != 1.5 || buf[68] != 1 || le.Uint16(buf[70:]) != 0x1234 || math.Float64frombits(le.Uint64(buf[72:])) != 2 {
		t.Error("float32, bool, uint16 or float64 bytes wrong")
	}
}

func TestPackParamsRefusesReferences(t *testing.T) {
	x := 5
	for _, a := range []any{&x, []byte{1}, "s", map[int]int{}, struct{ P *int }{&x}, nil, struct{}{}} {
		if _, _, _, err := packParams([]any{uint32(1), a}); err == nil || !strings.Contains(err.Error(), "argument 1") {
			t.Errorf("%T: err = %v, want a refusal naming argument 1", a, err)
		}
	}
}

func TestLaunchChecksArgumentsAgainstTheKernelsParameters(t *testing.T) {
	f := newFixture(t)
	f.drv.params["axpy"] = []ParamInfo{{0, 8}, {8, 4}, {16, 40}}
	k := f.kernel(t, "axpy", time.Microsecond)
	s := f.stream(t)
	ctx := context.Background()
	if err := s.Launch(ctx, k, D1(1), D1(1), 0, DevicePtr(1), uint32(2)); err == nil || !strings.Contains(err.Error(), "2 arguments given, the kernel takes 3") {
		t.Errorf("short argument list: %v", err)
	}
	if err := s.Launch(ctx, k, D1(1), D1(1), 0, DevicePtr(1), uint64(2), oddParam{}); err == nil || !strings.Contains(err.Error(), "argument 1") {
		t.Errorf("wrong size: %v", err)
	}
	if err := s.Launch(ctx, k, D1(1), D1(1), 0, DevicePtr(1), uint32(2), oddParam{W: 9}); err != nil {
		t.Fatal(err)
	}
	l := f.drv.launches[len(f.drv.launches)-1]
	if len(l.offsets) != 3 || l.offsets[2] != 16 || binary.LittleEndian.Uint16(l.params[16+32:]) != 9 {
		t.Errorf("launch got offsets %v params % x", l.offsets, l.params)
	}
	if err := s.Launch(ctx, k, Dim3{}, D1(1), 0); err == nil {
		t.Error("empty grid launched")
	}
	if err := s.Launch(ctx, nil, D1(1), D1(1), 0); err == nil {
		t.Error("nil function launched")
	}
	if got := (Dim3{X: 4}).String(); got != "4,1,1" {
		t.Errorf("Dim3 String = %q", got)
	}
}
