package groth16

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"unsafe"

	cs "github.com/consensys/gnark/constraint/bls12-381"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// The component solver's plan (compPlan) can be kept with its compiled
// circuit, so that a process that reads the circuit from a file (cuzk
// prove with a cached circuit) reads its plan too instead of making it:
// WritePlan and ReadPlan. The plan file, all integers little-endian:
//
//	magic        8 bytes, planMagic
//	version      uint32, planVersion
//	id length    uint32, bytes of the circuit ID (at most planMaxID)
//	instructions uint64, the circuit's instructions
//	constraints  uint64, its constraints
//	prologue     uint64, instructions of the prologue
//	components   uint64, number of components
//	id           the circuit ID (the caller's name for the circuit)
//	sizes        uint32 each: every component's instructions, in plan order
//	instructions uint32 each: every component's instructions, component
//	             after component, each in index order
//	checksum     uint32, CRC-32C (Castagnoli) of every byte before it
//
// The prologue's instructions are not stored: they are the circuit's first
// levels (planPrologue), found again from the circuit on reading, and
// only their number is compared. At merkle 2^22 the file is about 4 bytes
// an instruction (16 MiB).

// planMagic begins a plan file.
const planMagic = "OCZKPLAN"

// planVersion is the plan file's format and the plan's meaning: raised
// when either changes (the layout above, the prologue's share, what a
// component is), so that a file of another build is refused, not misread.
const planVersion = 1

// planMaxID is the longest circuit ID a plan file takes, bytes.
const planMaxID = 1024

// planHeader is the fixed part of the header: magic through components.
const planHeader = 8 + 4 + 4 + 4*8

// ErrBadPlan is wrapped by ReadPlan's refusals: a file that is not a plan
// of this format, or not the plan of the circuit it is read for, or
// damaged. error.type corrupt. Nothing is kept from a refused file.
var ErrBadPlan = semconv.NewError(semconv.ErrorTypeCorrupt, "solver plan refused")

// castagnoli is CRC-32C's table (SSE 4.2 / ARMv8 CRC instructions).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// littleEndian: this machine stores a uint32 as the file does, so the
// arrays are read and written in place.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// MakePlan makes r1cs's component plan now, as a synthesize.plan span
// under the span in ctx (cuzk.solver.components), unless this process has
// it already (made or read: ReadPlan): then it records nothing. For a
// caller that makes the plan before the first synthesis, to store it
// (WritePlan). Errors: ErrUnsupported when r1cs is not for this project's
// solvers (a blueprint other than gnark's R1C and hint ones, GKR): its
// syntheses go to gnark's solver, which has no plan.
func MakePlan(ctx context.Context, r1cs *cs.R1CS) error {
	if r1cs == nil || !levelSolvable(r1cs) {
		return fmt.Errorf("%w: solver plan of a constraint system the component solver does not solve", ErrUnsupported)
	}
	planTraced(ctx, semconv.Tracer(trace.SpanFromContext(ctx).TracerProvider()), r1cs)
	return nil
}

// WritePlan writes r1cs's component plan to w in the plan file format
// (above), making the plan first (untraced; MakePlan traces it) when this
// process has none. circuitID names r1cs for ReadPlan, which refuses a
// plan written under another ID: the caller's identity of the circuit,
// such as the hex SHA-256 of its serialization (keycache's hash); at most
// planMaxID bytes; "" for none. Errors: ErrUnsupported as MakePlan's, a
// circuit ID too long, w's.
func WritePlan(w io.Writer, r1cs *cs.R1CS, circuitID string) error {
	if r1cs == nil || !levelSolvable(r1cs) {
		return fmt.Errorf("%w: solver plan of a constraint system the component solver does not solve", ErrUnsupported)
	}
	if len(circuitID) > planMaxID {
		return fmt.Errorf("solver plan: circuit ID of %d bytes (at most %d)", len(circuitID), planMaxID)
	}
	p := compPlanOf(r1cs, shapeOf(r1cs))
	pw := &planWriter{w: w}
	h := make([]byte, 0, planHeader+len(circuitID))
	h = append(h, planMagic...)
	h = binary.LittleEndian.AppendUint32(h, planVersion)
	h = binary.LittleEndian.AppendUint32(h, uint32(len(circuitID)))
	h = binary.LittleEndian.AppendUint64(h, uint64(len(r1cs.Instructions)))
	h = binary.LittleEndian.AppendUint64(h, uint64(r1cs.GetNbConstraints()))
	h = binary.LittleEndian.AppendUint64(h, uint64(len(p.prologue)))
	h = binary.LittleEndian.AppendUint64(h, uint64(len(p.comps)))
	h = append(h, circuitID...)
	pw.write(h)
	sizes := make([]uint32, len(p.comps))
	for k, c := range p.comps {
		sizes[k] = uint32(len(c))
	}
	pw.words(sizes)
	for _, c := range p.comps {
		pw.words(c)
	}
	pw.write(binary.LittleEndian.AppendUint32(nil, pw.crc))
	return pw.err
}

// planWriter writes to w, summing what it writes (CRC-32C); the first
// error stops it.
type planWriter struct {
	w   io.Writer
	crc uint32
	err error
	buf []byte // words' little-endian copy on a big-endian machine
}

func (pw *planWriter) write(b []byte) {
	if pw.err != nil {
		return
	}
	pw.crc = crc32.Update(pw.crc, castagnoli, b)
	_, pw.err = pw.w.Write(b)
}

// words writes v as little-endian uint32s.
func (pw *planWriter) words(v []uint32) {
	if len(v) == 0 {
		return
	}
	if littleEndian {
		pw.write(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)))
		return
	}
	for len(v) > 0 {
		n := min(len(v), 1<<14)
		pw.buf = pw.buf[:0]
		for _, x := range v[:n] {
			pw.buf = binary.LittleEndian.AppendUint32(pw.buf, x)
		}
		pw.write(pw.buf)
		v = v[n:]
	}
}

// ReadPlan reads a plan file (WritePlan) of r1cs written under circuitID
// from r, checks it, and keeps it as r1cs's plan in this process: its
// syntheses then solve by it without making it (no synthesize.plan span).
// When this process has r1cs's plan already, the file is checked and its
// plan dropped. It reads the whole file and nothing past it: r must end
// where the plan does.
//
// It refuses, with an error wrapping ErrBadPlan and keeping nothing: a
// file of another format or version; a plan of a circuit whose
// instructions, constraints, prologue or circuit ID differ from r1cs's and
// circuitID; a file cut short or with bytes after its end; a checksum
// that does not match; and a plan that is not an exact cover of r1cs's
// instructions past the prologue (every one in exactly one component,
// each component in index order, no component empty), so that no file can
// make the solver skip, repeat or reorder an instruction. That is all it
// can check cheaply: whether each component is really independent of the
// others is what making the plan costs, and is vouched for by the
// circuit ID and the checksum. Cost: one pass over the file, O(its size).
//
// Errors: ErrBadPlan's, ErrUnsupported as MakePlan's, r's (other than an
// early end, which is ErrBadPlan's "truncated").
func ReadPlan(r io.Reader, r1cs *cs.R1CS, circuitID string) error {
	if r1cs == nil || !levelSolvable(r1cs) {
		return fmt.Errorf("%w: solver plan of a constraint system the component solver does not solve", ErrUnsupported)
	}
	p, err := readPlan(r, r1cs, circuitID)
	if err != nil {
		return err
	}
	po := compPlans.get(r1cs, func() *compPlanOnce { return &compPlanOnce{} })
	po.once.Do(func() {
		po.plan = p
		po.made.Store(true)
	})
	return nil
}

// planRefused is ReadPlan's error: ErrBadPlan and what did not fit.
func planRefused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadPlan, fmt.Sprintf(format, args...))
}

// planReader reads r, summing what it reads (CRC-32C); an early end is
// ErrBadPlan's "truncated".
type planReader struct {
	r   io.Reader
	crc uint32
}

func (pr *planReader) read(b []byte, what string) error {
	if _, err := io.ReadFull(pr.r, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return planRefused("truncated in its %s", what)
		}
		return fmt.Errorf("solver plan: read its %s: %w", what, err)
	}
	pr.crc = crc32.Update(pr.crc, castagnoli, b)
	return nil
}

// words reads len(v) little-endian uint32s into v.
func (pr *planReader) words(v []uint32, what string) error {
	if len(v) == 0 {
		return nil
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
	if err := pr.read(b, what); err != nil {
		return err
	}
	if !littleEndian {
		for i := range v {
			v[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
	}
	return nil
}

// readPlan is ReadPlan up to the plan, checked, which it returns.
func readPlan(r io.Reader, r1cs *cs.R1CS, circuitID string) (*compPlan, error) {
	pr := &planReader{r: r}
	h := make([]byte, planHeader)
	if err := pr.read(h[:8], "magic"); err != nil {
		return nil, err
	}
	if string(h[:8]) != planMagic {
		return nil, planRefused("not a solver plan file (starts %q, want %q)", h[:8], planMagic)
	}
	if err := pr.read(h[8:], "header"); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	if v := le.Uint32(h[8:]); v != planVersion {
		return nil, planRefused("format version %d, this build reads %d", v, planVersion)
	}
	idLen := le.Uint32(h[12:])
	nInst, nCons := le.Uint64(h[16:]), le.Uint64(h[24:])
	nPro, nComps := le.Uint64(h[32:]), le.Uint64(h[40:])
	n := len(r1cs.Instructions)
	if nInst != uint64(n) || nCons != uint64(r1cs.GetNbConstraints()) {
		return nil, planRefused("plan of a circuit of %d instructions and %d constraints, this one has %d and %d",
			nInst, nCons, n, r1cs.GetNbConstraints())
	}
	if idLen > planMaxID {
		return nil, planRefused("circuit ID of %d bytes (at most %d)", idLen, planMaxID)
	}
	id := make([]byte, idLen)
	if err := pr.read(id, "circuit ID"); err != nil {
		return nil, err
	}
	if string(id) != circuitID {
		return nil, planRefused("plan of circuit %q, this one is %q", id, circuitID)
	}
	// in marks the instructions planned so far: the prologue's first.
	in, prologue, levels := planPrologue(r1cs)
	if nPro != uint64(len(prologue)) {
		return nil, planRefused("prologue of %d instructions, this build's is %d", nPro, len(prologue))
	}
	rest := n - len(prologue)
	// Each component holds an instruction at least: no more of them than
	// instructions (and nothing allocated for a count no circuit has).
	if nComps > uint64(rest) {
		return nil, planRefused("%d components of %d instructions", nComps, rest)
	}
	sizes := make([]uint32, nComps)
	if err := pr.words(sizes, "component sizes"); err != nil {
		return nil, err
	}
	var sum uint64
	for k, s := range sizes {
		if s == 0 {
			return nil, planRefused("component %d is empty", k)
		}
		sum += uint64(s)
	}
	if sum != uint64(rest) {
		return nil, planRefused("components of %d instructions in all, the circuit has %d past its prologue", sum, rest)
	}
	all := make([]uint32, rest)
	if err := pr.words(all, "instructions"); err != nil {
		return nil, err
	}
	sum32 := pr.crc
	var tail [5]byte // the checksum, and one byte more that must not be there
	k, err := io.ReadFull(pr.r, tail[:])
	switch {
	case k < 4:
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("solver plan: read its checksum: %w", err)
		}
		return nil, planRefused("truncated in its checksum")
	case k > 4:
		return nil, planRefused("bytes after its checksum")
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("solver plan: read past its checksum: %w", err)
	}
	if stored := le.Uint32(tail[:]); stored != sum32 {
		return nil, planRefused("checksum mismatch (stored %08x, computed %08x)", stored, sum32)
	}
	p := &compPlan{prologue: prologue, comps: make([][]uint32, nComps), rest: rest, levels: levels}
	off := 0
	for k, s := range sizes {
		c := all[off : off+int(s) : off+int(s)]
		off += int(s)
		prev := -1
		for _, i := range c {
			switch {
			case int(i) >= n:
				return nil, planRefused("component %d names instruction %d of %d", k, i, n)
			case int(i) <= prev:
				return nil, planRefused("component %d not in index order (%d after %d)", k, i, prev)
			case in[i]:
				return nil, planRefused("instruction %d planned twice (in component %d, and before it or in the prologue)", i, k)
			}
			in[i] = true
			prev = int(i)
		}
		p.comps[k] = c
	}
	// rest distinct instructions outside the prologue, of rest there are:
	// every one is planned.
	return p, nil
}
