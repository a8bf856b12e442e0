// Package atomicfile writes a file through a temporary file beside it,
// synced and renamed over it: a reader sees the old file or the whole new
// one, and a failed write leaves neither a partial file nor the temporary
// one. The key cache, the kernel cache and cuzk's proof and HTML files use
// it. Its errors name the destination, never the temporary file (a name
// the caller never gave).
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Write writes path with mode perm from what write writes (buffered by
// 1 MiB). The directory must exist; on an error path is left as it was.
// An error of the file system is an *os.PathError naming path (a
// directory at path: syscall.EISDIR); write's own error is returned as is.
func Write(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return &os.PathError{Op: "write", Path: path, Err: syscall.EISDIR}
	}
	tmp, err := createTemp(path)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = renamed(err, tmp.Name(), path)
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// WriteBytes is Write of data.
func WriteBytes(path string, perm os.FileMode, data []byte) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Check reports whether Write could create path, before the work whose
// result goes there, leaving nothing behind: an error for an empty path,
// a directory at path, or a directory a file cannot be created in (missing,
// not a directory, not writable). Its text does not repeat path, so a
// caller prefixes it with the flag and path it came from.
func Check(path string) error {
	if path == "" {
		return errors.New("empty path")
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return errors.New("is a directory")
	}
	probe, err := createTemp(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("cannot create a file in %s: %w", filepath.Dir(path), pe.Err)
		}
		return err
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// createTemp creates the temporary file beside path; an error names path.
func createTemp(path string) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, renamed(err, "", path)
	}
	return f, nil
}

// renamed returns err with the temporary file's name (or, for tmp "", any
// path) replaced by path, for the file system's own errors (not wrapped);
// others as they are.
func renamed(err error, tmp, path string) error {
	switch e := err.(type) {
	case *os.PathError:
		if tmp == "" || e.Path == tmp {
			return &os.PathError{Op: e.Op, Path: path, Err: e.Err}
		}
	case *os.LinkError:
		if e.Old == tmp {
			return &os.PathError{Op: e.Op, Path: path, Err: e.Err}
		}
	}
	return err
}
