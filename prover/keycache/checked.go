package keycache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/otelcuzk/otelcuzk/internal/parallel"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// A checked file is a payload followed by a trailer of CRC-32C checksums,
// one per chunk of the payload, so that reading it back verifies every byte
// on all cores at memory speed (CRC-32C runs on the SSE 4.2 / ARMv8 CRC
// instructions in hash/crc32) instead of re-deriving a cryptographic hash
// of the content. The checksums catch a torn or damaged file; they are no
// defence against someone who can write the cache directory (nothing is).
//
// Trailer, all little-endian, after the payload of length L:
//
//	crc[0..n)  uint32 each, CRC-32C of payload[i·chunk, min((i+1)·chunk, L))
//	n          uint64, number of chunks, ⌈L/chunk⌉
//	chunk      uint64, chunk size in bytes
//	L          uint64, payload length in bytes
//	crcTrailer uint32, CRC-32C of the crc table and the three uint64
//	magic      8 bytes, trailerMagic
//
// A file without the magic at its end is a payload written before this
// format (a key file of an older build); readers fall back to reading it
// without checks (see Cache.Load).
const (
	trailerMagic = "OCZKSUM1"
	trailerFixed = 8 + 8 + 8 + 4 + len(trailerMagic)
)

// Variables so that tests can exercise many chunks and parallel copies on
// small files.
var (
	checkChunk    = 16 << 20 // bytes per checksum, written into each file
	parallelBytes = 8 << 20  // a Read of fewer bytes is copied by one goroutine
	copyPiece     = 4 << 20  // bytes per goroutine step of a parallel copy
)

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	// errNoTrailer marks a file of the older, unchecked format.
	errNoTrailer = semconv.NewError(semconv.ErrorTypeCorrupt, "no checksum trailer")
	// errChecksum marks a payload whose bytes are not the ones written.
	errChecksum = semconv.NewError(semconv.ErrorTypeCorrupt, "checksum mismatch")
)

// checksumWriter passes writes through to w and sums them per chunk.
type checksumWriter struct {
	w    io.Writer
	crcs []uint32
	cur  uint32
	fill int
	n    uint64
}

func (c *checksumWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	q := p[:n]
	for len(q) > 0 {
		k := min(len(q), checkChunk-c.fill)
		c.cur = crc32.Update(c.cur, castagnoli, q[:k])
		c.fill += k
		q = q[k:]
		if c.fill == checkChunk {
			c.crcs = append(c.crcs, c.cur)
			c.cur, c.fill = 0, 0
		}
	}
	c.n += uint64(n)
	return n, err
}

// writeTrailer ends the payload written through c with its trailer.
func (c *checksumWriter) writeTrailer() error {
	crcs := c.crcs
	if c.fill > 0 {
		crcs = append(crcs, c.cur)
	}
	t := make([]byte, 0, 4*len(crcs)+trailerFixed)
	for _, v := range crcs {
		t = binary.LittleEndian.AppendUint32(t, v)
	}
	t = binary.LittleEndian.AppendUint64(t, uint64(len(crcs)))
	t = binary.LittleEndian.AppendUint64(t, uint64(checkChunk))
	t = binary.LittleEndian.AppendUint64(t, c.n)
	t = binary.LittleEndian.AppendUint32(t, crc32.Checksum(t, castagnoli))
	t = append(t, trailerMagic...)
	_, err := c.w.Write(t)
	return err
}

// writeChecked writes path atomically (writeAtomic): the payload write
// produces, then its trailer.
func writeChecked(path string, write func(io.Writer) error) error {
	return writeAtomic(path, func(w io.Writer) error {
		cw := &checksumWriter{w: w}
		if err := write(cw); err != nil {
			return err
		}
		return cw.writeTrailer()
	})
}

// mappedFile is a file mapped read-only into memory. Its pages are the page
// cache's own: mapping a file that was read recently costs no copy.
type mappedFile struct {
	data []byte
}

// mapFile maps the file at path. A path below a regular file (a cache
// directory that could not be made) is a missing file: errors.Is(err,
// fs.ErrNotExist) holds. Anything but a regular file at path is refused
// (openRegular).
func mapFile(path string) (*mappedFile, error) {
	f, st, err := openRegular(path)
	if errors.Is(err, unix.ENOTDIR) {
		return nil, &notDirError{err}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() == 0 {
		return &mappedFile{}, nil
	}
	if int64(int(st.Size())) != st.Size() {
		return nil, fmt.Errorf("%s: %d bytes do not fit in memory", path, st.Size())
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return &mappedFile{data: data}, nil
}

// openRegular opens the cache file at path for reading and returns its
// metadata, refusing anything but a regular file in its place (a
// directory, a named pipe, a device) with a *notRegularError. The open
// does not block: a named pipe opened for reading would otherwise wait
// for a writer, and the proof with it, forever. O_NONBLOCK changes nothing
// for a regular file's reads or mappings.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &notRegularError{path: path, mode: st.Mode()}
	}
	return f, st, nil
}

// notRegularError is a cache file's path that holds something other than
// a file: "PATH is a directory, not a file".
type notRegularError struct {
	path string
	mode fs.FileMode
}

func (e *notRegularError) Error() string { return e.path + " is " + notAFile(e.mode) }

// reasonAt is err's reason without path, for a line that names path
// already ("P unreadable (a named pipe, not a file)", not "(P is a named
// pipe, not a file)"): a *notRegularError at path says what is there, a
// *fs.PathError at path its operation and error ("write: is a
// directory"); any other error its whole text.
func reasonAt(err error, path string) string {
	var nr *notRegularError
	if errors.As(err, &nr) && nr.path == path {
		return notAFile(nr.mode)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// notAFile says what a path of mode holds instead of a regular file: "a
// directory, not a file".
func notAFile(mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t&fs.ModeDir != 0:
		return "a directory, not a file"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe, not a file"
	case t&fs.ModeSocket != 0:
		return "a socket, not a file"
	case t&fs.ModeDevice != 0:
		return "a device, not a file"
	}
	return "not a regular file"
}

// notDirError is an open refused since a directory of the path is a
// file: no file there, as fs.ErrNotExist says.
type notDirError struct{ err error }

func (e *notDirError) Error() string        { return e.err.Error() }
func (e *notDirError) Unwrap() error        { return e.err }
func (e *notDirError) Is(target error) bool { return target == fs.ErrNotExist }

// closeInBackground unmaps m on another goroutine; m must not be used,
// nor any slice of it referenced, after the call.
func (m *mappedFile) closeInBackground() {
	data := m.data
	m.data = nil
	if data != nil {
		go unix.Munmap(data)
	}
}

func (m *mappedFile) Close() error {
	if m.data == nil {
		return nil
	}
	err := unix.Munmap(m.data)
	m.data = nil
	return err
}

// checkedPayload verifies data's trailer and every chunk's checksum, the
// chunks in parallel on all cores, and returns the payload. Errors wrap
// errNoTrailer (no trailer magic: an older file) or errChecksum.
func checkedPayload(data []byte) ([]byte, error) {
	if len(data) < trailerFixed || string(data[len(data)-len(trailerMagic):]) != trailerMagic {
		return nil, errNoTrailer
	}
	fixed := data[len(data)-trailerFixed:]
	n := binary.LittleEndian.Uint64(fixed[0:])
	chunk := binary.LittleEndian.Uint64(fixed[8:])
	length := binary.LittleEndian.Uint64(fixed[16:])
	if chunk == 0 || n != (length+chunk-1)/chunk || n > uint64(len(data))/4 ||
		length+4*n+uint64(trailerFixed) != uint64(len(data)) {
		return nil, fmt.Errorf("%w: trailer describes %d bytes in %d chunks, file has %d bytes", errChecksum, length, n, len(data))
	}
	table := data[length : len(data)-len(trailerMagic)-4]
	if crc32.Checksum(table, castagnoli) != binary.LittleEndian.Uint32(data[len(data)-len(trailerMagic)-4:]) {
		return nil, fmt.Errorf("%w: trailer", errChecksum)
	}
	payload := data[:length]
	bad := -1
	var mu sync.Mutex
	parallel.For(int(n), func(i int) {
		lo := uint64(i) * chunk
		hi := min(lo+chunk, length)
		if crc32.Checksum(payload[lo:hi], castagnoli) != binary.LittleEndian.Uint32(table[4*i:]) {
			mu.Lock()
			if bad < 0 || i < bad {
				bad = i
			}
			mu.Unlock()
		}
	})
	if bad >= 0 {
		return nil, fmt.Errorf("%w: bytes %d to %d", errChecksum, uint64(bad)*chunk, min(uint64(bad+1)*chunk, length))
	}
	return payload, nil
}

// parallelReader reads a byte slice; a large Read (the point slices of a
// proving key dump, read whole by gnark's ReadDump) is copied by all cores,
// which also spreads the page faults of the fresh destination.
type parallelReader struct {
	data []byte
	off  int
	read atomic.Int64 // off, for a progress bar's goroutine
}

// bytesRead is the bytes read so far; safe to call while another
// goroutine reads (it lags a Read in progress).
func (r *parallelReader) bytesRead() int64 { return r.read.Load() }

func bytesReader(b []byte) *parallelReader { return &parallelReader{data: b} }

func (r *parallelReader) Read(p []byte) (int, error) {
	if r.off >= len(r.data) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	src := r.data[r.off:]
	n := min(len(p), len(src))
	if n < parallelBytes {
		copy(p, src[:n])
	} else {
		piece := copyPiece
		parallel.For((n+piece-1)/piece, func(i int) {
			lo := i * piece
			hi := min(lo+piece, n)
			copy(p[lo:hi], src[lo:hi])
		})
	}
	r.off += n
	r.read.Store(int64(r.off))
	return n, nil
}

// ReadByte lets decoders that probe for a trailing byte do so cheaply.
func (r *parallelReader) ReadByte() (byte, error) {
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	b := r.data[r.off]
	r.off++
	return b, nil
}

// remaining is the number of bytes not read yet.
func (r *parallelReader) remaining() int { return len(r.data) - r.off }
