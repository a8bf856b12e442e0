package cupti

import "encoding/binary"

// Frame builders, for the fake CUPTI of the tests and for anything in Go
// that must speak the format.

func appendFrame(dst []byte, typ uint16, payload []byte) []byte {
	var h [frameHeader]byte
	binary.LittleEndian.PutUint32(h[:], uint32(frameHeader+len(payload)))
	binary.LittleEndian.PutUint16(h[4:], typ)
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

func appendU16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
func appendStr(b []byte, s string) []byte { return append(appendU16(b, uint16(len(s))), s...) }

func recordFrame(dst, rec []byte, strs ...string) []byte {
	p := appendU16(nil, uint16(len(rec)))
	p = appendU16(p, uint16(len(strs)))
	p = append(p, rec...)
	for _, s := range strs {
		p = appendStr(p, s)
	}
	return appendFrame(dst, frameRecord, p)
}

func pushFrame(dst []byte, e nvtxPush) []byte {
	p := appendU64(nil, e.ts)
	for _, v := range []uint64{e.thread, e.id, e.parentRange, e.goParent} {
		p = appendU64(p, v)
	}
	for _, v := range []uint32{e.flags, e.category, e.color, e.payloadType} {
		p = appendU32(p, v)
	}
	p = appendU64(p, e.payload)
	p = appendStr(p, e.message)
	p = appendStr(p, e.domain)
	return appendFrame(dst, frameNVTXPush, p)
}

func popFrame(dst []byte, e nvtxPop) []byte {
	p := appendU64(nil, e.ts)
	p = appendU64(p, e.thread)
	p = appendU64(p, e.id)
	k := uint32(0)
	if e.startEnd {
		k = 1
	}
	return appendFrame(dst, frameNVTXPop, appendU32(p, k))
}

func calibFrame(dst []byte, s []calibSample) []byte {
	p := appendU32(nil, uint32(len(s)))
	for _, x := range s {
		p = appendU64(appendU64(appendU64(p, x.host0), x.gpu), x.host1)
	}
	return appendFrame(dst, frameCalib, p)
}
