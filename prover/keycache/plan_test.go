package keycache

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	gnarkgroth16 "github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	cs_bls12381 "github.com/consensys/gnark/constraint/bls12-381"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
)

// planRun is one Compile of mulchain 2^10 by a fresh Cache on dir (as a
// new cuzk prove would: the circuit it reads is a new object, without a
// plan in this process): what it returned, its circuit.compile's
// children, its circuit.plan.read, and what it said.
type planRun struct {
	comp     *Compiled
	children []string
	read     sdktrace.ReadOnlySpan // nil when none
	notice   string
}

func compilePlanRun(t *testing.T, dir string, opts ...Option) planRun {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	var notice bytes.Buffer
	c := mustNew(t, dir, append([]Option{WithRevision("rev1"), WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))),
		WithProgress(&notice, false)}, opts...)...)
	comp, err := c.Compile(context.Background(), "mulchain", 1<<10, (&compiler{n: 1 << 10}).compile)
	if err != nil {
		t.Fatal(err)
	}
	run := planRun{comp: comp, notice: notice.String()}
	for _, s := range rec.Ended() {
		if s.Name() == semconv.SpanCircuitPlanRead {
			run.read = s
		}
	}
	_, run.children = compileOutcome(t, rec)
	return run
}

// outcome is the run's cuzk.solver.plan ("" without a circuit.plan.read).
func (r planRun) outcome() string {
	if r.read == nil {
		return ""
	}
	return attrString(r.read, semconv.KeySolverPlan)
}

// proveTraced proves mulchain 2^10 on ccs with keys from a cache on dir
// (with fixed randomness), checks that gnark verifies the proof, and
// returns it with the number of synthesize.plan spans of the prove.
func proveTraced(t *testing.T, dir string, comp *Compiled) (*groth16_bls12381.Proof, int) {
	t.Helper()
	k, err := mustNew(t, dir).LoadHashed(context.Background(), comp.CCS, comp.Hash)
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	w := circuitstest.SampleWitness(t, "mulchain", 1<<10, 1)
	r, s := fr.NewElement(3), fr.NewElement(11)
	proof, err := groth16.Prove(context.Background(), comp.CCS, k.PK, w, groth16.WithRandomness(r, s),
		groth16.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := w.Public()
	if err != nil {
		t.Fatal(err)
	}
	if err := gnarkgroth16.Verify(proof, k.VK, pub); err != nil {
		t.Fatalf("the proof does not verify: %v", err)
	}
	plans := 0
	for _, sp := range rec.Ended() {
		if sp.Name() == semconv.SpanSynthesizePlan {
			plans++
		}
	}
	return proof.(*groth16_bls12381.Proof), plans
}

func sameProof(a, b *groth16_bls12381.Proof) bool {
	return a.Ar.Equal(&b.Ar) && a.Bs.Equal(&b.Bs) && a.Krs.Equal(&b.Krs)
}

const (
	chainMade   = "circuit.cache.read,circuit.frontend,circuit.cache.store,synthesize.plan,circuit.plan.store"
	chainRead   = "circuit.cache.read,circuit.cache.decode,circuit.plan.read"
	chainRemade = "circuit.cache.read,circuit.cache.decode,circuit.plan.read,synthesize.plan,circuit.plan.store"
)

// A compile stores the solver plan beside the circuit (made under
// circuit.compile, then written); the next run, a cache hit, reads it
// (circuit.plan.read, cuzk.solver.plan cache, the file's size) and makes
// none: no synthesize.plan in its compile nor in its proof, which is the
// first run's proof (fixed randomness) and verifies.
func TestTheSolverPlanIsStoredWithTheCircuitAndReadByTheNextRun(t *testing.T) {
	dir := t.TempDir()
	first := compilePlanRun(t, dir)
	if got := strings.Join(first.children, ","); first.comp.CacheHit || got != chainMade {
		t.Fatalf("first run: hit %v, %s; want a compile, %s", first.comp.CacheHit, got, chainMade)
	}
	plan := planPath(first.comp.Path)
	fi, err := os.Stat(plan)
	if err != nil {
		t.Fatalf("no plan beside the stored circuit: %v", err)
	}
	if filepath.Dir(plan) != dir || !strings.HasSuffix(plan, ".plan") || circuitOfPlan(plan) != first.comp.Path {
		t.Errorf("plan %s for circuit %s", plan, first.comp.Path)
	}
	second := compilePlanRun(t, dir)
	if got := strings.Join(second.children, ","); !second.comp.CacheHit || got != chainRead {
		t.Fatalf("second run: hit %v, %s; want a hit, %s", second.comp.CacheHit, got, chainRead)
	}
	var size int64 = -1
	for _, a := range second.read.Attributes() {
		if a.Key == semconv.KeyFileBytes {
			size = a.Value.AsInt64()
		}
	}
	if second.outcome() != PlanCache || size != fi.Size() {
		t.Errorf("circuit.plan.read: %s, %d bytes; want cache, %d", second.outcome(), size, fi.Size())
	}
	if second.notice != "" {
		t.Errorf("a clean hit said %q", second.notice)
	}
	p1, plans1 := proveTraced(t, dir, first.comp)
	p2, plans2 := proveTraced(t, dir, second.comp)
	if plans1 != 0 || plans2 != 0 {
		t.Errorf("synthesize.plan in the proofs: %d after the compile, %d after the read; want none (the plan was there)", plans1, plans2)
	}
	if !sameProof(p1, p2) {
		t.Error("the proof with the plan read differs from the one with the plan made")
	}
}

// A plan file that is missing, damaged or of another circuit fails nothing:
// circuit.plan.read says missing or refused (an event and one line say
// why, for a refusal), the plan is made and stored again (the next run
// reads it), and the proof is right. A directory in the plan's place is
// refused, and the store that fails over it says so.
func TestAPlanFileMissingDamagedOrOfAnotherCircuitIsMadeAgain(t *testing.T) {
	dir := t.TempDir()
	first := compilePlanRun(t, dir)
	plan := planPath(first.comp.Path)
	good, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	// The plan of mulchain 2^11 and that of this circuit under another
	// hash.
	other := compile(t, 1<<11).(*cs_bls12381.R1CS)
	var otherPlan, otherHash bytes.Buffer
	if err := groth16.WritePlan(&otherPlan, other, first.comp.Hash); err != nil {
		t.Fatal(err)
	}
	if err := groth16.WritePlan(&otherHash, first.comp.CCS.(*cs_bls12381.R1CS), "0123abcd"); err != nil {
		t.Fatal(err)
	}
	want, _ := proveTraced(t, dir, first.comp)
	for _, tc := range []struct {
		name, outcome, why string
		damage             func() error
	}{
		{"missing", PlanMissing, "", func() error { return os.Remove(plan) }},
		{"cut short", PlanRefused, "truncated", func() error { return os.WriteFile(plan, good[:len(good)/2], 0o600) }},
		{"a flipped bit", PlanRefused, "checksum mismatch", func() error {
			b := bytes.Clone(good)
			b[len(b)/2] ^= 0x10
			return os.WriteFile(plan, b, 0o600)
		}},
		{"not a plan", PlanRefused, "not a solver plan file", func() error { return os.WriteFile(plan, []byte("this is no plan, but long enough"), 0o600) }},
		{"another circuit's", PlanRefused, "plan of a circuit of", func() error { return os.WriteFile(plan, otherPlan.Bytes(), 0o600) }},
		{"another hash's", PlanRefused, `plan of circuit "0123abcd"`, func() error { return os.WriteFile(plan, otherHash.Bytes(), 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.damage(); err != nil {
				t.Fatal(err)
			}
			run := compilePlanRun(t, dir)
			if got := strings.Join(run.children, ","); !run.comp.CacheHit || got != chainRemade || run.outcome() != tc.outcome {
				t.Fatalf("hit %v, %s, cuzk.solver.plan %q; want a hit, %s, %s", run.comp.CacheHit, got, run.outcome(), chainRemade, tc.outcome)
			}
			events := run.read.Events()
			lines := strings.Split(strings.TrimSpace(run.notice), "\n")
			if tc.why == "" {
				if len(events) != 0 || run.notice != "" {
					t.Errorf("a missing plan said %q (%d events): it is no damage", run.notice, len(events))
				}
			} else {
				if len(events) != 1 || !strings.Contains(events[0].Name, "refused") || !strings.Contains(events[0].Attributes[0].Value.AsString(), tc.why) {
					t.Errorf("circuit.plan.read events %v, want one saying %q", events, tc.why)
				}
				if len(lines) != 1 || !strings.Contains(lines[0], plan) || !strings.Contains(lines[0], tc.why) || !strings.Contains(lines[0], "making it again") ||
					strings.Count(lines[0], "refused") != 1 {
					t.Errorf("notice %q, want one line naming the file and %q", run.notice, tc.why)
				}
			}
			got, plans := proveTraced(t, dir, run.comp)
			if plans != 0 || !sameProof(got, want) {
				t.Errorf("after the plan was made again: %d synthesize.plan in the proof (want 0), same proof %v", plans, sameProof(got, want))
			}
			again := compilePlanRun(t, dir)
			if again.outcome() != PlanCache || strings.Join(again.children, ",") != chainRead {
				t.Errorf("the next run: %s with %v; want the plan stored again read (cache)", again.outcome(), again.children)
			}
		})
	}
	// A directory where the plan goes: refused, made, the store over it
	// fails and says so; the proof is right.
	if err := os.Remove(plan); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(plan, 0o755); err != nil {
		t.Fatal(err)
	}
	run := compilePlanRun(t, dir)
	if run.outcome() != PlanRefused || !strings.Contains(run.notice, "(a directory, not a file)") || !strings.Contains(run.notice, "could not store the solver plan") {
		t.Errorf("a directory as the plan: %s, said %q", run.outcome(), run.notice)
	}
	if got, _ := proveTraced(t, dir, run.comp); !sameProof(got, want) {
		t.Error("the proof differs with a directory as the plan")
	}
	if fi, err := os.Stat(plan); err != nil || !fi.IsDir() {
		t.Errorf("the directory in the plan's place: %v", err)
	}
}

// A cache of ephemeral keys stores no plan: not after a compile, not
// after a hit whose plan is missing (the first synthesis makes it, as
// without a cache); a plan that is there it reads.
func TestEphemeralKeysStoreNoPlan(t *testing.T) {
	dir := t.TempDir()
	eph := compilePlanRun(t, dir, WithEphemeralKeys())
	if got := strings.Join(eph.children, ","); got != "circuit.cache.read,circuit.frontend" || eph.comp.Path != "" {
		t.Errorf("ephemeral compile: %s, path %q", got, eph.comp.Path)
	}
	for _, n := range dirNames(t, dir) {
		if strings.HasSuffix(n, planSuffix) || strings.HasSuffix(n, ".ccs") {
			t.Fatalf("an ephemeral compile left %s", n)
		}
	}
	stored := compilePlanRun(t, dir)
	plan := planPath(stored.comp.Path)
	if hit := compilePlanRun(t, dir, WithEphemeralKeys()); hit.outcome() != PlanCache || strings.Join(hit.children, ",") != chainRead {
		t.Errorf("ephemeral hit with a plan: %s with %v; want it read", hit.outcome(), hit.children)
	}
	if err := os.Remove(plan); err != nil {
		t.Fatal(err)
	}
	hit := compilePlanRun(t, dir, WithEphemeralKeys())
	if hit.outcome() != PlanMissing || strings.Join(hit.children, ",") != chainRead {
		t.Errorf("ephemeral hit without a plan: %s with %v; want missing, nothing made or stored", hit.outcome(), hit.children)
	}
	if _, err := os.Stat(plan); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an ephemeral hit stored a plan: %v", err)
	}
	if _, plans := proveTraced(t, dir, hit.comp); plans != 1 {
		t.Errorf("%d synthesize.plan spans in the proof, want the plan made there (1)", plans)
	}
	// A damaged plan: refused, said, left as it is.
	if err := os.WriteFile(plan, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	hit = compilePlanRun(t, dir, WithEphemeralKeys())
	if b, _ := os.ReadFile(plan); hit.outcome() != PlanRefused || string(b) != "damaged" || !strings.Contains(hit.notice, "ephemeral keys: not stored") {
		t.Errorf("ephemeral hit with a damaged plan: %s, said %q, file %q; want refused, left", hit.outcome(), hit.notice, b)
	}
}
