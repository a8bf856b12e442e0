package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestWriteReplacesWholeWithTheMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(path, 0o644, []byte("new contents")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new contents" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if err := Write(path, 0o600, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	assertOnly(t, dir, "f")
}

func TestFailedWriteLeavesTheOldFileAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	killed := errors.New("killed")
	err := Write(path, 0o644, func(w io.Writer) error {
		w.Write(make([]byte, 3<<20)) // past the buffer: bytes reach the temporary file
		return killed
	})
	if !errors.Is(err, killed) {
		t.Fatalf("Write: %v, want the writer's error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("the old file became %d bytes", len(b))
	}
	assertOnly(t, dir, "f")
	if err := WriteBytes(filepath.Join(dir, "missing", "f"), 0o644, nil); err == nil {
		t.Error("a write into a missing directory gave no error")
	}
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(names) || ents[0].Name() != names[0] {
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		t.Errorf("directory holds %v, want %v", got, names)
	}
}

// TestErrorsNameTheDestinationNotTheTemporary: a user gave path; an error
// naming .f.tmp-123 (a file that never was theirs, and is gone) misleads.
func TestErrorsNameTheDestinationNotTheTemporary(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing", "f")
	err := WriteBytes(missing, 0o644, []byte("x"))
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != "open "+missing+": no such file or directory" {
		t.Errorf("write into a missing directory: %v, want open %s: no such file or directory", err, missing)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	err = WriteBytes(sub, 0o644, []byte("x"))
	if !errors.Is(err, syscall.EISDIR) || err.Error() != "write "+sub+": is a directory" {
		t.Errorf("write over a directory: %v, want write %s: is a directory", err, sub)
	}
	if fi, statErr := os.Stat(sub); statErr != nil || !fi.IsDir() {
		t.Errorf("the directory became %v, %v", fi, statErr)
	}
	assertOnly(t, dir, "sub")
}

func TestCheckRefusesWhatWriteWouldAndLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{"", "empty path"},
		{dir, "is a directory"},
		{filepath.Join(dir, "missing", "f"), "cannot create a file in " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{filepath.Join(file, "f"), "cannot create a file in " + file + ": not a directory"},
	} {
		if err := Check(c.path); err == nil || err.Error() != c.want {
			t.Errorf("Check(%q) = %v, want %q", c.path, err, c.want)
		}
	}
	for _, ok := range []string{file, filepath.Join(dir, "new")} {
		if err := Check(ok); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "old" {
		t.Errorf("Check changed the file to %q", b)
	}
	assertOnly(t, dir, "file")
}
