package cupti

import "encoding/binary"

// Record builders for the fake CUPTI of the tests: the same offsets, the
// sizes of CUDA 11.8's structs.

func kernelBytes(k kernelRecord) []byte {
	l := kernelLayout
	b := make([]byte, 200) // sizeof(CUpti_ActivityKernel8)
	binary.LittleEndian.PutUint32(b, kindConcurrentKernel)
	binary.LittleEndian.PutUint64(b[l.start:], k.start)
	binary.LittleEndian.PutUint64(b[l.end:], k.end)
	binary.LittleEndian.PutUint32(b[l.device:], k.device)
	binary.LittleEndian.PutUint32(b[l.context:], k.context)
	binary.LittleEndian.PutUint32(b[l.stream:], k.stream)
	for i := 0; i < 3; i++ {
		binary.LittleEndian.PutUint32(b[l.grid+4*i:], k.grid[i])
		binary.LittleEndian.PutUint32(b[l.block+4*i:], k.block[i])
	}
	binary.LittleEndian.PutUint32(b[l.staticShm:], k.staticShm)
	binary.LittleEndian.PutUint32(b[l.dynShm:], k.dynShm)
	binary.LittleEndian.PutUint16(b[l.regs:], k.regs)
	binary.LittleEndian.PutUint32(b[l.corr:], k.corr)
	binary.LittleEndian.PutUint64(b[l.name:], 0xdeadbeef) // a pointer of the other process
	return b
}

func memcpyBytes(m memcpyRecord) []byte {
	l := memcpyLayout
	b := make([]byte, 88) // sizeof(CUpti_ActivityMemcpy5)
	binary.LittleEndian.PutUint32(b, kindMemcpy)
	b[l.copyKind] = m.copyKind
	binary.LittleEndian.PutUint64(b[l.bytes:], m.bytes)
	binary.LittleEndian.PutUint64(b[l.start:], m.start)
	binary.LittleEndian.PutUint64(b[l.end:], m.end)
	binary.LittleEndian.PutUint32(b[l.device:], m.device)
	binary.LittleEndian.PutUint32(b[l.context:], m.context)
	binary.LittleEndian.PutUint32(b[l.stream:], m.stream)
	binary.LittleEndian.PutUint32(b[l.corr:], m.corr)
	return b
}

func memsetBytes(m memsetRecord) []byte {
	l := memsetLayout
	b := make([]byte, 88) // sizeof(CUpti_ActivityMemset4)
	binary.LittleEndian.PutUint32(b, kindMemset)
	binary.LittleEndian.PutUint32(b[l.value:], m.value)
	binary.LittleEndian.PutUint64(b[l.bytes:], m.bytes)
	binary.LittleEndian.PutUint64(b[l.start:], m.start)
	binary.LittleEndian.PutUint64(b[l.end:], m.end)
	binary.LittleEndian.PutUint32(b[l.device:], m.device)
	binary.LittleEndian.PutUint32(b[l.context:], m.context)
	binary.LittleEndian.PutUint32(b[l.stream:], m.stream)
	binary.LittleEndian.PutUint32(b[l.corr:], m.corr)
	return b
}

func syncBytes(s syncRecord) []byte {
	l := syncLayout
	b := make([]byte, 40) // sizeof(CUpti_ActivitySynchronization)
	binary.LittleEndian.PutUint32(b, kindSynchronization)
	binary.LittleEndian.PutUint32(b[l.typ:], s.typ)
	binary.LittleEndian.PutUint64(b[l.start:], s.start)
	binary.LittleEndian.PutUint64(b[l.end:], s.end)
	binary.LittleEndian.PutUint32(b[l.corr:], s.corr)
	binary.LittleEndian.PutUint32(b[l.context:], s.context)
	binary.LittleEndian.PutUint32(b[l.stream:], s.stream)
	return b
}

func extBytes(e extCorrRecord) []byte {
	l := extLayout
	b := make([]byte, 24) // sizeof(CUpti_ActivityExternalCorrelation)
	binary.LittleEndian.PutUint32(b, kindExternalCorrelation)
	binary.LittleEndian.PutUint32(b[l.kind:], e.kind)
	binary.LittleEndian.PutUint64(b[l.id:], e.id)
	binary.LittleEndian.PutUint32(b[l.corr:], e.corr)
	return b
}
