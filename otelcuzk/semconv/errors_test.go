package semconv

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.opentelemetry.io/otel/codes"

	"github.com/otelcuzk/otelcuzk/internal/spantest"
)

// vocabularyInNamesGo parses names.go: the ErrorType* constants and their
// values, so the tests check the set as it is written there.
func vocabularyInNamesGo(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "ErrorType") {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			t.Fatalf("%s is not a string literal", vs.Names[0].Name)
		}
		v, _ := strconv.Unquote(lit.Value)
		consts[vs.Names[0].Name] = v
		return true
	})
	return consts
}

type foreignError struct{ code []int } // not comparable, as some libraries' errors

func (foreignError) Error() string { return "foreign" }

type wordError string // declares its error.type by method

func (e wordError) Error() string     { return "word " + string(e) }
func (e wordError) ErrorType() string { return string(e) }

// errorTypeCases reach every value of the vocabulary, most of them
// wrapped, some through several layers or errors.Join.
func errorTypeCases() []struct {
	err  error
	want string
} {
	oom := NewError(ErrorTypeOutOfMemory, "CUDA out of memory")
	fault := NewError(ErrorTypeDeviceFault, "device fault")
	return []struct {
		err  error
		want string
	}{
		{fmt.Errorf("wait: %w", context.Canceled), ErrorTypeCanceled},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", context.DeadlineExceeded)), ErrorTypeDeadlineExceeded},
		{fmt.Errorf("x: %w", NewError(ErrorTypeInvalidRequest, "engine: invalid request")), ErrorTypeInvalidRequest},
		{NewError(ErrorTypeBadWitness, "bad witness"), ErrorTypeBadWitness},
		{errors.Join(errors.New("plain"), NewError(ErrorTypeUnsatisfied, "unsat")), ErrorTypeUnsatisfied},
		{fmt.Errorf("op: %w", errors.ErrUnsupported), ErrorTypeUnsupported},
		{NewError(ErrorTypeKeyMismatch, "k"), ErrorTypeKeyMismatch},
		{NewError(ErrorTypeVerifyFailed, "v"), ErrorTypeVerifyFailed},
		{fmt.Errorf("submit: %w", NewError(ErrorTypeQueueFull, "q")), ErrorTypeQueueFull},
		{NewError(ErrorTypeOverBudget, "b"), ErrorTypeOverBudget},
		{fmt.Errorf("msm: %w", oom), ErrorTypeOutOfMemory},
		{fmt.Errorf("%w: %v", NewError(ErrorTypeNoDevice, "no CUDA device"), "libcuda.so.1 missing"), ErrorTypeNoDevice},
		// The outermost declared kind wins over what it wraps.
		{fmt.Errorf("%w on cuda:0: %w", fault, oom), ErrorTypeDeviceFault},
		{NewError(ErrorTypeEvicted, "e"), ErrorTypeEvicted},
		{fmt.Errorf("await: %w", NewError(ErrorTypeNotFound, "unknown job")), ErrorTypeNotFound},
		{NewError(ErrorTypeConflict, "id reused"), ErrorTypeConflict},
		{NewError(ErrorTypeFinished, "finished"), ErrorTypeFinished},
		{fmt.Errorf("job: %w", NewError(ErrorTypeInterrupted, "restart")), ErrorTypeInterrupted},
		{errors.Join(NewError(ErrorTypeUnavailable, "shut down"), context.Canceled), ErrorTypeUnavailable},
		{fmt.Errorf("launch: %w", wordError(ErrorTypeCUDA)), ErrorTypeCUDA},
		{fmt.Errorf("read key: %w", &fs.PathError{Op: "open", Path: "/k", Err: fs.ErrNotExist}), ErrorTypeIO},
		{os.NewSyscallError("munmap", syscall.EINVAL), ErrorTypeIO},
		{fmt.Errorf("munmap: %w", syscall.EINVAL), ErrorTypeIO},
		{&os.LinkError{Op: "rename", Old: "a", New: "b", Err: syscall.ENOENT}, ErrorTypeIO},
		{fmt.Errorf("decode: %w", io.ErrUnexpectedEOF), ErrorTypeIO},
		{NewError(ErrorTypeCorrupt, "checksum mismatch"), ErrorTypeCorrupt},
		{&typedError{typ: ErrorTypePanic, text: "panic: x"}, ErrorTypePanic},
		{errors.New("something else"), ErrorTypeOther},
		{fmt.Errorf("a: %w", foreignError{}), ErrorTypeOther},
		// A method's word outside the vocabulary is ignored: the walk goes on.
		{fmt.Errorf("%w: %w", wordError("*fmt.wrapError"), context.Canceled), ErrorTypeCanceled},
		{wordError("CUDA_ERROR_OUT_OF_MEMORY"), ErrorTypeOther},
	}
}

func TestErrorTypeClassifiesEveryValueOfTheVocabulary(t *testing.T) {
	reached := map[string]bool{}
	for _, tc := range errorTypeCases() {
		got := ErrorType(tc.err)
		if got != tc.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
		reached[got] = true
	}
	for name, v := range vocabularyInNamesGo(t) {
		if !reached[v] {
			t.Errorf("%s (%q) is reached by no case", name, v)
		}
	}
}

func TestErrorTypeVocabularyIsTheConstantsOfNamesGo(t *testing.T) {
	consts := vocabularyInNamesGo(t)
	seen := map[string]string{}
	for name, v := range consts {
		if !errorTypes[v] {
			t.Errorf("%s = %q is missing from errorTypes", name, v)
		}
		if other, dup := seen[v]; dup {
			t.Errorf("%s and %s are both %q", name, other, v)
		}
		seen[v] = name
		// Low-cardinality words: lower case and underscores (the
		// conventions' _OTHER aside), nothing a Go type name has.
		if v != "_OTHER" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyz_") != "" {
			t.Errorf("%s = %q is not a lower-case word", name, v)
		}
	}
	if len(errorTypes) != len(consts) {
		t.Errorf("errorTypes has %d values, names.go %d constants", len(errorTypes), len(consts))
	}
}

func TestErrorTypeNeverNamesAGoType(t *testing.T) {
	type local struct{ error }
	for _, err := range []error{
		local{errors.New("x")},
		fmt.Errorf("a: %w", local{errors.New("x")}),
		fmt.Errorf("two: %w and %w", local{errors.New("x")}, errors.New("y")),
		errors.Join(foreignError{}, foreignError{code: []int{1}}),
		&fs.PathError{Op: "open", Path: "p", Err: local{}},
		wordError("*engine.os_PathError"),
		fmt.Errorf("plain %v", 1),
	} {
		got := ErrorType(err)
		if !errorTypes[got] || strings.ContainsAny(got, "*.") {
			t.Errorf("ErrorType(%v) = %q, not a value of the vocabulary", err, got)
		}
	}
}

func TestSetErrorRecordsEventStatusAndErrorType(t *testing.T) {
	tp, mem := spantest.NewMemory()
	_, span := tp.Tracer("t").Start(context.Background(), "op")
	err := fmt.Errorf("keys.read: %w", &fs.PathError{Op: "open", Path: "/k", Err: fs.ErrPermission})
	SetError(span, err)
	span.End()
	s := mem.GetSpans()[0]
	if s.Status.Code != codes.Error || s.Status.Description != err.Error() {
		t.Errorf("status = %+v", s.Status)
	}
	if got := spantest.StubAttrs(s)[KeyErrorType].AsString(); got != ErrorTypeIO {
		t.Errorf("error.type = %q, want %q", got, ErrorTypeIO)
	}
	if len(s.Events) != 1 || s.Events[0].Name != "exception" {
		t.Fatalf("events = %v, want one exception", s.Events)
	}
	for _, kv := range s.Events[0].Attributes {
		if kv.Key == "exception.message" && kv.Value.AsString() != err.Error() {
			t.Errorf("exception.message = %q", kv.Value.AsString())
		}
	}
}

func TestSetErrorWithNilRecordsNothing(t *testing.T) {
	tp, mem := spantest.NewMemory()
	_, span := tp.Tracer("t").Start(context.Background(), "op")
	SetError(span, nil)
	span.End()
	s := mem.GetSpans()[0]
	if s.Status.Code != codes.Unset || len(s.Events) != 0 || len(s.Attributes) != 0 {
		t.Errorf("a nil error left status %v, events %v, attributes %v", s.Status, s.Events, s.Attributes)
	}
	if got := ErrorType(nil); got != "" {
		t.Errorf("ErrorType(nil) = %q", got)
	}
}

func TestNewErrorIsASentinelWithItsText(t *testing.T) {
	a, b := NewError(ErrorTypeBadWitness, "bad witness"), NewError(ErrorTypeBadWitness, "bad witness")
	if a.Error() != "bad witness" {
		t.Errorf("text %q", a.Error())
	}
	if errors.Is(a, b) || !errors.Is(fmt.Errorf("w: %w", a), a) {
		t.Error("NewError's sentinels do not compare by identity")
	}
}

func TestNewErrorRefusesAWordOutsideTheVocabulary(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "cancelled") {
			t.Errorf("recovered %v, want a panic naming the word", r)
		}
	}()
	_ = NewError("cancelled", "x")
}

func TestDesignDocListsTheVocabulary(t *testing.T) {
	doc, err := os.ReadFile("../../docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range vocabularyInNamesGo(t) {
		if !strings.Contains(string(doc), "`"+v+"`") {
			t.Errorf("docs/DESIGN.md does not list %s (`%s`)", name, v)
		}
	}
}
