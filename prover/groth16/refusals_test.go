package groth16

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/scs"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/circuits/circuitstest"
)

// squareSecret is circuitstest.Square with both values secret: the same number
// of wires and the same domain, another public split.
type squareSecret struct {
	X, Y frontend.Variable
}

func (c *squareSecret) Define(api frontend.API) error {
	api.AssertIsEqual(api.Mul(c.X, c.X), c.Y)
	return nil
}

func TestAPLONKConstraintSystemIsRefusedAsUnsupportedByName(t *testing.T) {
	ccs := circuitstest.Compile(t, ecc.BLS12_381.ScalarField(), scs.NewBuilder, &circuitstest.Square{})
	// A Groth16 key of the same circuit compiled as an R1CS: the refusal
	// must come from the constraint system, not from a size check.
	_, pk, _ := circuitstest.SetupCircuit(t, &circuitstest.Square{})
	w := circuitstest.NewWitness(t, &circuitstest.Square{X: 3, Y: 9})
	_, err := Prove(context.Background(), ccs, pk, w)
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
	if errors.Is(err, ErrWitnessSize) || !strings.Contains(err.Error(), "SparseR1CS") {
		t.Fatalf("err = %v, want one naming the SparseR1CS", err)
	}
	if _, err := Synthesize(context.Background(), ccs, w); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Synthesize err = %v, want ErrUnsupported", err)
	}
}

func TestAContextCancelledBeforeProveReturnsItsErrorWithoutProving(t *testing.T) {
	f := circuitstest.Setup(t, "mulchain", 1<<10, 42)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	for _, c := range []struct {
		name string
		ctx  func() context.Context
		want error
	}{
		{"cancelled", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, context.Canceled},
		{"deadline passed", func() context.Context {
			ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
			t.Cleanup(cancel)
			return ctx
		}, context.DeadlineExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			proof, err := Prove(c.ctx(), f.CCS, f.PK, f.Witness, WithTracerProvider(tp))
			if !errors.Is(err, c.want) || proof != nil {
				t.Fatalf("Prove = %v, %v; want nil, %v", proof, err, c.want)
			}
		})
	}
	for _, s := range rec.Ended() {
		if s.Name() == semconv.SpanPipelineSynthesize || s.Name() == semconv.SpanGroth16Prove {
			t.Errorf("span %s recorded: the cancelled call did work", s.Name())
		}
	}

	// ProveAssignment consumes its assignment: cancelled, it proves
	// nothing and still gives the buffers back.
	asg, err := Synthesize(context.Background(), f.CCS, f.Witness)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if proof, err := ProveAssignment(ctx, f.PK, asg); !errors.Is(err, context.Canceled) || proof != nil {
		t.Fatalf("ProveAssignment = %v, %v; want nil, context.Canceled", proof, err)
	}
	for _, s := range asg.slots() {
		if *s.b != nil {
			t.Errorf("buffer %s still held", s.name)
		}
	}
}

func TestAKeyOfAnotherShapeIsReportedWithTheNumbersThatDiffer(t *testing.T) {
	compile := func(c frontend.Circuit) *circuitstest.Fixture {
		ccs, pk, _ := circuitstest.SetupCircuit(t, c)
		return &circuitstest.Fixture{CCS: ccs, PK: pk}
	}
	pub, sec := compile(&circuitstest.Square{}), compile(&squareSecret{})
	if pub.CCS.GetNbInternalVariables()+pub.CCS.GetNbPublicVariables()+pub.CCS.GetNbSecretVariables() !=
		sec.CCS.GetNbInternalVariables()+sec.CCS.GetNbPublicVariables()+sec.CCS.GetNbSecretVariables() {
		t.Fatal("test circuits must have the same number of wires")
	}
	w := circuitstest.NewWitness(t, &squareSecret{X: 3, Y: 9})
	_, err := Prove(context.Background(), sec.CCS, pub.PK, w)
	if !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("err = %v, want ErrKeyMismatch", err)
	}
	assertPairsDiffer(t, err.Error(), "public wires: key 2, assignment 1")

	mc, mk := circuitstest.Setup(t, "mulchain", 1<<10, 42), circuitstest.Setup(t, "merkle", 1<<12, 42)
	_, err = Prove(context.Background(), mc.CCS, mk.PK, mc.Witness)
	if !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("err = %v, want ErrKeyMismatch", err)
	}
	assertPairsDiffer(t, err.Error(), "domain: key 4096, assignment 1024")
}

// assertPairsDiffer checks msg contains want and that every "key N,
// assignment M" pair in it has N ≠ M.
func assertPairsDiffer(t *testing.T, msg, want string) {
	t.Helper()
	if !strings.Contains(msg, want) {
		t.Errorf("err = %q, want it to contain %q", msg, want)
	}
	pairs := regexp.MustCompile(`key (\d+), assignment (\d+)`).FindAllStringSubmatch(msg, -1)
	if len(pairs) == 0 {
		t.Fatalf("err = %q names no numbers", msg)
	}
	for _, p := range pairs {
		k, _ := strconv.Atoi(p[1])
		a, _ := strconv.Atoi(p[2])
		if k == a {
			t.Errorf("err = %q reports equal numbers %d and %d", msg, k, a)
		}
	}
}
