package circuits

import (
	"fmt"
	"strings"

	"github.com/otelcuzk/otelcuzk/internal/human"
)

// Plan is what one proof of a built-in circuit at one size needs, in
// bytes, before anything is built (issue 24 item 2): the host memory of
// each step, the GPU's device memory, the disk of its key file, the
// synthesis buffers and the witness. Its figures come from the circuit's
// shape (wires per constraint, bytes of its compiled R1CS) and from what
// each step allocates:
//
//   - Circuit: the compiled R1CS held in memory (the shape's measured bytes
//     per constraint);
//   - Witness: the solved wire values, 32 bytes a wire;
//   - Synthesis: the assignment a proof holds, the wires and a, b, c
//     padded to the domain, 32 bytes each (the mmap'd buffers of
//     groth16.Synthesize);
//   - Key: the proving key in memory (KeyMemory: A, B, K and Z in G1 at 96
//     bytes a point, B in G2 at 192, counted for every wire; the
//     Pedersen bases of api.Commit, two points a committed wire);
//   - KeyDisk: the key cache's file, the key's raw points (gnark's
//     WriteDump) and two bytes a wire for the infinity masks;
//     KeyDiskCompressed: the same points compressed (gnark's WriteTo: 48
//     and 96 bytes);
//   - CompileHost: the peak of gnark's frontend.Compile of the circuit
//     (the shape's measured bytes per constraint), paid when the circuit
//     cache does not hold it; the compiled R1CS it leaves is Circuit;
//   - SetupHost: the peak of `cuzk setup --backend cuda` (prover/setup):
//     the process and circuit, the key, and the scalars it is made from
//     (A, B, C, K per wire and Z, L per domain point, 32 bytes each);
//   - SetupCPUHost: gnark's groth16.Setup (the fitted factor of
//     bench/memory.md);
//   - ProveHost: the peak of a prove on the CUDA backend with the key
//     loaded: process, circuit, key, the solver's vectors (ProofMemory's,
//     the MSMs on the device); ProveCPUHost adds gnark-crypto's MSM
//     scratch (ProofMemory);
//   - Device: the CUDA prove's device memory: the key's bases kept on the
//     device, compute_h's twiddle and coset tables (4 per domain point) and
//     vectors (3), and the MSM's scalars and sorted digits (32 + 4·16 bytes
//     per wire); a model of prover/gpu's allocations, not a measurement.
type Plan struct {
	Circuit                 string
	Constraints, Domain     int
	Wires                   int
	CircuitBytes            uint64
	CompileHost             uint64
	Witness, Synthesis      uint64
	Key, KeyDisk            uint64
	KeyDiskCompressed       uint64
	SetupHost, SetupCPUHost uint64
	ProveHost, ProveCPUHost uint64
	Device                  uint64
}

// solverPlanBytesPerConstraint is the component solver's plan of a
// compiled circuit, kept beside it while it lives: one uint32 an
// instruction, about one a constraint (prover/groth16/compsolve.go).
const solverPlanBytesPerConstraint = 4

// shapes are the built-in circuits' shapes, by name.
var shapes = map[string]shape{
	"merkle":     merkleShape,
	"mulchain":   mulChainShape,
	"porep":      poRepShape,
	"rangecheck": rangeCheckShape,
}

// PlanFor returns the plan of built-in circuit name at constraints
// constraints. Errors wrap ErrUnknownCircuit, ErrNotBuiltin or
// ErrBadConstraints.
func PlanFor(name string, constraints int) (Plan, error) {
	if _, err := LookupBuiltin(name); err != nil {
		return Plan{}, err
	}
	if err := checkConstraints(constraints); err != nil {
		return Plan{}, err
	}
	s, ok := shapes[name]
	if !ok {
		return Plan{}, fmt.Errorf("%w: %s has no memory shape", ErrNotBuiltin, name)
	}
	return s.plan(name, constraints), nil
}

func (s shape) plan(name string, n int) Plan {
	w := uint64(s.wiresPerConstraint*float64(n)) + 1
	d := uint64(1)
	for d < uint64(n) {
		d <<= 1
	}
	p := Plan{Circuit: name, Constraints: n, Domain: int(d), Wires: int(w)}
	p.CircuitBytes = uint64(s.ccsBytesPerConstraint * float64(n))
	p.CompileHost = RuntimeBytes + uint64(s.compileBytesPerConstraint*float64(n))
	held := RuntimeBytes + p.CircuitBytes
	p.Witness = 32 * w
	p.Synthesis = 32 * (w + 3*d)
	k := uint64(s.committedPerConstraint * float64(n))
	// The Pedersen keys of api.Commit: a basis and its σ-multiple per
	// committed wire.
	p.Key = KeyMemory(int(d), int(w)) + 2*96*k
	p.KeyDisk = p.Key + 2*w
	p.KeyDiskCompressed = p.Key/2 + 2*w
	p.SetupHost = held + p.Key + 32*(4*w+2*d)
	p.SetupCPUHost = held + uint64(setupKeyFactor*float64(p.Key)) + setupFixedBytes
	vectors := 32 * (3*(w+3*d) + 2*w)
	// A prove also holds what the solver keeps of the compiled circuit
	// while it lives: the component solver's plan.
	solverPlan := solverPlanBytesPerConstraint * uint64(n)
	p.ProveHost = held + solverPlan + p.Key + vectors
	p.ProveCPUHost = held + solverPlan + p.Key + ProofMemory(n, int(w), int(k))
	p.Device = p.Key + 32*7*d + (32+4*16)*w
	return p
}

// Host is the plan's peak host memory when nothing is cached: the largest
// of the compile, the GPU setup and the CUDA prove, or with cpu of the
// compile, the CPU setup and prove.
func (p Plan) Host(cpu bool) uint64 {
	if cpu {
		return p.HostFor(true, KeysCPUSetup, true)
	}
	return p.HostFor(false, KeysGPUSetup, true)
}

// KeySource is where a proof's proving key comes from: it decides whose
// peak, a setup's or the prove's, the host must hold.
type KeySource int

const (
	// KeysCached: the key file is in the key cache, nothing is set up; the
	// prove's figure alone counts.
	KeysCached KeySource = iota
	// KeysGPUSetup: a missing key is made by prover/setup with the GPU's
	// fixed-base multiplications (SetupHost).
	KeysGPUSetup
	// KeysCPUSetup: a missing key is made by gnark's groth16.Setup
	// (SetupCPUHost).
	KeysCPUSetup
)

// String names src as the plan's messages do.
func (src KeySource) String() string {
	switch src {
	case KeysCached:
		return "key cached"
	case KeysGPUSetup:
		return "key made by the GPU setup"
	case KeysCPUSetup:
		return "key made by the CPU setup"
	}
	return fmt.Sprintf("KeySource(%d)", int(src))
}

// HostFor is the plan's peak host memory of a proof on the CPU backend
// (cpu) or the CUDA backend whose key comes from src, compiling the
// circuit first when compile (it is not in the circuit cache): the
// prove's figure (ProveCPUHost or ProveHost), or the setup's that src
// runs, or CompileHost, whichever is largest.
func (p Plan) HostFor(cpu bool, src KeySource, compile bool) uint64 {
	need := p.ProveHost
	if cpu {
		need = p.ProveCPUHost
	}
	if compile {
		need = max(need, p.CompileHost)
	}
	switch src {
	case KeysGPUSetup:
		need = max(need, p.SetupHost)
	case KeysCPUSetup:
		need = max(need, p.SetupCPUHost)
	}
	return need
}

// CheckHost returns nil when HostFor(cpu, src, compile) fits in hostAvail
// bytes of available memory, else an error wrapping ErrTooLargeForHost
// with the figure, the memory available, the backend's figures used, src
// and whether the compile was counted.
func (p Plan) CheckHost(cpu bool, src KeySource, compile bool, hostAvail uint64) error {
	need := p.HostFor(cpu, src, compile)
	if need <= hostAvail {
		return nil
	}
	backend := "cuda"
	if cpu {
		backend = "cpu"
	}
	circuit := "circuit cached"
	if compile {
		circuit = "circuit compiled"
	}
	return fmt.Errorf("%w: %s at %d constraints: host memory %s needed, %s available (%s backend figures, %s, %s)",
		ErrTooLargeForHost, p.Circuit, p.Constraints, human.Bytes(need), human.Bytes(hostAvail), backend, circuit, src)
}

// Fits returns nil when the plan fits a host of hostAvail bytes of
// available memory and diskFree bytes free in the key cache (0: not
// checked; ephemeral keys need no disk), else an error wrapping
// ErrTooLargeForHost that names each figure that does not fit, with the plan's
// numbers.
func (p Plan) Fits(cpu bool, hostAvail, diskFree uint64, ephemeral bool) error {
	var over []string
	if need := p.Host(cpu); need > hostAvail {
		over = append(over, fmt.Sprintf("host memory %s needed, %s available", human.Bytes(need), human.Bytes(hostAvail)))
	}
	if !ephemeral && diskFree > 0 && p.KeyDisk > diskFree {
		over = append(over, fmt.Sprintf("key file %s, %s free on its disk (cuzk prove --ephemeral-keys keeps it in memory)", human.Bytes(p.KeyDisk), human.Bytes(diskFree)))
	}
	if len(over) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s at %d constraints: %s", ErrTooLargeForHost, p.Circuit, p.Constraints, strings.Join(over, "; "))
}

// Table writes the plan as rows of a Markdown table (PlanHeader first).
func (p Plan) Row() string {
	b := func(v uint64) string { return human.Bytes(v) }
	return fmt.Sprintf("| %s | 2^%d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", p.Circuit, log2(p.Domain), b(p.Witness), b(p.Synthesis),
		b(p.Key), b(p.KeyDisk), b(p.KeyDiskCompressed), b(p.CompileHost), b(p.SetupHost), b(p.ProveHost), b(p.Device), b(p.SetupCPUHost))
}

// PlanHeader is the header of Plan.Row's table.
const PlanHeader = "| circuit | size | witness | synthesis | key (memory) | key file | compressed | compile host | GPU setup host | CUDA prove host | device | CPU setup host |\n|---|---|---|---|---|---|---|---|---|---|---|---|"

func log2(d int) int {
	n := 0
	for 1<<n < d {
		n++
	}
	return n
}
