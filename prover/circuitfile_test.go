package prover

import (
	"errors"
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/prover/circuits"
)

func TestParseCircuitFileReadsNameAndPathsAndRefusesBadSpecs(t *testing.T) {
	for _, c := range []struct {
		spec string
		want CircuitFile
	}{
		{"cube:/k/cube.r1cs:/k/cube.pk", CircuitFile{Name: "cube", CS: "/k/cube.r1cs", PK: "/k/cube.pk"}},
		{"cube:a.r1cs:a.pk:a.vk", CircuitFile{Name: "cube", CS: "a.r1cs", PK: "a.pk", VK: "a.vk"}},
		{"π-é:a:b", CircuitFile{Name: "π-é", CS: "a", PK: "b"}},
	} {
		got, err := ParseCircuitFile(c.spec)
		if err != nil || got != c.want {
			t.Errorf("ParseCircuitFile(%q) = %+v, %v; want %+v", c.spec, got, err, c.want)
		}
		if got.String() != c.spec {
			t.Errorf("String() = %q, want %q", got.String(), c.spec)
		}
	}
	for _, c := range []struct{ spec, says string }{
		{"", "1 parts"},
		{"onlyname", "1 parts"},
		{"a:b", "2 parts"},
		{"a:b:c:d:e", "5 parts"},
		{":a:b", "empty name"},
		{"a::b", "empty R1CS or PK path"},
		{"a:b:", "empty R1CS or PK path"},
		{"a:b:c:", "empty VK path"},
		{"my circuit:a:b", "U+0020"},
		{"x\ny:a:b", "U+000A"},
		{"\xff:a:b", "not valid UTF-8"},
	} {
		_, err := ParseCircuitFile(c.spec)
		if !errors.Is(err, ErrBadCircuitFile) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParseCircuitFile(%q) err = %v, want ErrBadCircuitFile saying %q", c.spec, err, c.says)
		}
	}
}

// FuzzParseCircuitFile checks, for any --circuit-file value, that the parser
// does not panic, that what it accepts prints back to the same value with a
// name and paths a registration can use, and that what it refuses gets one
// line wrapping ErrBadCircuitFile.
func FuzzParseCircuitFile(f *testing.F) {
	for _, s := range []string{"cube:a.r1cs:a.pk", "cube:a:b:c", "a::b", ":a:b", "a:b:c:", "x y:a:b", "a:b:c:d:e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := ParseCircuitFile(spec)
		if err != nil {
			if !errors.Is(err, ErrBadCircuitFile) {
				t.Fatalf("err = %v, does not wrap ErrBadCircuitFile", err)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("err spans lines: %q", err.Error())
			}
			return
		}
		if got.String() != spec {
			t.Fatalf("accepted %q, prints back as %q", spec, got.String())
		}
		if circuits.CheckName(got.Name) != nil || got.CS == "" || got.PK == "" {
			t.Fatalf("accepted %q with an unusable part: %+v", spec, got)
		}
		for _, p := range []string{got.Name, got.CS, got.PK, got.VK} {
			if strings.Contains(p, ":") {
				t.Fatalf("part %q holds the separator", p)
			}
		}
		again, err := ParseCircuitFile(got.String())
		if err != nil || again != got {
			t.Fatalf("reparse of %q = %+v, %v", got.String(), again, err)
		}
	})
}
