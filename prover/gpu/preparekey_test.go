package gpu

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// issue 25 item 4: after PrepareKey (what a Prover calls when it loads
// a circuit's keys) the key's first proof makes no cuda.malloc inside
// groth16.prove, in the staged copy mode (pinned staging and scalar
// buffers) as in the pageable one; its base sets, proof buffers and
// pinned scalars are the key's, under the IDs the proof uses.
func TestPrepareKeyLeavesTheFirstProofNothingToAllocate(t *testing.T) {
	for _, mode := range []backend.HostCopy{backend.HostCopyStaged, backend.HostCopyPageable} {
		t.Run(string(mode), func(t *testing.T) {
			b, _, rec := fakeProvingBackend(t, nil)
			if err := b.SetHostCopy(mode); err != nil {
				t.Fatal(err)
			}
			b.stagedFrom = 1 // the staged copies even for this small circuit
			f := circuitstest.Setup(t, "mulchain", 1<<9, 7)
			if err := b.PrepareKey(context.Background(), "k", f.PK); err != nil {
				t.Fatal(err)
			}
			ids := strings.Join(append(b.Bases().IDs(), b.Bases().ProofBufferIDs()...), " ")
			for _, want := range []string{"k:g1.a", "k:g1.b", "k:g1.k", "k:g1.z", "k:g2.b",
				"k:compute_h.a", "k:compute_h.b", "k:compute_h.c", "k:msm.workspace"} {
				if !strings.Contains(ids, want) {
					t.Errorf("after PrepareKey: %s missing from %s", want, ids)
				}
			}
			if mode == backend.HostCopyStaged && b.scratch["k"] == nil {
				t.Error("staged mode: no pinned scalar buffer for the key")
			}
			if first := proveOnFake(t, b, rec, f, "k"); len(first) != 0 {
				var attrs []string
				for _, s := range first {
					attrs = append(attrs, fmt.Sprint(s.Attributes()))
				}
				t.Errorf("the first proof after PrepareKey: %d cuda.malloc spans inside groth16.prove (%s), want none", len(first), strings.Join(attrs, "; "))
			}
			// Another key is not prepared by it.
			if other := proveOnFake(t, b, rec, f, "other"); len(other) == 0 {
				t.Error("a key PrepareKey was not called for allocated nothing: the test cannot see allocations")
			}
		})
	}
}

// PrepareKey refuses what it cannot prepare, in one line, and keeps
// nothing for it.
func TestPrepareKeyRefusesBadArguments(t *testing.T) {
	b, _, _ := fakeProvingBackend(t, nil)
	f := circuitstest.Setup(t, "mulchain", 1<<9, 7)
	for _, c := range []struct {
		name, key string
		pk        any
	}{{"empty key ID", "", f.PK}, {"nil key", "k", nil}} {
		var err error
		if c.pk == nil {
			err = b.PrepareKey(context.Background(), c.key, nil)
		} else {
			err = b.PrepareKey(context.Background(), c.key, f.PK)
		}
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want a one-line error", c.name, err)
		}
	}
	if ids := b.Bases().IDs(); len(ids) != 0 {
		t.Errorf("refused preparations kept base sets %v", ids)
	}
}
