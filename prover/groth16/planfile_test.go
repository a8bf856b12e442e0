package groth16

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/consensys/gnark/backend/witness"
	cs "github.com/consensys/gnark/constraint/bls12-381"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// cloneR1CS is r1cs through gnark's WriteTo and ReadFrom: the same
// circuit in another object, whose plan (keyed by the object) is its own,
// as a circuit read from the cache is.
func cloneR1CS(t *testing.T, r1cs *cs.R1CS) *cs.R1CS {
	t.Helper()
	var b bytes.Buffer
	if _, err := r1cs.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	c := new(cs.R1CS)
	if _, err := c.ReadFrom(&b); err != nil {
		t.Fatal(err)
	}
	return c
}

// builtin compiles a built-in circuit at n constraints with its sample
// witness.
func builtin(t *testing.T, name string, n int) (*cs.R1CS, witness.Witness) {
	t.Helper()
	ccs, w := circuitstest.CompileBuiltin(t, name, n, 1)
	return ccs.(*cs.R1CS), w
}

// hasPlan reports whether this process holds r1cs's plan (made or read).
func hasPlan(r1cs *cs.R1CS) bool {
	return compPlans.get(r1cs, func() *compPlanOnce { return &compPlanOnce{} }).made.Load()
}

// synthesizePlanSpans synthesizes w for r1cs with its spans recorded,
// checks the wires and a, b, c against gnark's Solve, and returns the
// synthesize.plan spans and the solve's cuzk.solver and
// cuzk.solver.components.
func synthesizePlanSpans(t *testing.T, r1cs *cs.R1CS, w witness.Witness) (plans int, solver, comps string) {
	t.Helper()
	tp, exp := spantest.NewMemory()
	asg, err := Synthesize(WithSolverTasks(context.Background(), 4), r1cs, w, WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	defer asg.Release(context.Background(), nil)
	sol, err := r1cs.Solve(w)
	if err != nil {
		t.Fatal(err)
	}
	want := sol.(*cs.R1CSSolution)
	for i := range want.W {
		if !asg.Wires[i].Equal(&want.W[i]) {
			t.Fatalf("wire %d differs from gnark's", i)
		}
	}
	for i := range want.A {
		if !asg.A[i].Equal(&want.A[i]) || !asg.B[i].Equal(&want.B[i]) || !asg.C[i].Equal(&want.C[i]) {
			t.Fatalf("a, b or c of constraint %d differs from gnark's", i)
		}
	}
	tree := spantest.NewTree(exp.GetSpans())
	solve := tree.Named(semconv.SpanSynthesizeSolve)
	if len(solve) != 1 {
		t.Fatalf("%d synthesize.solve spans", len(solve))
	}
	return len(tree.Named(semconv.SpanSynthesizePlan)), spantest.StubAttr(solve[0], string(semconv.KeySolver)),
		spantest.StubAttr(solve[0], string(semconv.KeySolverComponents))
}

// A plan written and read back is the plan made, for independent chains,
// a circuit of one wide component, merkle (a prologue making the shared
// `one` wire) and porep (SHA-256 challenges, hints); read into another
// copy of the circuit, it is that copy's plan: its synthesis makes none
// (no synthesize.plan), solves by the components read, and is gnark's.
func TestPlanRoundTrip(t *testing.T) {
	type tc struct {
		name  string
		r1cs  *cs.R1CS
		w     witness.Witness
		comps int // 0: any
	}
	var cases []tc
	chains, chainsW := compileChains(t, 300, 40)
	cases = append(cases, tc{"chains 300x40", chains, chainsW, 300})
	star, starW := compileStar(t, 400)
	cases = append(cases, tc{"star 400 (one component)", star, starW, 1})
	merkle, merkleW := builtin(t, "merkle", 1<<12)
	cases = append(cases, tc{"merkle 2^12", merkle, merkleW, 0})
	porep, porepW := builtin(t, "porep", 1<<17)
	cases = append(cases, tc{"porep 2^17", porep, porepW, 0})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			made := compPlanOf(c.r1cs, shapeOf(c.r1cs))
			if c.comps > 0 && len(made.comps) != c.comps {
				t.Fatalf("made plan has %d components, want %d", len(made.comps), c.comps)
			}
			var b bytes.Buffer
			if err := WritePlan(&b, c.r1cs, "circuit-id"); err != nil {
				t.Fatal(err)
			}
			got, err := readPlan(bytes.NewReader(b.Bytes()), c.r1cs, "circuit-id")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, made) {
				t.Fatalf("read plan differs from the made one: %d/%d components, prologue %d/%d, rest %d/%d, levels %d/%d",
					len(got.comps), len(made.comps), len(got.prologue), len(made.prologue), got.rest, made.rest, got.levels, made.levels)
			}
			fresh := cloneR1CS(t, c.r1cs)
			if hasPlan(fresh) {
				t.Fatal("a fresh copy of the circuit has a plan")
			}
			if err := ReadPlan(bytes.NewReader(b.Bytes()), fresh, "circuit-id"); err != nil {
				t.Fatal(err)
			}
			if !hasPlan(fresh) {
				t.Fatal("ReadPlan kept no plan")
			}
			plans, solver, comps := synthesizePlanSpans(t, fresh, c.w)
			if plans != 0 {
				t.Errorf("%d synthesize.plan spans after ReadPlan, want none", plans)
			}
			if solver == string(SolverComponents) && comps != strconv.Itoa(len(made.comps)) {
				t.Errorf("solved by %s components, the plan has %d", comps, len(made.comps))
			}
		})
	}
}

// compileChains compiles k independent chains of n steps with their
// witness.
func compileChains(t *testing.T, k, n int) (*cs.R1CS, witness.Witness) {
	t.Helper()
	circuit, assign := newChains(k, n, func(i int) int { return 5 + i })
	return compileFor(t, circuit, assign)
}

// planLayout gives the offsets of a plan file's parts (planfile.go).
type planLayout struct {
	idLen, nComps    int
	sizes, insts, ck int // offsets of the sizes, the instructions, the checksum
}

func layoutOf(b []byte) planLayout {
	l := planLayout{idLen: int(binary.LittleEndian.Uint32(b[12:])), nComps: int(binary.LittleEndian.Uint64(b[40:]))}
	l.sizes = planHeader + l.idLen
	l.insts = l.sizes + 4*l.nComps
	l.ck = len(b) - 4
	return l
}

// resum writes b's checksum again over its (changed) bytes.
func resum(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], castagnoli))
	return b
}

func u32(b []byte, off int) uint32      { return binary.LittleEndian.Uint32(b[off:]) }
func put32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }

// ReadPlan refuses every file that does not fit the circuit it is read
// for, each with its own message, and keeps nothing: the copy of the
// circuit has no plan after it, and its synthesis makes one (a
// synthesize.plan span) and is still gnark's. Structural damage is tried
// with the checksum written again, so that the cover checks themselves
// are what refuse it.
func TestReadPlanRefusesWhatDoesNotFit(t *testing.T) {
	merkle, w := builtin(t, "merkle", 1<<12)
	p := compPlanOf(merkle, shapeOf(merkle))
	if len(p.prologue) == 0 || len(p.comps) < 2 || len(p.comps[0]) < 3 {
		t.Fatalf("merkle 2^12: prologue %d, %d components: not the shape these cases need", len(p.prologue), len(p.comps))
	}
	const id = "merkle-hash"
	var good bytes.Buffer
	if err := WritePlan(&good, merkle, id); err != nil {
		t.Fatal(err)
	}
	star, _ := compileStar(t, 50)
	var other bytes.Buffer
	if err := WritePlan(&other, star, id); err != nil {
		t.Fatal(err)
	}
	l := layoutOf(good.Bytes())
	n := len(merkle.Instructions)
	// An instruction of the prologue below comp 0's second instruction:
	// put in place of its first, the order holds and only the cover fails.
	pro := -1
	for _, i := range p.prologue {
		if i < p.comps[0][1] {
			pro = int(i)
			break
		}
	}
	if pro < 0 {
		t.Fatal("no prologue instruction before the first component's second")
	}
	// An instruction of one component put in the other's place between
	// two neighbours it fits between: only the cover refuses it.
	twiceAt, twiceVal := -1, uint32(0)
	offs := [2]int{0, len(p.comps[0])}
	for k := 0; k < 2 && twiceAt < 0; k++ {
		c, o := p.comps[k], p.comps[1-k]
		for j := range c {
			lo, hi := int64(-1), int64(n)
			if j > 0 {
				lo = int64(c[j-1])
			}
			if j+1 < len(c) {
				hi = int64(c[j+1])
			}
			for _, x := range o {
				if int64(x) > lo && int64(x) < hi {
					twiceAt, twiceVal = offs[k]+j, x
					break
				}
			}
			if twiceAt >= 0 {
				break
			}
		}
	}
	if twiceAt < 0 {
		t.Fatal("no instruction of one component fits between two of the other")
	}
	cases := []struct {
		name, want string
		id         string // "" for id
		edit       func(b []byte) []byte
	}{
		{"magic", "not a solver plan file", "", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"empty file", "truncated in its magic", "", func(b []byte) []byte { return b[:0] }},
		{"version", "format version 2, this build reads 1", "", func(b []byte) []byte { put32(b, 8, 2); return b }},
		{"another circuit", "plan of a circuit of", "", func([]byte) []byte { return append([]byte(nil), other.Bytes()...) }},
		{"circuit ID", `plan of circuit "merkle-hash", this one is "another-hash"`, "another-hash", func(b []byte) []byte { return b }},
		{"ID too long", "circuit ID of 5000 bytes", "", func(b []byte) []byte { put32(b, 12, 5000); return b }},
		{"prologue", "prologue of", "", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[32:], uint64(len(p.prologue)+1))
			return resum(b)
		}},
		{"too many components", fmt.Sprintf("%d components of %d instructions", n, n-len(p.prologue)), "", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[40:], uint64(n))
			return resum(b)
		}},
		{"truncated header", "truncated in its header", "", func(b []byte) []byte { return b[:20] }},
		{"truncated ID", "truncated in its circuit ID", "", func(b []byte) []byte { return b[:planHeader+3] }},
		{"truncated sizes", "truncated in its component sizes", "", func(b []byte) []byte { return b[:l.sizes+5] }},
		{"truncated instructions", "truncated in its instructions", "", func(b []byte) []byte { return b[:l.insts+4*(n/2)] }},
		{"truncated checksum", "truncated in its checksum", "", func(b []byte) []byte { return b[:len(b)-2] }},
		{"bytes after the end", "bytes after its checksum", "", func(b []byte) []byte { return append(b, 0) }},
		{"checksum", "checksum mismatch", "", func(b []byte) []byte { b[l.insts+4*7] ^= 1; return b }},
		{"empty component", "component 0 is empty", "", func(b []byte) []byte {
			put32(b, l.sizes+4, u32(b, l.sizes+4)+u32(b, l.sizes))
			put32(b, l.sizes, 0)
			return resum(b)
		}},
		{"sizes", fmt.Sprintf("components of %d instructions in all, the circuit has %d past its prologue", n-len(p.prologue)-1, n-len(p.prologue)), "", func(b []byte) []byte {
			put32(b, l.sizes, u32(b, l.sizes)-1)
			return resum(b)
		}},
		{"out of range", "names instruction", "", func(b []byte) []byte {
			put32(b, l.insts+4*(len(p.comps[0])-1), uint32(n))
			return resum(b)
		}},
		{"out of order", "not in index order", "", func(b []byte) []byte {
			x, y := u32(b, l.insts), u32(b, l.insts+4)
			put32(b, l.insts, y)
			put32(b, l.insts+4, x)
			return resum(b)
		}},
		{"twice", "planned twice", "", func(b []byte) []byte {
			put32(b, l.insts+4*twiceAt, twiceVal)
			return resum(b)
		}},
		{"prologue's instruction", "planned twice", "", func(b []byte) []byte {
			put32(b, l.insts, uint32(pro))
			return resum(b)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.edit(append([]byte(nil), good.Bytes()...))
			readID := id
			if c.id != "" {
				readID = c.id
			}
			fresh := cloneR1CS(t, merkle)
			err := ReadPlan(bytes.NewReader(b), fresh, readID)
			if !errors.Is(err, ErrBadPlan) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ReadPlan: %v, want ErrBadPlan saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("a refusal of more than one line: %q", err)
			}
			if hasPlan(fresh) {
				t.Fatal("a refused plan was kept")
			}
			if plans, _, _ := synthesizePlanSpans(t, fresh, w); plans != 1 {
				t.Errorf("%d synthesize.plan spans after a refused plan, want the plan made (1)", plans)
			}
		})
	}
	// A read that fails is the reader's error, not a refusal.
	boom := errors.New("disk on fire")
	err := ReadPlan(io.MultiReader(bytes.NewReader(good.Bytes()[:100]), iotest.ErrReader(boom)), cloneR1CS(t, merkle), id)
	if !errors.Is(err, boom) || errors.Is(err, ErrBadPlan) {
		t.Errorf("ReadPlan of a failing reader: %v, want its error, not ErrBadPlan", err)
	}
}

// ReadPlan and synthesize on the same circuit at once (the race detector
// watches): one plan is kept, whichever came first, and the solve is
// gnark's.
func TestReadPlanBesideASynthesis(t *testing.T) {
	r1cs, w := compileChains(t, 64, 10)
	var b bytes.Buffer
	if err := WritePlan(&b, r1cs, ""); err != nil {
		t.Fatal(err)
	}
	fresh := cloneR1CS(t, r1cs)
	done := make(chan error, 1)
	go func() { done <- ReadPlan(bytes.NewReader(b.Bytes()), fresh, "") }()
	if _, solver, comps := synthesizePlanSpans(t, fresh, w); solver != string(SolverComponents) || comps != "64" {
		t.Errorf("solved by %s (%s components), want 64 components", solver, comps)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
