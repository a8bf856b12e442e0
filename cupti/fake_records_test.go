package cupti

import "encoding/binary"

// Record builders for the fake CUPTI of the tests: the same offsets, the
// sizes of CUDA 11.8's structs.

// recField is one field of a record under construction: its offset, its
// width in bytes (1, 2, 4 or 8) and its value.
type recField struct {
	off, width int
	v          uint64
}

func f8(off int, v uint8) recField   { return recField{off, 1, uint64(v)} }
func f16(off int, v uint16) recField { return recField{off, 2, uint64(v)} }
func f32(off int, v uint32) recField { return recField{off, 4, uint64(v)} }
func f64(off int, v uint64) recField { return recField{off, 8, v} }

// recordBytes is a record of size bytes of the given kind (its first four
// bytes) with fields written little-endian at their offsets; the rest zero.
func recordBytes(size int, kind uint32, fields ...recField) []byte {
	b := make([]byte, size)
	binary.LittleEndian.PutUint32(b, kind)
	for _, f := range fields {
		switch f.width {
		case 1:
			b[f.off] = uint8(f.v)
		case 2:
			binary.LittleEndian.PutUint16(b[f.off:], uint16(f.v))
		case 4:
			binary.LittleEndian.PutUint32(b[f.off:], uint32(f.v))
		case 8:
			binary.LittleEndian.PutUint64(b[f.off:], f.v)
		}
	}
	return b
}

func kernelBytes(k kernelRecord) []byte {
	l := kernelLayout
	fs := []recField{f64(l.start, k.start), f64(l.end, k.end), f32(l.device, k.device), f32(l.context, k.context),
		f32(l.stream, k.stream), f32(l.staticShm, k.staticShm), f32(l.dynShm, k.dynShm), f16(l.regs, k.regs),
		f32(l.corr, k.corr), f64(l.name, 0xdeadbeef)} // name: a pointer of the other process
	for i := 0; i < 3; i++ {
		fs = append(fs, f32(l.grid+4*i, k.grid[i]), f32(l.block+4*i, k.block[i]))
	}
	return recordBytes(200, kindConcurrentKernel, fs...) // sizeof(CUpti_ActivityKernel8)
}

func memcpyBytes(m memcpyRecord) []byte {
	l := memcpyLayout
	return recordBytes(88, kindMemcpy, // sizeof(CUpti_ActivityMemcpy5)
		f8(l.copyKind, m.copyKind), f64(l.bytes, m.bytes), f64(l.start, m.start), f64(l.end, m.end),
		f32(l.device, m.device), f32(l.context, m.context), f32(l.stream, m.stream), f32(l.corr, m.corr))
}

func memsetBytes(m memsetRecord) []byte {
	l := memsetLayout
	return recordBytes(88, kindMemset, // sizeof(CUpti_ActivityMemset4)
		f32(l.value, m.value), f64(l.bytes, m.bytes), f64(l.start, m.start), f64(l.end, m.end),
		f32(l.device, m.device), f32(l.context, m.context), f32(l.stream, m.stream), f32(l.corr, m.corr))
}

func syncBytes(s syncRecord) []byte {
	l := syncLayout
	return recordBytes(40, kindSynchronization, // sizeof(CUpti_ActivitySynchronization)
		f32(l.typ, s.typ), f64(l.start, s.start), f64(l.end, s.end),
		f32(l.corr, s.corr), f32(l.context, s.context), f32(l.stream, s.stream))
}

func extBytes(e extCorrRecord) []byte {
	l := extLayout
	return recordBytes(24, kindExternalCorrelation, // sizeof(CUpti_ActivityExternalCorrelation)
		f32(l.kind, e.kind), f64(l.id, e.id), f32(l.corr, e.corr))
}
