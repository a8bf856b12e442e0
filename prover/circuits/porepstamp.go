package circuits

import (
	"fmt"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"
)

// compilePoRepStamped returns the R1CS gnark's frontend.Compile makes of
// porep with k challenges (Merkle depth depth, filler constraints of
// mulchain) without compiling k challenges: the k challenges are
// identical circuits over their own inputs, so it compiles one challenge
// (with the filler, and once without it, for the boundary) and writes
// the instructions of the first k times, each copy's wires renumbered
// where gnark's compile of k puts them (public: the constant, Roots,
// Indexes; secret: Preimages, Paths, Filler; internal wires one copy
// after another, then the filler's), then the filler's once. Call data,
// constraint and wire offsets, hint output ranges, solver levels and
// input names are those of the plain compile; the coefficient table and
// the blueprints are the one challenge's (copies add no coefficient).
// TestPoRepStampedIsGnarksCompile checks it byte for byte (the
// serialized system's hash) against frontend.Compile.
func compilePoRepStamped(k, depth, filler int) (*cs.R1CS, error) {
	if k < 1 || depth < 1 || filler < 0 {
		return nil, fmt.Errorf("porep stamp: %d challenges, depth %d, filler %d", k, depth, filler)
	}
	compile := func(filler int) (*cs.R1CS, error) {
		ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, newPoRepCircuit(1, depth, filler), poRepCompileOptions...)
		if err != nil {
			return nil, err
		}
		r, ok := ccs.(*cs.R1CS)
		if !ok {
			return nil, fmt.Errorf("porep stamp: compile made a %T", ccs)
		}
		return r, nil
	}
	b, err := compile(filler)
	if err != nil {
		return nil, err
	}
	a := b
	if filler > 0 {
		if a, err = compile(0); err != nil {
			return nil, err
		}
	}
	const pw = poRepPreimageWords
	nF := 0
	if filler > 0 {
		nF = 2
	}
	nA := len(a.Instructions)     // one challenge's instructions
	intA := a.NbInternalVariables // and its internal wires
	consA := a.NbConstraints
	if b.GetNbPublicVariables() != 3 || b.GetNbSecretVariables() != pw+depth+nF || len(b.Instructions) < nA ||
		b.NbConstraints < consA || b.NbInternalVariables < intA || commits(b) {
		return nil, fmt.Errorf("porep stamp: unexpected shape of one challenge (%d public, %d secret, %d instructions)",
			b.GetNbPublicVariables(), b.GetNbSecretVariables(), len(b.Instructions))
	}
	inB := uint32(3 + pw + depth + nF) // b's first internal wire
	pubK := uint32(1 + 2*k)
	inK := pubK + uint32((pw+depth)*k+nF) // the stamped system's first internal wire
	remap := func(w uint32, copy int) uint32 {
		switch {
		case w == 0:
			return 0
		case w == 1:
			return 1 + uint32(copy)
		case w == 2:
			return 1 + uint32(k+copy)
		case w < 3+pw:
			return pubK + uint32(copy*pw) + (w - 3)
		case w < 3+pw+uint32(depth):
			return pubK + uint32(k*pw+copy*depth) + (w - 3 - pw)
		case w < inB:
			return pubK + uint32(k*(pw+depth)) + (w - 3 - pw - uint32(depth))
		case w-inB < uint32(intA):
			return inK + uint32(copy*intA) + (w - inB)
		default: // the filler's internal wires, after every copy's
			return inK + uint32(k*intA) + (w - inB - uint32(intA))
		}
	}
	hintBP := -1
	for i, bp := range b.Blueprints {
		switch bp.(type) {
		case *constraint.BlueprintGenericR1C:
		case *constraint.BlueprintGenericHint:
			hintBP = i
		default:
			return nil, fmt.Errorf("porep stamp: blueprint %T not handled", bp)
		}
	}

	r := cs.NewR1CS(0)
	r.Blueprints = append([]constraint.Blueprint(nil), b.Blueprints...)
	for i, c := range b.Coefficients {
		var u constraint.U64
		copy(u[:], c[:])
		if id := r.AddCoeff(u); id != uint32(i) {
			return nil, fmt.Errorf("porep stamp: coefficient %d got id %d", i, id)
		}
	}
	r.AddPublicVariable("1")
	for _, field := range []string{"Roots", "Indexes"} {
		for c := 0; c < k; c++ {
			r.AddPublicVariable(fmt.Sprintf("%s_%d", field, c))
		}
	}
	for c := 0; c < k; c++ {
		for j := 0; j < pw; j++ {
			r.AddSecretVariable(fmt.Sprintf("Preimages_%d_%d", c, j))
		}
	}
	for c := 0; c < k; c++ {
		for d := 0; d < depth; d++ {
			r.AddSecretVariable(fmt.Sprintf("Paths_%d_%d", c, d))
		}
	}
	for f := 0; f < nF; f++ {
		r.AddSecretVariable(fmt.Sprintf("Filler_%d", f))
	}
	if r.Public[0] != b.Public[0] || r.Secret[0] != b.Secret[0] {
		return nil, fmt.Errorf("porep stamp: input names %q %q, compile's %q %q", r.Public[0], r.Secret[0], b.Public[0], b.Secret[0])
	}
	nInstr := k*nA + len(b.Instructions) - nA
	r.Instructions = make([]constraint.PackedInstruction, 0, nInstr)
	r.CallData = make([]uint32, 0, k*len(a.CallData)+len(b.CallData)-len(a.CallData))
	emit := func(i, copy, shift int) {
		pi := b.Instructions[i]
		end := uint64(len(b.CallData))
		if i+1 < len(b.Instructions) {
			end = b.Instructions[i+1].StartCallData
		}
		cd := b.CallData[pi.StartCallData:end]
		start := len(r.CallData)
		r.CallData = append(r.CallData, cd...)
		out := r.CallData[start:]
		if int(pi.BlueprintID) == hintBP {
			// nbInputs, hint id, len(inputs), per input (n, n × (coeff, wire)), output start, end
			j := 3
			for in := 0; in < int(out[2]); in++ {
				n := int(out[j])
				j++
				for t := 0; t < n; t++ {
					out[j+1] = remap(out[j+1], copy)
					j += 2
				}
			}
			out[j] = remap(out[j], copy)
			// The range's end is one past its last wire.
			out[j+1] = remap(out[j+1]-1, copy) + 1
		} else {
			// nbInputs, len L, len R, len O, then (coeff, wire) pairs
			for j := 5; j < len(out); j += 2 {
				out[j] = remap(out[j], copy)
			}
		}
		r.Instructions = append(r.Instructions, constraint.PackedInstruction{
			BlueprintID:      pi.BlueprintID,
			ConstraintOffset: pi.ConstraintOffset + uint32(shift*consA),
			WireOffset:       pi.WireOffset - inB + inK + uint32(shift*intA),
			StartCallData:    uint64(start),
		})
	}
	for c := 0; c < k; c++ {
		for i := 0; i < nA; i++ {
			emit(i, c, c)
		}
	}
	for i := nA; i < len(b.Instructions); i++ {
		emit(i, k-1, k-1)
	}
	r.NbConstraints = k*consA + b.NbConstraints - consA
	r.NbInternalVariables = k*intA + b.NbInternalVariables - intA
	r.Levels = make([][]uint32, len(b.Levels))
	for l, ids := range b.Levels {
		var lvl []uint32
		for c := 0; c < k; c++ {
			for _, id := range ids {
				if int(id) < nA {
					lvl = append(lvl, id+uint32(c*nA))
				}
			}
		}
		for _, id := range ids {
			if int(id) >= nA {
				lvl = append(lvl, id+uint32((k-1)*nA))
			}
		}
		r.Levels[l] = lvl
	}
	for id, name := range b.MHintsDependencies {
		r.MHintsDependencies[id] = name
	}
	return r, nil
}

// commits reports whether r commits to wires (api.Commit), which the stamp
// does not copy.
func commits(r *cs.R1CS) bool {
	info, _ := r.GetCommitments().(constraint.Groth16Commitments)
	return len(info) > 0
}
