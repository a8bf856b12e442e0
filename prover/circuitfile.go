package prover

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CircuitFile is one registration of a circuit from files, as `cuzk serve
// --circuit-file NAME:R1CS:PK[:VK]` takes it (see RegisterCircuitFiles).
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

// Register registers f with RegisterCircuitFiles.
func (f CircuitFile) Register() error {
	if f.VK == "" {
		return RegisterCircuitFiles(f.Name, f.CS, f.PK)
	}
	return RegisterCircuitFiles(f.Name, f.CS, f.PK, f.VK)
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
	if err := checkCircuitName(f.Name); err != nil {
		return CircuitFile{}, fmt.Errorf("%q: %w (%v)", spec, ErrBadCircuitFile, err)
	}
	if f.CS == "" || f.PK == "" {
		return CircuitFile{}, fmt.Errorf("%q: %w (empty R1CS or PK path)", spec, ErrBadCircuitFile)
	}
	return f, nil
}

// checkCircuitName refuses names a request, a span attribute or a log line
// could not carry faithfully.
func checkCircuitName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if !utf8.ValidString(name) {
		return errors.New("name is not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("name contains %U", r)
		}
	}
	return nil
}
