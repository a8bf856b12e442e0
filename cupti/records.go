package cupti

import (
	"encoding/binary"
	"fmt"
)

// CUPTI activity kinds (cupti_activity.h, CUpti_ActivityKind).
const (
	kindMemcpy              = 1
	kindMemset              = 2
	kindKernel              = 3
	kindConcurrentKernel    = 10
	kindSynchronization     = 38
	kindExternalCorrelation = 39
)

// External correlation kinds (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0..2).
const (
	extParent    = 3 // a Go span (Parent, Call, cuzk_cupti_enter)
	extRange     = 4 // the innermost NVTX push range of the launching thread
	extCudaspans = 5 // a launch cudaspans times with CUDA events
)

// Record layouts: byte offsets of the fields read, from the versioned
// structs of cupti_activity.h. CUPTI only appends fields when it versions
// a record (CUpti_ActivityKernel4 of CUDA 10 to CUpti_ActivityKernel8 of
// 11.8 share every offset below), so one table covers the releases
// checked: CUDA 11.8's header here, and the H200 host's CUDA 13 library by
// the device test TestRecordLayoutOnDevice (gpu_test.go) and
// bench/cupti-layout.sh. A record shorter than its layout's size is an
// error, never a read past its end.
var (
	// CUpti_ActivityKernel4..9 (kinds KERNEL and CONCURRENT_KERNEL).
	kernelLayout = struct {
		start, end, device, context, stream, grid, block, staticShm, dynShm, regs, corr, name, size int
	}{start: 16, end: 24, device: 40, context: 44, stream: 48, grid: 52, block: 64, staticShm: 76, dynShm: 80, regs: 6, corr: 92, name: 104, size: 112}
	// CUpti_ActivityMemcpy5 and later.
	memcpyLayout = struct{ copyKind, bytes, start, end, device, context, stream, corr, size int }{
		copyKind: 4, bytes: 8, start: 16, end: 24, device: 32, context: 36, stream: 40, corr: 44, size: 48}
	// CUpti_ActivityMemset4 and later.
	memsetLayout = struct{ value, bytes, start, end, device, context, stream, corr, size int }{
		value: 4, bytes: 8, start: 16, end: 24, device: 32, context: 36, stream: 40, corr: 44, size: 48}
	// CUpti_ActivitySynchronization (and ...2, which appends).
	syncLayout = struct{ typ, start, end, corr, context, stream, size int }{
		typ: 4, start: 8, end: 16, corr: 24, context: 28, stream: 32, size: 36}
	// CUpti_ActivityExternalCorrelation.
	extLayout = struct{ kind, id, corr, size int }{kind: 4, id: 8, corr: 16, size: 20}
)

// kernelRecord is a kernel's execution on the GPU; times are CUPTI ns.
type kernelRecord struct {
	start, end                    uint64
	device, context, stream, corr uint32
	grid, block                   [3]uint32
	staticShm, dynShm             uint32
	regs                          uint16
	name                          string
}

type memcpyRecord struct {
	copyKind                      uint8
	bytes, start, end             uint64
	device, context, stream, corr uint32
}

type memsetRecord struct {
	value                         uint32
	bytes, start, end             uint64
	device, context, stream, corr uint32
}

type syncRecord struct {
	typ                   uint32
	start, end            uint64
	corr, context, stream uint32
}

type extCorrRecord struct {
	kind uint32
	id   uint64
	corr uint32
}

// otherRecord is a kind this package does not turn into spans.
type otherRecord struct{ kind uint32 }

func le32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
func le64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }

func short(kind uint32, what string, have, want int) error {
	return fmt.Errorf("cupti: %s record (kind %d) of %d bytes, the layout needs %d: unknown CUPTI record layout", what, kind, have, want)
}

// decodeRecord decodes one CUPTI activity record; strs holds the strings
// its pointer fields pointed to (the kernel name).
func decodeRecord(b []byte, strs []string) (any, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("cupti: activity record of %d bytes", len(b))
	}
	kind := le32(b, 0)
	switch kind {
	case kindKernel, kindConcurrentKernel:
		l := kernelLayout
		if len(b) < l.size {
			return nil, short(kind, "kernel", len(b), l.size)
		}
		k := kernelRecord{
			start: le64(b, l.start), end: le64(b, l.end),
			device: le32(b, l.device), context: le32(b, l.context), stream: le32(b, l.stream), corr: le32(b, l.corr),
			grid:      [3]uint32{le32(b, l.grid), le32(b, l.grid+4), le32(b, l.grid+8)},
			block:     [3]uint32{le32(b, l.block), le32(b, l.block+4), le32(b, l.block+8)},
			staticShm: le32(b, l.staticShm), dynShm: le32(b, l.dynShm),
			regs: binary.LittleEndian.Uint16(b[l.regs:]),
		}
		if len(strs) > 0 {
			k.name = strs[0]
		}
		if k.end < k.start || k.block[0] == 0 || k.grid[0] == 0 {
			return nil, fmt.Errorf("cupti: kernel record with start %d, end %d, grid %v, block %v: unknown CUPTI record layout", k.start, k.end, k.grid, k.block)
		}
		return k, nil
	case kindMemcpy:
		l := memcpyLayout
		if len(b) < l.size {
			return nil, short(kind, "memcpy", len(b), l.size)
		}
		return memcpyRecord{copyKind: b[l.copyKind], bytes: le64(b, l.bytes), start: le64(b, l.start), end: le64(b, l.end),
			device: le32(b, l.device), context: le32(b, l.context), stream: le32(b, l.stream), corr: le32(b, l.corr)}, nil
	case kindMemset:
		l := memsetLayout
		if len(b) < l.size {
			return nil, short(kind, "memset", len(b), l.size)
		}
		return memsetRecord{value: le32(b, l.value), bytes: le64(b, l.bytes), start: le64(b, l.start), end: le64(b, l.end),
			device: le32(b, l.device), context: le32(b, l.context), stream: le32(b, l.stream), corr: le32(b, l.corr)}, nil
	case kindSynchronization:
		l := syncLayout
		if len(b) < l.size {
			return nil, short(kind, "synchronization", len(b), l.size)
		}
		return syncRecord{typ: le32(b, l.typ), start: le64(b, l.start), end: le64(b, l.end),
			corr: le32(b, l.corr), context: le32(b, l.context), stream: le32(b, l.stream)}, nil
	case kindExternalCorrelation:
		l := extLayout
		if len(b) < l.size {
			return nil, short(kind, "external correlation", len(b), l.size)
		}
		return extCorrRecord{kind: le32(b, l.kind), id: le64(b, l.id), corr: le32(b, l.corr)}, nil
	}
	return otherRecord{kind: kind}, nil
}
