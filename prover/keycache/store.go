package keycache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// A cache directory that cannot take a file (not writable by this user, a
// read-only file system, a path that cannot be made a directory) costs the
// next run a compile and a setup, never this run's proof: what was made
// is used from memory, and one line on the progress writer says where and
// why nothing is stored. An error comes only where the keys cannot be made
// at all.

// store writes path as a checked file (writeChecked) and returns its
// error; what names the content ("keys", "compiled circuit") in the line
// said when it fails. Once the directory is found unwritable, later
// stores fail at once with the same reason.
func (c *Cache) store(what, path string, write func(io.Writer) error) error {
	return c.storeWith(writeChecked, what, path, write)
}

// storeWith is store writing path with writeFile (writeChecked, or
// writeAtomic for a file that carries its own checksum).
func (c *Cache) storeWith(writeFile func(string, func(io.Writer) error) error, what, path string, write func(io.Writer) error) error {
	if err := c.unwritableErr(); err != nil {
		c.sayUnwritable(err, what)
		return err
	}
	err := writeFile(path, write)
	if err == nil {
		return nil
	}
	if derr := Writable(c.dir); derr != nil {
		c.storeMu.Lock()
		c.unwritable = derr
		c.storeMu.Unlock()
		c.sayUnwritable(derr, what)
		return derr
	}
	// The directory takes files, this one did not (a directory in its
	// place, a full disk): said for each file.
	if c.progress != nil {
		fmt.Fprintf(c.progress, "keycache: could not store the %s in %s (%s); used from memory for this run only\n", what, path, reasonAt(err, path))
	}
	return err
}

// storable reports whether files may be stored: false once the directory
// was found unwritable (New, or a store), when no lock is worth taking.
func (c *Cache) storable() bool { return c.unwritableErr() == nil }

func (c *Cache) unwritableErr() error {
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	return c.unwritable
}

// sayUnwritable says once per Cache where and why nothing is stored
// (unless WithoutUnwritableNotice), naming what, the first thing not
// stored: a run whose circuit and keys were read from the cache stores at
// most its solver plan, and the line must not say the keys were made.
func (c *Cache) sayUnwritable(err error, what string) {
	c.storeMu.Lock()
	said := c.saidUnwritable
	c.saidUnwritable = true
	c.storeMu.Unlock()
	if said || c.progress == nil {
		return
	}
	fmt.Fprintf(c.progress, "keycache: nothing can be stored in the cache directory %s (%s): what this run makes (first the %s) is used from memory and not kept (set --cache-dir or %s to a writable directory)\n",
		c.dir, reason(err), what, EnvCacheDir)
}

// reason is err without the path its *fs.PathError names (the line says
// the directory): "permission denied", "read-only file system", "not a
// directory".
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Writable returns nil when a file can be created in dir (one is, then
// removed), else why not: the directory is missing or not one, or this
// user may not write it (an *fs.PathError naming a file in dir).
func Writable(dir string) error {
	f, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Writable returns nil when the cache can store files in its directory,
// else an error saying so on one line: "the cache directory DIR cannot
// store files (REASON)", wrapping the file system's error (Writable's, or
// New's when it could not make the directory).
func (c *Cache) Writable() error {
	err := c.unwritableErr()
	if err == nil {
		err = Writable(c.dir)
	}
	if err == nil {
		return nil
	}
	return &unwritableError{dir: c.dir, err: err}
}

// CheckDir reports, before a Cache is opened, whether a Cache of dir (""
// means DefaultDir) can store files: it makes the directory as New does
// and returns nil when a file can be created there, else the error
// Cache.Writable would return ("the cache directory DIR cannot store files
// (REASON)", wrapping the file system's error), or DefaultDir's. For a
// caller that says so once at start (cuzk serve) rather than at the first
// store; its Caches then take WithoutUnwritableNotice.
func CheckDir(dir string) error {
	if dir == "" {
		var err error
		if dir, err = DefaultDir(); err != nil {
			return err
		}
	}
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = Writable(dir)
	}
	if err != nil {
		return &unwritableError{dir: dir, err: err}
	}
	return nil
}

type unwritableError struct {
	dir string
	err error
}

func (e *unwritableError) Error() string {
	return fmt.Sprintf("the cache directory %s cannot store files (%s)", e.dir, reason(e.err))
}
func (e *unwritableError) Unwrap() error { return e.err }
