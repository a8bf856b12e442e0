// Package inject holds libcuzkinject.so, the CUDA injection library of
// `cuzk gpu-trace`, built from C (csrc/inject.c and ../cz_core.c) by
// build.sh and embedded here, so a GPU host needs no compiler: gpu-trace
// writes it to a cache file and names it in CUDA_INJECTION64_PATH. It is
// C, not Go, because a Go c-shared library loaded into a Go program would
// be a second Go runtime in one process.
package inject

//go:generate sh build.sh

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// Library is the ELF shared object (linux/amd64, glibc 2.34 or later).
//
//go:embed libcuzkinject.so
var Library []byte

// Sources is the SHA-256 of the C sources Library was built from.
//
//go:embed libcuzkinject.sources
var Sources string

// WriteTo writes Library into dir (created if needed) under a name
// carrying its hash, unless a file of that name is already there, and
// returns the path. Writing goes through a temporary file and a rename,
// so concurrent callers never see half a library.
func WriteTo(dir string) (string, error) {
	sum := sha256.Sum256(Library)
	path := filepath.Join(dir, "libcuzkinject-"+hex.EncodeToString(sum[:6])+".so")
	if b, err := os.ReadFile(path); err == nil && sha256.Sum256(b) == sum {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("inject: %w", err)
	}
	f, err := os.CreateTemp(dir, ".libcuzkinject-*")
	if err != nil {
		return "", fmt.Errorf("inject: %w", err)
	}
	_, werr := f.Write(Library)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("inject: writing %s: %v", f.Name(), firstErr(werr, cerr))
	}
	if err := os.Chmod(f.Name(), 0o755); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("inject: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("inject: %w", err)
	}
	return path, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
