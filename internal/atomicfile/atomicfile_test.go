package atomicfile

import (
	"errors"
	"fmt"
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
	file := oldFile(t, dir, "file")
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

// TestWriteThroughLinksAndSpecialFiles: a rename over a FIFO, a device or
// /dev/stdout replaces that file itself (as root, `cuzk trace --html
// /dev/null` turned /dev/null into an HTML file); those are written in
// place, and a link to a regular file keeps being a link.
func TestWriteThroughLinksAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan []byte)
	go func() {
		b, _ := os.ReadFile(fifo) // opens the read end; EOF when the writer closes
		got <- b
	}()
	if err := WriteBytes(fifo, 0o644, []byte("through the fifo")); err != nil {
		t.Fatalf("write to a FIFO: %v", err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced (%v)", err) // its reader waits for ever
	}
	if b := <-got; string(b) != "through the fifo" {
		t.Errorf("the FIFO's reader got %q", b)
	}

	target, link := oldFile(t, dir, "target"), filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(link, 0o644, []byte("new")); err != nil {
		t.Fatalf("write through a link: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("the link's target holds %q, want new", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced (%v)", err)
	}

	// /proc/self/fd/N, as /dev/stdout is: the open file, appended to.
	out, err := os.OpenFile(filepath.Join(dir, "stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	out.WriteString("printed before\n")
	fdPath := fmt.Sprintf("/proc/self/fd/%d", out.Fd())
	if _, err := os.Lstat(fdPath); err != nil {
		t.Skipf("no %s: %v", fdPath, err)
	}
	if err := Check(fdPath); err != nil {
		t.Errorf("Check(%s): %v", fdPath, err)
	}
	if err := WriteBytes(fdPath, 0o644, []byte("page\n")); err != nil {
		t.Fatalf("write to %s: %v", fdPath, err)
	}
	if b, _ := os.ReadFile(out.Name()); string(b) != "printed before\npage\n" {
		t.Errorf("the file open as fd %d holds %q, want what was printed, then the page", out.Fd(), b)
	}
	assertOnly(t, dir, "fifo", "link", "stdout", "target")
}

// oldFile writes "old" to dir/name and returns its path.
func oldFile(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
