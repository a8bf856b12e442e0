package server

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/otelcuzk/otelcuzk/buffer"
	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/cupti"
	"github.com/otelcuzk/otelcuzk/internal/depstest"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/otelcuzk/tracefile"
	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
	"github.com/otelcuzk/otelcuzk/prover/backend"
	"github.com/otelcuzk/otelcuzk/prover/circuits"
	"github.com/otelcuzk/otelcuzk/prover/client"
	"github.com/otelcuzk/otelcuzk/prover/engine"
	"github.com/otelcuzk/otelcuzk/prover/gpu/fixedbase"
	"github.com/otelcuzk/otelcuzk/prover/gpu/msm"
	"github.com/otelcuzk/otelcuzk/prover/groth16"
	"github.com/otelcuzk/otelcuzk/prover/journal"
	"github.com/otelcuzk/otelcuzk/prover/keycache"
	"github.com/otelcuzk/otelcuzk/prover/setup"

	"github.com/otelcuzk/otelcuzk/prover"
)

// sentinels are the module's sentinel errors with the gRPC code the daemon
// answers each with, wrapped as callers wrap them.
var sentinels = []struct {
	name string
	err  error
	code codes.Code
}{
	{"engine.ErrQueueFull", engine.ErrQueueFull, codes.ResourceExhausted},
	{"engine.ErrOverBudget", engine.ErrOverBudget, codes.ResourceExhausted},
	{"engine.ErrNoWorker", engine.ErrNoWorker, codes.Unavailable},
	{"engine.ErrEmptyRequestID", engine.ErrEmptyRequestID, codes.InvalidArgument},
	{"engine.ErrInvalidRequest", engine.ErrInvalidRequest, codes.InvalidArgument},
	{"engine.ErrUnknownJob", engine.ErrUnknownJob, codes.NotFound},
	{"engine.ErrCancelled", engine.ErrCancelled, codes.Canceled},
	{"engine.ErrClosed", engine.ErrClosed, codes.Unavailable},
	{"engine.ErrJobFinished", engine.ErrJobFinished, codes.FailedPrecondition},
	{"engine.ErrInterrupted", engine.ErrInterrupted, codes.Aborted},
	{"engine.ErrRequestConflict", engine.ErrRequestConflict, codes.AlreadyExists},
	{"circuits.ErrUnknownCircuit", circuits.ErrUnknownCircuit, codes.NotFound},
	{"circuits.ErrBadConstraints", circuits.ErrBadConstraints, codes.InvalidArgument},
	{"circuits.ErrTooLargeForHost", circuits.ErrTooLargeForHost, codes.ResourceExhausted},
	{"circuits.ErrNotBuiltin", circuits.ErrNotBuiltin, codes.InvalidArgument},
	{"groth16.ErrUnsupported", groth16.ErrUnsupported, codes.InvalidArgument},
	{"groth16.ErrWitnessSize", groth16.ErrWitnessSize, codes.InvalidArgument},
	{"groth16.ErrBadWitness", groth16.ErrBadWitness, codes.InvalidArgument},
	{"groth16.ErrUnsatisfied", groth16.ErrUnsatisfied, codes.InvalidArgument},
	{"groth16.ErrKeyMismatch", groth16.ErrKeyMismatch, codes.InvalidArgument},
	{"groth16.ErrBadPlan", groth16.ErrBadPlan, codes.Internal},
	{"prover.ErrVerifyFailed", prover.ErrVerifyFailed, codes.Internal},
	{"prover.ErrBadCircuitFile", prover.ErrBadCircuitFile, codes.InvalidArgument},
	{"prover.ErrUnknownBackend", prover.ErrUnknownBackend, codes.InvalidArgument},
	{"prover.ErrSynthesisSpent", prover.ErrSynthesisSpent, codes.InvalidArgument},
	{"backend.ErrUnavailable", backend.ErrUnavailable, codes.Unavailable},
	{"backend.ErrNoDeviceMemory", backend.ErrNoDeviceMemory, codes.Unavailable},
	{"backend.ErrDeviceFault", backend.ErrDeviceFault, codes.Internal},
	{"keycache.ErrUnsupported", keycache.ErrUnsupported, codes.InvalidArgument},
	{"keycache.ErrCorruptKey", keycache.ErrCorruptKey, codes.Internal},
	{"msm.ErrTooLarge", msm.ErrTooLarge, codes.ResourceExhausted},
	{"msm.ErrBaseSetEvicted", msm.ErrBaseSetEvicted, codes.Internal},
	{"msm.ErrBaseBudget", msm.ErrBaseBudget, codes.ResourceExhausted},
	{"cudaspans.ErrNoDevice", cudaspans.ErrNoDevice, codes.Unavailable},
	{"cudaspans.ErrOutOfMemory", cudaspans.ErrOutOfMemory, codes.ResourceExhausted},
	{"cudaspans.ErrNoCompiler", cudaspans.ErrNoCompiler, codes.Internal},
	{"cudaspans.ErrSticky", cudaspans.ErrSticky, codes.Internal},
	{"buffer.ErrUnknownReleaseMode", buffer.ErrUnknownReleaseMode, codes.InvalidArgument},
	{"journal.ErrLocked", journal.ErrLocked, codes.Unavailable},
	{"journal.ErrCorrupt", journal.ErrCorrupt, codes.Internal},
	{"cupti.ErrNoCUPTI", cupti.ErrNoCUPTI, codes.InvalidArgument},
	{"cupti.ErrVersion", cupti.ErrVersion, codes.InvalidArgument},
	{"cupti.ErrInUse", cupti.ErrInUse, codes.Unavailable},
	{"cupti.ErrStart", cupti.ErrStart, codes.Internal},
	{"tracefile.ErrTraceNotFound", tracefile.ErrTraceNotFound, codes.NotFound},
	{"tracefile.ErrMismatch", tracefile.ErrMismatch, codes.InvalidArgument},
	{"tracefile.ErrMalformed", tracefile.ErrMalformed, codes.Internal},
	{"tracefile.ErrLineTooLong", tracefile.ErrLineTooLong, codes.InvalidArgument},
	{"otelcuzk.ErrSpansDropped", otelcuzk.ErrSpansDropped, codes.Unavailable},
	{"client.ErrSeveralDaemons", client.ErrSeveralDaemons, codes.InvalidArgument},
	{"client.ErrNoResult", client.ErrNoResult, codes.InvalidArgument},
	{"setup.ErrUnsupported", setup.ErrUnsupported, codes.InvalidArgument},
	{"setup.ErrToxicWaste", setup.ErrToxicWaste, codes.InvalidArgument},
	{"fixedbase.ErrClosed", fixedbase.ErrClosed, codes.Unavailable},
}

// TestEverySentinelHasAnErrorTypeAndItsCode: every sentinel of the module
// declares an error.type other than _OTHER, and the daemon answers it,
// wrapped, with the intended code: the code of its error.type.
func TestEverySentinelHasAnErrorTypeAndItsCode(t *testing.T) {
	for _, s := range sentinels {
		typ := semconv.ErrorType(s.err)
		if typ == semconv.ErrorTypeOther || typ == "" {
			t.Errorf("%s: error.type %q", s.name, typ)
		}
		wrapped := fmt.Errorf("job 7: %w", s.err)
		if got := Code(wrapped); got != s.code {
			t.Errorf("%s (error.type %s): Code = %v, want %v", s.name, typ, got, s.code)
		}
		if got := cuzkv1.CodeOf(typ); got != s.code {
			t.Errorf("%s: CodeOf(%s) = %v, Code %v: not one table", s.name, typ, got, s.code)
		}
	}
}

// TestSentinelsListsEverySentinelOfTheModule: the table above holds every
// package-level Err* variable of the module's non-test files (e2e, bench
// and the examples aside), so a new sentinel is given a code here.
func TestSentinelsListsEverySentinelOfTheModule(t *testing.T) {
	listed := map[string]bool{}
	for _, s := range sentinels {
		listed[s.name] = true
	}
	for _, p := range depstest.GoFiles(t, "../..") {
		rel := strings.TrimPrefix(p, "../../")
		if strings.HasSuffix(p, "_test.go") || strings.HasPrefix(rel, "e2e/") || strings.HasPrefix(rel, "bench/") || strings.HasPrefix(rel, "examples/") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for i, n := range spec.(*ast.ValueSpec).Names {
					if !strings.HasPrefix(n.Name, "Err") || !n.IsExported() || i >= len(spec.(*ast.ValueSpec).Values) {
						continue
					}
					if alias, ok := spec.(*ast.ValueSpec).Values[i].(*ast.Ident); ok && strings.HasPrefix(alias.Name, "Err") {
						continue // a second name of a listed sentinel (deprecated)
					}
					if sel, ok := spec.(*ast.ValueSpec).Values[i].(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Err") {
						continue // another package's sentinel under this package's name
					}
					if name := f.Name.Name + "." + n.Name; !listed[name] {
						t.Errorf("%s: sentinel %s is not in the sentinels table", rel, name)
					}
				}
			}
		}
	}
}

// TestCodeOfEveryErrorTypeAndBack: every value of the vocabulary has a
// row in the table, and a code read back from another daemon records the
// general word of its code.
func TestCodeOfEveryErrorTypeAndBack(t *testing.T) {
	words := []string{
		semconv.ErrorTypeCanceled, semconv.ErrorTypeDeadlineExceeded, semconv.ErrorTypeInvalidRequest,
		semconv.ErrorTypeNotFound, semconv.ErrorTypeConflict, semconv.ErrorTypeFinished,
		semconv.ErrorTypeInterrupted, semconv.ErrorTypeUnavailable, semconv.ErrorTypeBadWitness,
		semconv.ErrorTypeUnsatisfied, semconv.ErrorTypeUnsupported, semconv.ErrorTypeKeyMismatch,
		semconv.ErrorTypeVerifyFailed, semconv.ErrorTypeQueueFull, semconv.ErrorTypeOverBudget,
		semconv.ErrorTypeOutOfMemory, semconv.ErrorTypeNoDevice, semconv.ErrorTypeDeviceFault,
		semconv.ErrorTypeEvicted, semconv.ErrorTypeCUDA, semconv.ErrorTypeIO, semconv.ErrorTypeCorrupt,
		semconv.ErrorTypePanic, semconv.ErrorTypeOther,
	}
	for _, w := range words {
		if semconv.ErrorType(semconv.NewError(w, "x")) != w {
			t.Fatalf("%s is not a word of the vocabulary", w)
		}
		c := cuzkv1.CodeOf(w)
		if c == codes.OK || c == codes.Unknown {
			t.Errorf("CodeOf(%s) = %v", w, c)
		}
		if back := cuzkv1.CodeOf(cuzkv1.ErrorTypeOf(c)); back != c {
			t.Errorf("ErrorTypeOf(%v) = %s, whose code is %v", c, cuzkv1.ErrorTypeOf(c), back)
		}
	}
	for c, want := range map[codes.Code]string{
		codes.OK: "", codes.InvalidArgument: semconv.ErrorTypeInvalidRequest,
		codes.Unavailable: semconv.ErrorTypeUnavailable, codes.Internal: semconv.ErrorTypeOther,
		codes.Unknown: semconv.ErrorTypeOther, codes.NotFound: semconv.ErrorTypeNotFound,
	} {
		if got := cuzkv1.ErrorTypeOf(c); got != want {
			t.Errorf("ErrorTypeOf(%v) = %q, want %q", c, got, want)
		}
	}
	if cuzkv1.CodeOf("") != codes.OK || cuzkv1.CodeOf("cancelled") != codes.Internal {
		t.Error("CodeOf of no error or a word outside the vocabulary")
	}
}

// TestCodeOfOtherErrors: nil is OK, the outermost declared kind decides,
// an undeclared error is INTERNAL, and an upstream's status keeps its code.
func TestCodeOfOtherErrors(t *testing.T) {
	for err, want := range map[error]codes.Code{
		nil: codes.OK,
		fmt.Errorf("%w: %w", engine.ErrCancelled, engine.ErrClosed):                      codes.Canceled,
		context.DeadlineExceeded:                                                         codes.DeadlineExceeded,
		fmt.Errorf("wait: %w", context.Canceled):                                         codes.Canceled,
		errors.New("device lost"):                                                        codes.Internal,
		fmt.Errorf("upstream 10.0.0.1: %w", status.Error(codes.NotFound, "no job")):      codes.NotFound,
		fmt.Errorf("%w: %w", groth16.ErrBadWitness, status.Error(codes.Unavailable, "")): codes.InvalidArgument,
	} {
		if got := Code(err); got != want {
			t.Errorf("Code(%v) = %v, want %v", err, got, want)
		}
	}
}

// TestTheTableIsTheOnlyMapping: outside prover/api/cuzkv1/codes.go no
// non-test file of the module maps errors to gRPC codes or back by
// itself: no case clause or map entry that names an error.type value or a
// sentinel beside a codes.* value.
func TestTheTableIsTheOnlyMapping(t *testing.T) {
	for _, p := range depstest.GoFiles(t, "../..") {
		rel := strings.TrimPrefix(p, "../../")
		if strings.HasSuffix(p, "_test.go") || rel == "prover/api/cuzkv1/codes.go" || strings.HasSuffix(p, ".pb.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var keys []ast.Expr
			var body []ast.Node
			switch x := n.(type) {
			case *ast.CaseClause:
				keys = x.List
				for _, s := range x.Body {
					body = append(body, s)
				}
			case *ast.KeyValueExpr:
				keys = []ast.Expr{x.Key}
				body = []ast.Node{x.Value}
			default:
				return true
			}
			errSide, codeSide := false, false
			for _, k := range keys {
				ast.Inspect(k, func(m ast.Node) bool {
					if id, ok := m.(*ast.Ident); ok && (strings.HasPrefix(id.Name, "ErrorType") || strings.HasPrefix(id.Name, "Err")) {
						errSide = true
					}
					return true
				})
			}
			for _, b := range body {
				ast.Inspect(b, func(m ast.Node) bool {
					if sel, ok := m.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "codes" || x.Name == "grpccodes") {
							codeSide = true
						}
					}
					return true
				})
			}
			if errSide && codeSide {
				t.Errorf("%s: maps an error to a gRPC code beside the table (cuzkv1.CodeOf)", fset.Position(n.Pos()))
			}
			return true
		})
	}
}
