package circuits

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fileCircuit writes empty stand-ins for a circuit's files (RegisterFiles
// only checks that they exist) and returns a name fresh in this process
// (the registry is per process, and go test -count reruns).
func fileCircuit(t *testing.T, prefix string) (string, Files) {
	t.Helper()
	dir := t.TempDir()
	f := Files{CS: filepath.Join(dir, "c.r1cs"), PK: filepath.Join(dir, "c.pk"), VK: filepath.Join(dir, "c.vk")}
	for _, p := range []string{f.CS, f.PK, f.VK} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()), f
}

func TestFileCircuitsShareTheRegistryWithTheBuiltins(t *testing.T) {
	name, f := fileCircuit(t, "cube")
	if err := RegisterFiles(name, f); err != nil {
		t.Fatal(err)
	}
	s, err := Lookup(name)
	if err != nil || s.Files == nil || *s.Files != f || s.Build != nil {
		t.Fatalf("Lookup(%s) = %+v, %v; want its files", name, s, err)
	}
	if names := Names(); !slices.Contains(names, name) || !slices.Contains(names, "mulchain") {
		t.Errorf("Names() = %v, want the file circuit beside the built-ins", names)
	}
	if _, err := Build(name, 16); !errors.Is(err, ErrNotBuiltin) {
		t.Errorf("Build of a file circuit: %v, want ErrNotBuiltin", err)
	}
	if err := checkMemory(name, 16, 1<<40); !errors.Is(err, ErrNotBuiltin) {
		t.Errorf("checkMemory of a file circuit: %v, want ErrNotBuiltin", err)
	}
	if s, err := LookupBuiltin("mulchain"); err != nil || s.Build == nil {
		t.Errorf("LookupBuiltin(mulchain) = %+v, %v", s, err)
	}
	if err := RegisterFiles(name, f); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("second registration of %s: %v, want already registered", name, err)
	}
	if err := RegisterFiles("merkle", f); err == nil || !strings.Contains(err.Error(), "built-in") {
		t.Errorf("registration over merkle: %v, want refused as a built-in's name", err)
	}
	missing := filepath.Join(t.TempDir(), "none")
	if err := RegisterFiles("merkle", Files{CS: missing, PK: missing}); err == nil || !strings.Contains(err.Error(), "built-in") {
		t.Errorf("registration over merkle with missing files: %v, want the name clash reported first", err)
	}
	if s, _ := Lookup("merkle"); s.Files != nil || s.Build == nil {
		t.Errorf("merkle replaced: %+v", s)
	}
}

func TestRegisterFilesRefusesBadNamesPathsAndMissingFiles(t *testing.T) {
	_, f := fileCircuit(t, "x")
	missing := filepath.Join(t.TempDir(), "none")
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		f    Files
		says string
	}{
		{"fresh-empty-cs", Files{PK: f.PK}, "empty R1CS or proving key path"},
		{"fresh-empty-pk", Files{CS: f.CS}, "empty R1CS or proving key path"},
		{"fresh-missing-cs", Files{CS: missing, PK: f.PK}, "no such file"},
		{"fresh-missing-vk", Files{CS: f.CS, PK: f.PK, VK: missing}, "no such file"},
		{"fresh-dir-cs", Files{CS: dir, PK: f.PK}, dir + " is a directory"},
		{"tab\tname", f, "U+0009"},
		{"", f, "empty name"},
		{"\xff", f, "not valid UTF-8"},
	} {
		err := RegisterFiles(c.name, c.f)
		if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("RegisterFiles(%q, %+v) = %v, want one line saying %q", c.name, c.f, err, c.says)
		}
		if _, err := Lookup(c.name); !errors.Is(err, ErrUnknownCircuit) {
			t.Errorf("%q registered after a refusal", c.name)
		}
	}
}

func TestConcurrentRegistrationsOfOneNameLetOneIn(t *testing.T) {
	name, f := fileCircuit(t, "race")
	var ok atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if RegisterFiles(name, f) == nil {
				ok.Add(1)
			}
			_, _ = Lookup(name)
			_ = Names()
		})
	}
	wg.Wait()
	if ok.Load() != 1 {
		t.Errorf("%d of 8 registrations of one name succeeded, want 1", ok.Load())
	}
}
