package prover

import (
	"fmt"
	"strings"

	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

// CircuitFile is one registration of a circuit from files, as `cuzk serve
// --circuit-file NAME:R1CS:PK[:VK]` takes it (see circuits.RegisterFiles).
type CircuitFile struct {
	// Name is the circuit name requests use: valid UTF-8, no spaces or
	// control characters.
	Name string
	// CS, PK and VK are the paths of the compiled R1CS, the proving key and
	// the optional verifying key ("" when absent).
	CS, PK, VK string
}

// String returns the registration as ParseCircuitFile reads it.
func (f CircuitFile) String() string {
	s := f.Name + ":" + f.CS + ":" + f.PK
	if f.VK != "" {
		s += ":" + f.VK
	}
	return s
}

// Register registers f in the one circuit registry
// (circuits.RegisterFiles), so every Prover and server of the process
// knows it; errors as RegisterFiles's.
func (f CircuitFile) Register() error {
	return circuits.RegisterFiles(f.Name, circuits.Files{CS: f.CS, PK: f.PK, VK: f.VK})
}

// ParseCircuitFile parses NAME:R1CS:PK[:VK]. Paths cannot contain ':' (the
// separator). Errors wrap ErrBadCircuitFile and say which part is wrong;
// the files are not opened here.
func ParseCircuitFile(spec string) (CircuitFile, error) {
	parts := strings.Split(spec, ":")
	if len(parts) < 3 || len(parts) > 4 {
		return CircuitFile{}, fmt.Errorf("%q: %w (%d parts separated by ':')", spec, ErrBadCircuitFile, len(parts))
	}
	f := CircuitFile{Name: parts[0], CS: parts[1], PK: parts[2]}
	if len(parts) == 4 {
		f.VK = parts[3]
		if f.VK == "" {
			return CircuitFile{}, fmt.Errorf("%q: %w (empty VK path; leave out the last ':' to register no verifying key)", spec, ErrBadCircuitFile)
		}
	}
	if err := circuits.CheckName(f.Name); err != nil {
		return CircuitFile{}, fmt.Errorf("%q: %w (%v)", spec, ErrBadCircuitFile, err)
	}
	if f.CS == "" || f.PK == "" {
		return CircuitFile{}, fmt.Errorf("%q: %w (empty R1CS or PK path)", spec, ErrBadCircuitFile)
	}
	return f, nil
}
