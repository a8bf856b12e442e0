// Package keycache is the disk cache of what a circuit needs before its
// first proof: the Groth16 proving and verifying keys (groth16.Setup of a
// constraint system runs once per machine, keyed by the SHA-256 of the
// serialized constraint system, and later runs read the keys back) and the
// compiled constraint systems of the built-in circuits (Cache.Compile).
// The keys held in memory are prover.Prover's loaded circuits; those on
// the device are prover/gpu/msm's DeviceBases.
//
// Files live in one directory (DefaultDir): <hash>.keys holds the
// verifying key (gnark's WriteTo, compressed) followed by the proving key
// (gnark's WriteDump, raw points: fast to read, specific to this machine's
// byte order, hence a cache and not an exchange format). Every file is
// written to a temporary name and renamed, so a setup killed half-way
// leaves no partial key behind; and a setup or compile with its store
// holds a lock (flock) of its own in <dir>/locks, so processes sharing the
// directory make each key once, the later ones reading it (lock.go). A
// directory that cannot take a file costs the next run a setup, not this
// one's keys (store.go).
package keycache

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/attribute"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	groth16_bls12381 "github.com/consensys/gnark/backend/groth16/bls12-381"
	"github.com/consensys/gnark/constraint"
	cs_bls12381 "github.com/consensys/gnark/constraint/bls12-381"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/atomicfile"
	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/internal/progress"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover/setup"
)

// EnvCacheDir overrides the cache directory.
const EnvCacheDir = "CUZK_CACHE_DIR"

// ErrUnsupported is returned for a constraint system, key or witness that
// is not a BLS12-381 R1CS of gnark (a PLONK system, another curve). It is
// setup.ErrUnsupported, one sentinel for one meaning: the key setup, this
// cache and the prove (groth16.ErrUnsupported) refuse the same systems.
// error.type unsupported.
var ErrUnsupported = setup.ErrUnsupported

// ErrCorruptKey is returned by Load and LoadHashed for a cached key file
// that exists but cannot be read (damaged, truncated, a point that does
// not decode): it is refused, never replaced by a new setup, whose new
// verifying key would reject every proof checked against the old one.
// The error names the file; the user restores it, or deletes it to have a
// new key made. error.type corrupt.
var ErrCorruptKey = semconv.NewError(semconv.ErrorTypeCorrupt, "corrupt key file")

// DefaultDir returns $CUZK_CACHE_DIR when set, else
// <os.UserCacheDir()>/otelcuzk/keys (~/.cache/otelcuzk/keys on Linux).
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("key cache directory: %w (set %s)", err, EnvCacheDir)
	}
	return filepath.Join(base, "otelcuzk", "keys"), nil
}

// Keys are the Groth16 keys of one constraint system.
type Keys struct {
	// Hash is the hex SHA-256 of the constraint system (gnark's WriteTo),
	// the keys' ID; for keys of WithEphemeralKeys an ID of their setup
	// instead (EphemeralPrefix and random hex digits).
	Hash string
	PK   groth16.ProvingKey
	VK   groth16.VerifyingKey
	// CacheHit is true when the keys were read from disk, false when
	// groth16.Setup made them.
	CacheHit bool
	// Path is the key file they were read from or stored in; "" when they
	// are in memory only (WithEphemeralKeys, or a store that failed: an
	// unwritable cache directory).
	Path string
}

// Cache is a directory of keys. Safe for concurrent use.
type Cache struct {
	dir           string
	revision      string    // keys the circuit cache (buildKey); "" turns it off
	revisionWhy   string    // why revision is "", or which key it is
	offOnce       sync.Once // the line saying revisionWhy, once
	tracer        trace.Tracer
	progress      io.Writer
	forceProgress bool
	progressAfter time.Duration
	keySet        bool           // WithRevision or withExecutable chose the key
	keyOnce       sync.Once      // buildKey at the first use, unless keySet
	keySource     string         // how the key was found (KeySource*), "" when none
	exePath       string         // withExecutable's binary, keyed in place of the running one
	quiet         bool           // WithRevision(rev): no line saying the key
	background    sync.WaitGroup // compiles and setups running (shared), until stored

	mu      sync.Mutex
	work    map[string]*work // compiles and setups under way, by key
	setupFn SetupFunc        // makes missing keys; nil: gnark's groth16.Setup
	// ephemeral (WithEphemeralKeys): never read or write key files.
	ephemeral bool
	// compressed (WithCompressedKeys): <hash>.keyz files, points compressed.
	compressed bool

	storeMu        sync.Mutex
	unwritable     error // why nothing can be stored in dir (New, or a store that failed); nil while it can
	saidUnwritable bool  // the line saying so was said (or WithoutUnwritableNotice)
}

// WithCompressedKeys stores and reads keys with compressed points
// (gnark's WriteTo and ReadFrom of both keys: 48 bytes a G1 point, 96 a
// G2 point, about half the disk of the raw file), as <hash>.keyz files
// beside the raw <hash>.keys, with the same checksums. Decompressing is
// slower than reading raw points (a square root per point, on all cores).
// A file whose checksums pass but whose points do not decode (not on the
// curve, not in the subgroup) is corrupt: refused with ErrCorruptKey, as
// any unreadable key file, not replaced.
func WithCompressedKeys() Option {
	return optionFunc(func(c *Cache) { c.compressed = true })
}

// WithEphemeralKeys makes every load run the setup and keep the keys in
// memory only: no key file is read or written (cuzk prove
// --ephemeral-keys, for a size whose key the disk cannot hold), and the
// constraint system is not hashed (Keys.Hash is an ID of the setup). A
// compiled circuit is not stored either (Compile): a circuit already in
// the cache is read, which writes nothing. Only the one-line timing
// records of setups and compiles (for the next run's estimate) are
// written.
func WithEphemeralKeys() Option {
	return optionFunc(func(c *Cache) { c.ephemeral = true })
}

// SetupFunc makes the keys of a constraint system (a BLS12-381 R1CS) when
// they are not cached: gnark's groth16.Setup by default, prover/setup's
// Setup on the GPU for cuzk setup --backend cuda.
type SetupFunc func(ctx context.Context, ccs constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error)

// WithSetup makes missing keys with f instead of gnark's groth16.Setup
// (nil keeps groth16.Setup). The keys are stored and read back as any
// others; f should return soon after ctx ends.
func WithSetup(f SetupFunc) Option {
	return optionFunc(func(c *Cache) { c.setupFn = f })
}

// Option configures a Cache.
type Option interface{ apply(*Cache) }

type optionFunc func(*Cache)

func (f optionFunc) apply(c *Cache) { f(c) }

// WithTracerProvider records keys.load spans with tp (default: global).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *Cache) {
		if tp != nil {
			c.tracer = semconv.Tracer(tp)
		}
	})
}

// WithProgress says on w, in one line, that a setup runs once it has run
// 2 s, with its expected time when one was measured in this cache; then,
// when w is a terminal or force is set, a bar of the time left (a spinner
// without an estimate) until it ends. Default: os.Stderr; nil is silent.
func WithProgress(w io.Writer, force bool) Option {
	return optionFunc(func(c *Cache) { c.progress, c.forceProgress = w, force })
}

// WithoutUnwritableNotice leaves out the line a Cache says on the
// progress writer when it finds that its directory cannot store files:
// for a caller that said so itself (CheckDir), as cuzk serve does at
// start. The stores still fail and the loads still make what is missing
// in memory.
func WithoutUnwritableNotice() Option {
	return optionFunc(func(c *Cache) { c.saidUnwritable = true })
}

// New opens the cache in dir ("" means DefaultDir), creating it. A
// directory that cannot be created is no error: such a cache stores
// nothing (Writable says why; the first store says so in one line on the
// progress writer) and reads nothing, and its loads make the circuit and
// keys in memory. Errors: DefaultDir's.
func New(dir string, opts ...Option) (*Cache, error) {
	if dir == "" {
		var err error
		if dir, err = DefaultDir(); err != nil {
			return nil, err
		}
	}
	mkErr := os.MkdirAll(dir, 0o755)
	c := &Cache{
		unwritable:    mkErr,
		dir:           dir,
		tracer:        semconv.Tracer(otel.GetTracerProvider()),
		progress:      os.Stderr,
		progressAfter: 2 * time.Second,
		work:          map[string]*work{},
	}
	for _, o := range opts {
		o.apply(c)
	}
	return c, nil
}

// Dir returns the cache directory.
func (c *Cache) Dir() string { return c.dir }

// Hash returns the hex SHA-256 of ccs serialized with its WriteTo.
func Hash(ccs constraint.ConstraintSystem) (string, error) {
	h := sha256.New()
	bw := bufio.NewWriterSize(h, 1<<20)
	if _, err := ccs.WriteTo(bw); err != nil {
		return "", fmt.Errorf("hash constraint system: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Load returns the keys of ccs, from the cache when present and readable,
// else from groth16.Setup, then stored; it is LoadHashed with the hash
// computed here.
func (c *Cache) Load(ctx context.Context, ccs constraint.ConstraintSystem) (*Keys, error) {
	return c.LoadHashed(ctx, ccs, "")
}

// LoadHashed returns the keys of ccs, whose Hash is hash when known (the
// Compiled.Hash of a cached circuit; "" computes it in a keys.hash span),
// from the cache when present and readable, else from groth16.Setup, then
// stored. It records a keys.load span under the span in ctx with
// cuzk.key.cache_hit and cuzk.key.hash_source (circuit_cache, computed, or
// ephemeral: WithEphemeralKeys, hash ignored), and below it keys.read (the
// file mapped and its CRC-32C checksums verified on all cores, with
// cuzk.key.checked), keys.decode, or keys.setup and keys.store.
//
// A cached key file that exists and cannot be read (truncated, damaged, a
// point that does not decode) is refused with an error wrapping
// ErrCorruptKey that names it, and left as it is: a new setup would make
// a new verifying key (one this user may not read is refused too, wrapping
// fs.ErrPermission). A file of the format before the checksums is read
// unchecked once and rewritten with them. Errors wrap ErrUnsupported (not a BLS12-381 R1CS),
// ctx's error (before a setup; as soon as ctx ends during one, an
// *AbandonedError wrapping it: that setup then finishes in the background
// and stores its keys, and a load of the same key meanwhile joins it), or
// setup's.
// A failed store is no error: the keys are returned, the keys.store span
// records the failure and one line on the progress writer says so.
func (c *Cache) LoadHashed(ctx context.Context, ccs constraint.ConstraintSystem, hash string) (k *Keys, err error) {
	ctx, span := c.tracer.Start(ctx, semconv.SpanKeyLoad, trace.WithAttributes(
		semconv.KeyCircuitConstraints.Int(ccs.GetNbConstraints())))
	defer func() {
		if err == nil {
			span.SetAttributes(semconv.KeyKeyCacheHit.Bool(k.CacheHit))
		}
		endSpan(span, err)
	}()
	if ccs.Field().Cmp(ecc.BLS12_381.ScalarField()) != 0 {
		return nil, fmt.Errorf("keycache: %w: only BLS12-381 constraint systems (field of %d bits)", ErrUnsupported, ccs.Field().BitLen())
	}
	if r, ok := ccs.(*cs_bls12381.R1CS); !ok || r.Type != constraint.SystemR1CS {
		return nil, fmt.Errorf("keycache: %w: only BLS12-381 R1CS (a PLONK SparseR1CS or another constraint system: %T)", ErrUnsupported, ccs)
	}
	if c.ephemeral {
		span.SetAttributes(semconv.KeyKeyHashSource.String("ephemeral"))
		return c.setupEphemeral(ctx, ccs)
	}
	source := "circuit_cache"
	if hash == "" {
		source = "computed"
		_, hspan := c.tracer.Start(ctx, semconv.SpanKeysHash)
		hash, err = Hash(ccs)
		endSpan(hspan, err)
		if err != nil {
			return nil, err
		}
	}
	span.SetAttributes(semconv.KeyKeyHashSource.String(source))
	if k, err = c.readCached(ctx, hash); !errors.Is(err, errNotCached) {
		return k, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.setupAndStore(ctx, ccs, hash)
}

// errNotCached: no key file of the hash (or something else in its place).
var errNotCached = errors.New("no cached key")

// readCached reads the keys filed under hash (keys.read, keys.decode):
// errNotCached when there is no key file, the refusal of LoadHashed for
// one that cannot be read.
func (c *Cache) readCached(ctx context.Context, hash string) (*Keys, error) {
	readPath := c.existingPath(hash)
	pk, vk, checked, rerr := c.readKeys(ctx, readPath)
	if rerr == nil {
		if !checked {
			// Once per file: later loads verify it at memory speed.
			if err := c.addChecksums(ctx, readPath); err != nil && c.progress != nil {
				fmt.Fprintf(c.progress, "keycache: could not add checksums to %s (%v); it stays readable\n", readPath, err)
			}
		}
		return &Keys{Hash: hash, PK: pk, VK: vk, CacheHit: true, Path: readPath}, nil
	}
	if fi, err := os.Stat(readPath); !errors.Is(rerr, fs.ErrNotExist) && err == nil && fi.Mode().IsRegular() {
		// Refused, not replaced: a new setup's verifying key would differ
		// from the one every verifier of this circuit holds (it was
		// replaced with a one-line notice, silently for a log reader).
		why := strings.TrimPrefix(rerr.Error(), "read "+readPath+": ")
		if errors.Is(rerr, fs.ErrPermission) {
			return nil, fmt.Errorf("key file %s cannot be read (%w): refused, not replaced, since a new setup would make a new verifying key: give this user read access, or delete it to make a new key",
				readPath, rerr)
		}
		return nil, fmt.Errorf("%w %s (%s): refused, not replaced, since a new setup would make a new verifying key: restore the file, or delete it to make a new key",
			ErrCorruptKey, readPath, why)
	}
	if !errors.Is(rerr, fs.ErrNotExist) {
		// Not a file (a directory in its place): no key to keep.
		trace.SpanFromContext(ctx).AddEvent("key path is not a file, running setup", trace.WithAttributes(attribute.String("error", rerr.Error())))
		if c.progress != nil {
			fmt.Fprintf(c.progress, "keycache: %s is not a key file (%s); running setup\n", readPath, reasonAt(rerr, readPath))
		}
	}
	return nil, errNotCached
}

// keyPair is what a setup made.
type keyPair struct {
	pk groth16.ProvingKey
	vk groth16.VerifyingKey
}

// setupAndStore makes the keys of ccs (hash) and stores them, or joins
// the setup of that key under way in this cache: under the key's lock
// (lock.go), so that a setup of the same key by another process is waited
// for (keys.lock) and its stored key read, not made a second time. The
// setup (keys.setup) and the store (keys.store) run on their own: a call
// whose ctx ends meanwhile returns an *AbandonedError at once, since
// groth16.Setup cannot be stopped, and a caller that waited for it would
// hold its spans (keys.setup, keys.load) open past its own, so an
// interrupted run would export keys.read and keys.hash without their
// parent. The setup left running still stores its keys (untraced: its
// job has ended), and a load of the same key meanwhile joins it instead
// of starting a second one. A failed store is no error: the keys are
// returned without a Path (Cache.store says why in one line).
func (c *Cache) setupAndStore(ctx context.Context, ccs constraint.ConstraintSystem, hash string) (*Keys, error) {
	path := c.path(hash)
	lock := ""
	if c.storable() {
		lock = c.keyLockPath(hash)
	}
	w := c.join(ctx, workSpec{
		key: "setup:" + hash, step: semconv.SpanKeysSetup, lockPath: lock,
		waitLine: fmt.Sprintf("keycache: waiting for another setup of this key (%s; its lock %s is held): its key is read once stored, not made a second time",
			constraintCount(ccs.GetNbConstraints()), lock),
		cached: func() bool { return c.HasKeys(hash) },
		make: func() (any, error) {
			pk, vk, err := c.setup(ctx, ccs)
			return keyPair{pk, vk}, err
		},
		store: func(v any) error {
			kp := v.(keyPair)
			return c.store("keys", path, func(w io.Writer) error { return c.encodeKeys(w, kp.pk, kp.vk) })
		},
	})
	found, v, storeErr, err := c.await(ctx, w, workSpans{lock: semconv.SpanKeysLock, make: semconv.SpanKeysSetup, store: semconv.SpanKeysStore})
	switch {
	case err != nil && err == ctx.Err():
		return nil, err // left while it waited for the lock
	case err != nil:
		return nil, fmt.Errorf("groth16 setup: %w", err)
	case found:
		k, err := c.readCached(ctx, hash)
		if errors.Is(err, errNotCached) {
			return nil, fmt.Errorf("keycache: the key %s stored by another setup is gone from %s", hash, c.dir)
		}
		return k, err
	}
	if storeErr != nil {
		// The keys are good and in memory: a cache that cannot take them
		// costs the next process a setup, not this proof.
		trace.SpanFromContext(ctx).AddEvent("keys not stored", trace.WithAttributes(attribute.String("error", storeErr.Error())))
		path = ""
	}
	kp := v.(keyPair)
	return &Keys{Hash: hash, PK: kp.pk, VK: kp.vk, Path: path}, nil
}

// setupEphemeral is LoadHashed's setup with nothing read or stored. The
// keys' Hash is an ID of this setup (ephemeralID), not the constraint
// system's hash: no file is named by it, computing it would serialize the
// whole system (tens of seconds at 2^26), and two setups of one system
// make two different keys, which must not share the ID a backend keeps
// their bases under.
func (c *Cache) setupEphemeral(ctx context.Context, ccs constraint.ConstraintSystem) (*Keys, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	_, sspan := c.tracer.Start(ctx, semconv.SpanKeysSetup, trace.WithAttributes(attribute.Bool("cuzk.key.ephemeral", true)))
	pk, vk, err := c.setup(ctx, ccs)
	endSpan(sspan, err)
	if err != nil {
		return nil, fmt.Errorf("groth16 setup: %w", err)
	}
	return &Keys{Hash: ephemeralID(), PK: pk, VK: vk}, nil
}

// EphemeralPrefix begins the Hash of keys made by a cache of ephemeral
// keys (WithEphemeralKeys): "ephemeral-" and 32 random hex digits, unique
// to one setup.
const EphemeralPrefix = "ephemeral-"

func ephemeralID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return EphemeralPrefix + hex.EncodeToString(b[:])
}

// endSpan records err (if any) on span, then ends it.
func endSpan(span trace.Span, err error) {
	semconv.SetError(span, err)
	span.End()
}

// corruptError is an error decoding a cache file whose checksums passed
// (or that has none): the message is err's, the error.type corrupt.
type corruptError struct{ err error }

func (e *corruptError) Error() string     { return e.err.Error() }
func (e *corruptError) Unwrap() error     { return e.err }
func (e *corruptError) ErrorType() string { return semconv.ErrorTypeCorrupt }

// corrupt marks a decode error as corrupt; nil stays nil.
func corrupt(err error) error {
	if err == nil {
		return nil
	}
	return &corruptError{err}
}

// readKeys maps the key file at path, verifies its checksums (keys.read)
// and decodes it (keys.decode). checked is false for a file of the older
// format without checksums, read as it is.
func (c *Cache) readKeys(ctx context.Context, path string) (pk groth16.ProvingKey, vk groth16.VerifyingKey, checked bool, err error) {
	_, rspan := c.tracer.Start(ctx, semconv.SpanKeysRead)
	m, err := mapFile(path)
	var payload []byte
	if err == nil {
		// Decoding copies everything out of the mapping, so it is unmapped
		// off the critical path (a 2^22 key's munmap is tens of ms).
		defer m.closeInBackground()
		payload, err = checkedPayload(m.data)
		checked = err == nil
		if errors.Is(err, errNoTrailer) {
			payload, err = m.data, nil
		}
		rspan.SetAttributes(semconv.KeyFileBytes.Int(len(m.data)), semconv.KeyKeyChecked.Bool(checked))
	}
	endSpan(rspan, ignoreNotExist(err))
	if err != nil {
		return nil, nil, false, err
	}
	_, dspan := c.tracer.Start(ctx, semconv.SpanKeysDecode)
	r := bytesReader(payload)
	// A large key (GiBs at 2^26 and up) takes seconds to decode: said,
	// and on a terminal a bar of the bytes read.
	stop := progress.Start(progress.Step{W: c.progress, Force: c.forceProgress, After: c.progressAfter,
		Line: fmt.Sprintf("keys: reading the %s proving key of %s", human.Bytes(uint64(len(payload))), path),
		Bar:  "keys.decode", Total: int64(len(payload)), Done: r.bytesRead}, nil)
	pk, vk, err = c.decode(r, strings.HasSuffix(path, compressedExt), checked)
	stop()
	err = corrupt(err)
	endSpan(dspan, err)
	if err != nil {
		return nil, nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	return pk, vk, checked, nil
}

// addChecksums rewrites the key file at path, of the older format, as a
// checked file with the same payload.
func (c *Cache) addChecksums(ctx context.Context, path string) (err error) {
	_, span := c.tracer.Start(ctx, semconv.SpanKeysStore)
	defer func() { endSpan(span, err) }()
	m, err := mapFile(path)
	if err != nil {
		return err
	}
	defer m.Close()
	if _, err := checkedPayload(m.data); !errors.Is(err, errNoTrailer) {
		return err // another process did it meanwhile
	}
	return writeChecked(path, func(w io.Writer) error { _, err := w.Write(m.data); return err })
}

// HasKeys reports whether the keys of the constraint system hashing to
// hash (Compiled.Hash) are in the cache's directory, so LoadHashed will
// read them rather than run a setup (a damaged file it refuses,
// ErrCorruptKey). False for "" and with WithEphemeralKeys.
func (c *Cache) HasKeys(hash string) bool {
	if hash == "" || c.ephemeral {
		return false
	}
	fi, err := os.Stat(c.existingPath(hash))
	return err == nil && fi.Mode().IsRegular()
}

// LoadCached returns the keys filed under hash (Compiled.Hash) in the
// cache, read only: an error wrapping fs.ErrNotExist when there are none,
// and any other error when the file cannot be read (LoadHashed then sets
// up again, as it does for such a file). constraints is for the span. It
// records the keys.load span of LoadHashed (cuzk.key.hash_source
// circuit_cache) with keys.read and keys.decode.
func (c *Cache) LoadCached(ctx context.Context, hash string, constraints int) (k *Keys, err error) {
	ctx, span := c.tracer.Start(ctx, semconv.SpanKeyLoad, trace.WithAttributes(
		semconv.KeyCircuitConstraints.Int(constraints), semconv.KeyKeyHashSource.String("circuit_cache")))
	defer func() {
		if err == nil {
			span.SetAttributes(semconv.KeyKeyCacheHit.Bool(true))
		}
		endSpan(span, ignoreNotExist(err))
	}()
	if hash == "" || c.ephemeral {
		return nil, fmt.Errorf("keycache: no cached keys to read: %w", fs.ErrNotExist)
	}
	path := c.existingPath(hash)
	pk, vk, checked, err := c.readKeys(ctx, path)
	if err != nil {
		return nil, err
	}
	if !checked {
		if err := c.addChecksums(ctx, path); err != nil && c.progress != nil {
			fmt.Fprintf(c.progress, "keycache: could not add checksums to %s (%v); it stays readable\n", path, err)
		}
	}
	return &Keys{Hash: hash, PK: pk, VK: vk, CacheHit: true, Path: path}, nil
}

// Key file names: <hash>.keys (raw points) and <hash>.keyz (compressed).
const (
	rawExt        = ".keys"
	compressedExt = ".keyz"
)

func (c *Cache) path(hash string) string {
	if c.compressed {
		return filepath.Join(c.dir, hash+compressedExt)
	}
	return filepath.Join(c.dir, hash+rawExt)
}

// existingPath is the key file a load of hash reads: the cache's own kind
// (path), or when it is missing the other kind's file of the same circuit
// (a compressed cache reads a raw <hash>.keys, faster than a
// decompression; a raw cache reads a <hash>.keyz that cuzk setup
// --compressed-keys made): the same keys, and no setup that would make a
// second, different key of one circuit.
func (c *Cache) existingPath(hash string) string {
	p := c.path(hash)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	other := filepath.Join(c.dir, hash+compressedExt)
	if c.compressed {
		other = filepath.Join(c.dir, hash+rawExt)
	}
	if _, err := os.Stat(other); err == nil {
		return other
	}
	return p
}

// encodeKeys writes the keys in the cache's format: raw (writeKeys) or
// compressed (both keys' WriteTo).
func (c *Cache) encodeKeys(w io.Writer, pk groth16.ProvingKey, vk groth16.VerifyingKey) error {
	if !c.compressed {
		return writeKeys(w, pk, vk)
	}
	if _, err := vk.WriteTo(w); err != nil {
		return fmt.Errorf("write verifying key: %w", err)
	}
	if _, err := pk.WriteTo(w); err != nil {
		return fmt.Errorf("write proving key: %w", err)
	}
	return nil
}

// decode reads the keys of a raw file (decodeKeys) or a compressed one
// (both keys' ReadFrom, which decompress every point on all cores:
// gnark-crypto's Decoder solves the curve equation of a slice's points in
// parallel), r then at its end. The proving key of a checked file (its
// checksums verified: the bytes written) is read without the subgroup
// check of each point (UnsafeReadFrom; a point off the curve still fails,
// having no square root): the check was half to two thirds of the
// decode (bench/caches.md), and
// it guards against keys from elsewhere, not a cache file whose bytes are
// the ones written, of which the raw format checks nothing at all. A
// file without checksums gets every check.
func (c *Cache) decode(r *parallelReader, compressed, checked bool) (groth16.ProvingKey, groth16.VerifyingKey, error) {
	if !compressed {
		return decodeKeys(r)
	}
	vk := groth16.NewVerifyingKey(ecc.BLS12_381)
	if _, err := vk.ReadFrom(r); err != nil {
		return nil, nil, fmt.Errorf("read verifying key: %w", err)
	}
	pk := new(groth16_bls12381.ProvingKey)
	read := pk.ReadFrom
	if checked {
		read = pk.UnsafeReadFrom
	}
	if _, err := read(r); err != nil {
		return nil, nil, fmt.Errorf("read proving key: %w", err)
	}
	if n := r.remaining(); n != 0 {
		return nil, nil, fmt.Errorf("%d trailing bytes", n)
	}
	return pk, vk, nil
}

// Wait waits until every compile and setup under way, those a cancelled
// call left running included, has finished and stored its result, or until ctx ends (its error is returned),
// so an owner that shuts down does not leave a write into the cache
// directory behind it.
func (c *Cache) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		c.background.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("keycache: setups still storing: %w", ctx.Err())
	}
}

// setup runs groth16.Setup. Once it has taken progressAfter it says so in
// one line on the progress writer, with the time it should take in all
// when a setup was measured in this cache before (setupRateFile), and on a
// terminal (or with force) draws a bar of the time left, or a spinner
// without an estimate, until it ends or ctx does. The setup's time is
// recorded for the next estimate.
func (c *Cache) setup(ctx context.Context, ccs constraint.ConstraintSystem) (groth16.ProvingKey, groth16.VerifyingKey, error) {
	n := ccs.GetNbConstraints()
	est, known := estimateSetup(c.dir, n)
	start := time.Now()
	step := progress.Step{W: c.progress, Force: c.forceProgress, After: c.progressAfter,
		Line: setupNotice(n, est, known, c.storable()), Bar: "groth16 setup, " + constraintCount(n)}
	if known {
		step.Estimate = est
	}
	stop := progress.Start(step, ctx.Done())
	var pk groth16.ProvingKey
	var vk groth16.VerifyingKey
	var err error
	if c.setupFn != nil {
		pk, vk, err = c.setupFn(ctx, ccs)
	} else {
		pk, vk, err = groth16.Setup(ccs)
	}
	took := time.Since(start)
	stop()
	if err == nil {
		// Abandoned or not, the setup ran whole: its time is the host's.
		recordSetup(c.dir, n, took)
	}
	return pk, vk, err
}

func writeKeys(w io.Writer, pk groth16.ProvingKey, vk groth16.VerifyingKey) error {
	gpk, ok := pk.(*groth16_bls12381.ProvingKey)
	if !ok {
		return fmt.Errorf("keycache: %w: proving key %T", ErrUnsupported, pk)
	}
	if _, err := vk.WriteTo(w); err != nil {
		return fmt.Errorf("write verifying key: %w", err)
	}
	if err := gpk.WriteDump(w); err != nil {
		return fmt.Errorf("write proving key: %w", err)
	}
	return nil
}

// decodeKeys reads the verifying key (gnark's ReadFrom) and the proving
// key (gnark's ReadDump) from r, which must then be at its end.
func decodeKeys(r *parallelReader) (groth16.ProvingKey, groth16.VerifyingKey, error) {
	vk := groth16.NewVerifyingKey(ecc.BLS12_381)
	if _, err := vk.ReadFrom(r); err != nil {
		return nil, nil, fmt.Errorf("read verifying key: %w", err)
	}
	pk := new(groth16_bls12381.ProvingKey)
	if err := pk.ReadDump(r); err != nil {
		return nil, nil, fmt.Errorf("read proving key: %w", err)
	}
	if n := r.remaining(); n != 0 {
		return nil, nil, fmt.Errorf("%d trailing bytes", n)
	}
	return pk, vk, nil
}

// writeAtomic writes path (mode 0600, as it always was) through
// atomicfile, so readers see the old file or the whole new one. A named
// pipe, socket or device at path is refused ("write PATH: is a named
// pipe, not a file"): atomicfile would write it in place (as it does
// /dev/stdout), and a pipe's write waits for a reader forever. A
// directory there is atomicfile's error (EISDIR).
func writeAtomic(path string, write func(io.Writer) error) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return &os.PathError{Op: "write", Path: path, Err: errors.New("is " + notAFile(fi.Mode()))}
	}
	return atomicfile.Write(path, 0o600, write)
}
