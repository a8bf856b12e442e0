// Package keycachetest gives tests of the key and circuit caches (and of
// the commands over them) the cache directories they need to try.
package keycachetest

import (
	"os"
	"path/filepath"
	"testing"
)

// UnwritableDirs returns cache directories nothing can be stored in, by
// how: "below a file", a path under a regular file (it cannot be made a
// directory, for any user), and, for a user other than root (whom a mode
// does not stop), "mode 0555", an existing directory nobody may write
// (made writable again when t ends, so it can be removed).
func UnwritableDirs(t testing.TB) map[string]string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{"below a file": filepath.Join(file, "cache")}
	if os.Geteuid() != 0 {
		ro := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(ro, 0o755) })
		dirs["mode 0555"] = ro
	}
	return dirs
}
