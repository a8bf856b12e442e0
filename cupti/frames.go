package cupti

import (
	"encoding/binary"
	"fmt"
)

// Frames are how records travel from the C side (cz_core.c, in this
// process or in the injection library of a traced program) to the span
// builder. Little-endian, back to back:
//
//	u32 length (bytes of the whole frame, header included)
//	u16 type   (frameRecord...frameBye)
//	u16 zero
//	payload
//
// frameRecord:   u16 record length, u16 string count, the CUPTI activity
//
//	record as CUPTI wrote it, then the strings its pointers
//	point to (u16 length + bytes each; a kernel's name).
//
// frameNVTXPush: ts, thread, range id, enclosing range, Go parent (u64);
//
//	flags, category, color, payload type (u32); payload (u64);
//	message, domain (u16 length + bytes each).
//
// frameNVTXPop:  ts, thread, range id (u64; 0 = nothing open), kind (u32:
//
//	0 push/pop, 1 start/end).
//
// frameCalib:    u32 n, then n readings of host ns, CUPTI ns, host ns (u64).
// frameDropped:  u64 count, u32 reason (0 CUPTI's buffers, 1 our queue).
// frameNote:     a one-line message.
// frameHello:    u32 pid, u32 CUPTI version, then the program's name.
// frameBye:      empty: the program is exiting.
// frameFlushed:  u32 reason (1 a fatal signal, 2 a CUDA context destroyed),
//
//	u32 signal: everything CUPTI held was flushed there.
const (
	frameRecord   = 1
	frameNVTXPush = 2
	frameNVTXPop  = 3
	frameCalib    = 4
	frameDropped  = 5
	frameNote     = 6
	frameHello    = 7
	frameBye      = 8
	frameFlushed  = 9
)

// Reasons of a frameFlushed.
const (
	flushedSignal         = 1
	flushedContextDestroy = 2
)

const frameHeader = 8

// Push flags.
const (
	pushThread   = 1 // nvtxRangePush/Pop (thread-bound)
	pushStartEnd = 2 // nvtxRangeStart/End
)

type nvtxPush struct {
	ts, thread, id, parentRange, goParent uint64
	flags, category, color, payloadType   uint32
	payload                               uint64
	message, domain                       string
}

type nvtxPop struct {
	ts, thread, id uint64
	startEnd       bool
}

type calibSample struct{ host0, gpu, host1 uint64 }

type dropped struct {
	count  uint64
	reason uint32
}

type hello struct {
	pid, version uint32
	name         string
}

type note string

type bye struct{}

type flushed struct{ reason, signal uint32 }

// parseFrames splits b into frames and decodes each into one of the event
// types above or a record (records.go). A frame that cannot be decoded is
// an error naming it; rest is what is left of an incomplete last frame
// (a stream reader keeps it for the next read).
func parseFrames(b []byte) (events []any, rest []byte, err error) {
	for len(b) >= frameHeader {
		n := int(binary.LittleEndian.Uint32(b))
		if n < frameHeader {
			return events, nil, fmt.Errorf("cupti: frame of %d bytes (shorter than its header)", n)
		}
		if n > len(b) {
			break
		}
		typ := binary.LittleEndian.Uint16(b[4:])
		ev, err := decodeFrame(typ, b[frameHeader:n])
		if err != nil {
			return events, nil, err
		}
		if ev != nil {
			events = append(events, ev)
		}
		b = b[n:]
	}
	return events, b, nil
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if len(r.b) < n {
		r.err = fmt.Errorf("short by %d bytes", n-len(r.b))
		return false
	}
	return true
}

func (r *reader) u16() uint16 { return binary.LittleEndian.Uint16(r.take(2)) }
func (r *reader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *reader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }

// take consumes n bytes; past the end it records the shortfall and gives n
// zero bytes, so a field read after an error reads as zero.
func (r *reader) take(n int) []byte {
	if !r.need(n) {
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n int) []byte {
	if !r.need(n) {
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) str() string { return string(r.bytes(int(r.u16()))) }

func decodeFrame(typ uint16, p []byte) (any, error) {
	r := &reader{b: p}
	var ev any
	switch typ {
	case frameRecord:
		reclen := int(r.u16())
		nstr := int(r.u16())
		rec := r.bytes(reclen)
		strs := make([]string, 0, nstr)
		for i := 0; i < nstr && r.err == nil; i++ {
			strs = append(strs, r.str())
		}
		if r.err != nil {
			break
		}
		rv, err := decodeRecord(rec, strs)
		if err != nil {
			return nil, err
		}
		ev = rv
	case frameNVTXPush:
		e := nvtxPush{ts: r.u64(), thread: r.u64(), id: r.u64(), parentRange: r.u64(), goParent: r.u64(),
			flags: r.u32(), category: r.u32(), color: r.u32(), payloadType: r.u32(), payload: r.u64()}
		e.message = r.str()
		e.domain = r.str()
		ev = e
	case frameNVTXPop:
		ev = nvtxPop{ts: r.u64(), thread: r.u64(), id: r.u64(), startEnd: r.u32() == 1}
	case frameCalib:
		n := int(r.u32())
		if n > 1024 {
			return nil, fmt.Errorf("cupti: calibration frame of %d readings", n)
		}
		s := make([]calibSample, 0, n)
		for i := 0; i < n && r.err == nil; i++ {
			s = append(s, calibSample{r.u64(), r.u64(), r.u64()})
		}
		ev = s
	case frameDropped:
		ev = dropped{count: r.u64(), reason: r.u32()}
	case frameNote:
		ev = note(p)
	case frameHello:
		h := hello{pid: r.u32(), version: r.u32()}
		h.name = string(r.b)
		ev = h
	case frameBye:
		ev = bye{}
	case frameFlushed:
		ev = flushed{reason: r.u32(), signal: r.u32()}
	default:
		// Unknown types are skipped: a newer injection library may send more.
		return nil, nil
	}
	if r.err != nil {
		return nil, fmt.Errorf("cupti: frame type %d: %v", typ, r.err)
	}
	return ev, nil
}
