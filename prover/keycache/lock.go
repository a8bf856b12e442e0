package keycache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Work that writes a cache file (a key setup and its store, a compile and
// its store) holds an exclusive flock(2) on a lock file in <dir>/locks, so
// that two processes sharing the directory make a key once: the second
// waits for the first, then reads the key the first stored, instead of
// making another (a new random key whose file would replace the first's,
// whose proofs then verify against nothing on disk). flock is released by
// the kernel when its holder dies, so a killed process leaves an empty lock
// file behind, never a held lock; the files are never removed (removing a
// lock file another process has open and waits on would let a third lock a
// new file beside it).
const lockDir = "locks"

// lockPoll is how often a wait for a lock held elsewhere tries again:
// flock cannot be interrupted, and the wait must end with its context.
var lockPoll = 100 * time.Millisecond

// keyLockPath is the lock file of the keys filed under hash (raw and
// compressed alike: one key per circuit, whatever its encoding).
func (c *Cache) keyLockPath(hash string) string {
	return filepath.Join(c.dir, lockDir, hash+".lock")
}

// circuitLockPath is the lock file of the cached circuit at constraints,
// shared by every build's entry of it (storing one may evict another).
func (c *Cache) circuitLockPath(circuit string, constraints int) string {
	return filepath.Join(c.dir, lockDir, circuitStem(circuit, constraints)+".lock")
}

// flockFile takes the exclusive flock of the file at path, creating it
// (and its directory) when missing. It tries once at once; while another
// process (or another open file of this one) holds it, it calls waiting
// once and tries again every lockPoll until it holds the lock or ctx ends
// (ctx's error). unlock releases it (once; later calls do nothing).
// A lock file that cannot be opened (an unwritable directory, where
// nothing will be stored either) returns errNoLock: the caller goes on
// without the lock.
func flockFile(ctx context.Context, path string, waiting func()) (unlock func(), err error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, errNoLock
	}
	said := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			var once sync.Once
			return func() {
				once.Do(func() {
					_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
					f.Close()
				})
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, errNoLock
		}
		if !said && waiting != nil {
			said = true
			waiting()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// errNoLock: the lock file could not be opened or locked (flock refused
// by the file system); the work goes on unlocked.
var errNoLock = errors.New("no lock file")

func openLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err == nil {
		return f, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
			if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644); err == nil {
				return f, nil
			}
		}
	}
	// A lock file made earlier in a directory this user may no longer
	// write: flock works on a descriptor opened for reading.
	return os.Open(path)
}
