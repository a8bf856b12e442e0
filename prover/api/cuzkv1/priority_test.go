package cuzkv1

import (
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// TestEveryWireValueMapsToTheSameName walks the generated enum, so a value
// added to the proto without a priority.Priority fails here.
func TestEveryWireValueMapsToTheSameName(t *testing.T) {
	seen := map[priority.Priority]bool{}
	for n, name := range Priority_name {
		v := Priority(n)
		p, err := ToPriority(v)
		if err != nil {
			t.Fatalf("ToPriority(%s): %v", name, err)
		}
		if v == Priority_PRIORITY_UNSPECIFIED {
			if p != priority.Normal {
				t.Errorf("PRIORITY_UNSPECIFIED is %v, want NORMAL", p)
			}
			continue
		}
		if want := p.String(); name != want {
			t.Errorf("ToPriority(%s) = %v", name, p)
		}
		back, err := FromPriority(p)
		if err != nil || back != v {
			t.Errorf("FromPriority(%v) = %v, %v; want %s", p, back, err, name)
		}
		seen[p] = true
	}
	if len(seen) != len(priority.All) {
		t.Errorf("the wire enum has %d priorities, priority.All %d", len(seen), len(priority.All))
	}
}

func TestUnknownPrioritiesAreErrors(t *testing.T) {
	if p, err := ToPriority(Priority(42)); err == nil || p != priority.Normal || !strings.Contains(err.Error(), "42") {
		t.Errorf("ToPriority(42) = %v, %v; want NORMAL and an error naming 42", p, err)
	}
	if v, err := FromPriority(priority.Priority(7)); err == nil || v != Priority_PRIORITY_UNSPECIFIED {
		t.Errorf("FromPriority(7) = %v, %v; want UNSPECIFIED and an error", v, err)
	}
}
