package circuits

import (
	"errors"
	"testing"
)

// CheckSize, which builds nothing, refuses exactly the sizes Build refuses.
func TestCheckSizeAgreesWithBuild(t *testing.T) {
	level, proof := merkleCosts()
	least := merkleFixed + 2*level + proof
	sizes := map[string][]int{
		"mulchain":   {-1, 0, 1, 2, 100},
		"merkle":     {0, 1, 100, least - 1, least, least + 1, 1 << 14},
		"rangecheck": {0, 1, rangeCheckMin - 1, rangeCheckMin, 1000},
		"porep":      {0, 1000, 100000},
	}
	for name, ns := range sizes {
		for _, n := range ns {
			_, berr := Build(name, n)
			cerr := CheckSize(name, n)
			if (berr == nil) != (cerr == nil) {
				t.Errorf("%s at %d: CheckSize %v, Build %v", name, n, cerr, berr)
			}
			if cerr != nil && !errors.Is(cerr, ErrBadConstraints) {
				t.Errorf("%s at %d: %v does not wrap ErrBadConstraints", name, n, cerr)
			}
		}
	}
	if err := CheckSize("no-such", 10); !errors.Is(err, ErrUnknownCircuit) {
		t.Errorf("unknown circuit: %v", err)
	}
	if err := CheckSize("merkle", MaxConstraints+1); !errors.Is(err, ErrBadConstraints) {
		t.Errorf("above MaxConstraints: %v", err)
	}
}
