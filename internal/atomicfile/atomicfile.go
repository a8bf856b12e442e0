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
	"strings"
	"syscall"
)

// Write writes path with mode perm from what write writes (buffered by
// 1 MiB). The directory must exist; on an error path is left as it was
// (but for a path written in place, below).
// An error of the file system is an *os.PathError naming path (a
// directory at path: syscall.EISDIR); write's own error is returned as is.
//
// A path that is no regular file (a device such as /dev/null, a FIFO) or
// is a link under /dev or /proc (/dev/stdout) is written in place,
// appended: a rename would replace the device or the link itself (as root,
// /dev/null became an HTML file). Another link to a regular file is
// resolved: the file it names is replaced and the link stays.
func Write(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	dest, inPlace, err := destination(path)
	if err != nil {
		return err
	}
	if inPlace {
		return writeInPlace(path, write)
	}
	tmp, err := createTemp(dest)
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
	return os.Rename(tmp.Name(), dest)
}

// destination returns the file Write replaces for path (path, or the
// regular file a link at path names), or inPlace for a path that is to be
// written in place (see Write); an error for a directory at path.
func destination(path string) (dest string, inPlace bool, err error) {
	fi, statErr := os.Stat(path) // through links
	if statErr == nil && fi.IsDir() {
		return "", false, &os.PathError{Op: "write", Path: path, Err: syscall.EISDIR}
	}
	if statErr != nil {
		return path, false, nil
	}
	if !fi.Mode().IsRegular() || fdLink(path) {
		return path, true, nil
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real, false, nil
	}
	return path, false, nil
}

// fdLink reports whether path is a link under /dev or /proc, such as
// /dev/stdout or /proc/self/fd/1: it names an open file of the process
// (a shell's redirect), written through, not replaced.
func fdLink(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil || !strings.HasPrefix(abs, "/dev/") && !strings.HasPrefix(abs, "/proc/") {
		return false
	}
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

// writeInPlace writes to path, which exists, what write writes; appended,
// so a /dev/stdout redirected to a file keeps what the process printed
// before.
func writeInPlace(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
	dest, inPlace, err := destination(path)
	if err != nil {
		return errors.New("is a directory")
	}
	if inPlace {
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // no O_TRUNC: nothing is written yet
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				return fmt.Errorf("cannot write it: %w", pe.Err)
			}
			return err
		}
		return f.Close()
	}
	probe, err := createTemp(dest)
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
