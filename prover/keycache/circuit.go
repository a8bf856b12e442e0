package keycache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/consensys/gnark"
	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"
	cs_bls12381 "github.com/consensys/gnark/constraint/bls12-381"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/internal/progress"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Compiled is a built-in circuit's constraint system with the hash its
// keys are filed under.
type Compiled struct {
	// CCS is the compiled R1CS.
	CCS constraint.ConstraintSystem
	// Hash is the hex SHA-256 of CCS's WriteTo, as Hash returns, stored
	// with the cached circuit so that loading the keys need not serialize
	// the constraint system again; "" when the circuit cache is off.
	Hash string
	// CacheHit is true when CCS was read from the circuit cache.
	CacheHit bool
	// Path is the circuit cache file it was read from or stored in; ""
	// when it is not in the cache (the cache off, ephemeral keys, or a
	// store that failed).
	Path string
}

// circuitMeta is what a cached circuit was compiled from, stored after its
// constraint system; a cached circuit is used only when all of it equals
// the running binary's.
type circuitMeta struct {
	Circuit     string `json:"circuit"`
	Constraints int    `json:"constraints"`
	Gnark       string `json:"gnark"`
	GnarkCrypto string `json:"gnark_crypto"`
	Revision    string `json:"revision"`
	Format      int    `json:"format"` // circuitFormat
	// Hash is the hex SHA-256 of the constraint system bytes before the
	// metadata (gnark's WriteTo), and NbConstraints its constraint count:
	// what the compile produced, not part of the cache key.
	Hash          string `json:"hash"`
	NbConstraints int    `json:"nb_constraints"`
}

// Cache outcomes of circuit.compile (cuzk.circuit.cache).
const (
	CircuitCacheHit     = "hit"     // read from the cache
	CircuitCacheMiss    = "miss"    // no cached file: compiled and stored
	CircuitCacheStale   = "stale"   // cached by another build or gnark: compiled and replaced
	CircuitCacheCorrupt = "corrupt" // cached file damaged: compiled and replaced, with a warning
	CircuitCacheOff     = "off"     // no usable build revision: compiled, not stored
	// CircuitCacheNoStore: a cache of ephemeral keys (WithEphemeralKeys)
	// found no usable cached circuit (none, stale or damaged, left as it
	// is): compiled, not stored.
	CircuitCacheNoStore = "no_store"
)

// BuildRevision returns the VCS revision the running binary was built from
// (runtime/debug.ReadBuildInfo's vcs.revision), or "" with the reason it
// cannot key a cache: no build information, no VCS information (go run,
// go test, -buildvcs=false, a build outside a repository), or a build from
// a modified tree (vcs.modified=true), whose code the revision does not
// describe.
func BuildRevision() (rev, why string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", "the binary carries no build information"
	}
	return revisionOf(bi)
}

func revisionOf(bi *debug.BuildInfo) (rev, why string) {
	modified := ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	switch {
	case rev == "":
		return "", "the binary carries no VCS revision (go run, go test or -buildvcs=false)"
	case modified == "true":
		return "", fmt.Sprintf("the binary was built from a modified tree (revision %.12s, vcs.modified=true)", rev)
	}
	return rev, ""
}

// WithRevision keys the circuit cache by rev instead of the running
// binary's key (its clean VCS revision, else its executable's SHA-256);
// "" turns the circuit cache off. For tests and for builds whose revision
// is stamped another way.
func WithRevision(rev string) Option {
	return optionFunc(func(c *Cache) {
		c.keySet, c.quiet = true, rev != ""
		c.revision, c.revisionWhy = rev, "keyed by revision "+rev
		if rev == "" {
			c.revisionWhy = "turned off (empty revision)"
		}
	})
}

// withExecutable keys the circuit cache (at its first use) as a binary without a clean VCS
// revision at path would (tests: a go-run-style binary).
func withExecutable(path string) Option {
	return optionFunc(func(c *Cache) {
		c.exePath = path
	})
}

// Key returns what keys the circuit cache ("rev:REVISION" for a clean VCS
// build, "exe-sha256:HEX" for any other binary, a WithRevision value as
// given) and a line saying so; key "" when the cache is off, with why.
// The executable is hashed at the first call (of Key or Compile), not by
// New: a cache that only loads keys never needs it.
func (c *Cache) Key() (key, describe string) {
	return c.key(context.Background())
}

// key is Key, the first call recording a circuit.cache.key span under the
// span in ctx (with cuzk.circuit.cache.key_source: how the key was found;
// hashing the executable is the costly one) unless WithRevision set it.
func (c *Cache) key(ctx context.Context) (key, describe string) {
	c.keyOnce.Do(func() {
		if c.keySet {
			return
		}
		_, span := c.tracer.Start(ctx, semconv.SpanCircuitCacheKey)
		if c.exePath != "" {
			c.revision, c.revisionWhy, c.keySource = executableKey(c.exePath, c.dir, "test executable")
		} else {
			c.revision, c.revisionWhy, c.keySource = buildKey(c.dir)
		}
		if c.keySource != "" {
			span.SetAttributes(semconv.KeyCircuitCacheKeySource.String(c.keySource))
		}
		span.End()
	})
	return c.revision, c.revisionWhy
}

// gnarkCryptoVersion is the module version of gnark-crypto in the build,
// "" when unknown (test binaries know it too).
func gnarkCryptoVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/consensys/gnark-crypto" {
			if d.Replace != nil {
				return d.Replace.Path + "@" + d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}

// CircuitPath returns the file Compile caches circuit at constraints in
// for this build (its key: Key), "" when the circuit cache is off.
func (c *Cache) CircuitPath(circuit string, constraints int) string {
	if key, _ := c.key(context.Background()); key == "" {
		return ""
	}
	return c.circuitPath(circuit, constraints)
}

// circuitEntriesMax is how many builds' entries of one circuit and size
// the circuit cache keeps: a go run build, an installed cuzk and one more
// (a test binary, a second checkout) each hit their own entry when they
// alternate. Storing one more evicts the least recently used (by the
// file's modification time, which a hit renews).
const circuitEntriesMax = 3

// circuitStem is the start of the cache files of circuit at constraints:
// "circuit-<name>-<constraints>", the name's characters outside
// [A-Za-z0-9_-] written as "_", so no '.' comes before the build's tag.
func circuitStem(circuit string, constraints int) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, circuit)
	return "circuit-" + safe + "-" + strconv.Itoa(constraints)
}

// circuitPath is the cache file of circuit at constraints compiled by this
// build: circuitStem, ".", the build's tag (buildTag), ".ccs". One file per
// build, so builds that alternate (go run and an installed cuzk) each keep
// theirs, circuitEntriesMax at most.
func (c *Cache) circuitPath(circuit string, constraints int) string {
	return filepath.Join(c.dir, circuitStem(circuit, constraints)+"."+buildTag(c.revision)+".ccs")
}

// buildTag names a build key in a file name: "rev-" and 12 characters of a
// VCS revision, "exe-" and 12 hex digits of an executable's SHA-256, else
// "key-" and 12 hex digits of the key's SHA-256 (a WithRevision value). A
// tag two builds share is told apart by the file's metadata (stale).
func buildTag(key string) string {
	short := func(prefix, s string) (string, bool) {
		if len(s) < 12 || strings.IndexFunc(s[:12], func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) >= 0 {
			return "", false
		}
		return prefix + s[:12], true
	}
	if rev, ok := strings.CutPrefix(key, keyRevisionPrefix); ok {
		if t, ok := short("rev-", rev); ok {
			return t
		}
	}
	if sum, ok := strings.CutPrefix(key, keyExecPrefix); ok {
		if t, ok := short("exe-", sum); ok {
			return t
		}
	}
	h := sha256.Sum256([]byte(key))
	return "key-" + hex.EncodeToString(h[:6])
}

// evictCircuits removes the entries of circuit at constraints beyond the
// circuitEntriesMax most recently used (each with its solver plan), keep
// (just stored) never among them, a plan file whose circuit is gone, and
// a file of the layout before build tags
// ("circuit-<name>-<constraints>.ccs", whichever build wrote it last). Run
// under the circuit's lock; a removal that fails leaves the file.
func (c *Cache) evictCircuits(circuit string, constraints int, keep string) {
	stem := circuitStem(circuit, constraints)
	os.Remove(filepath.Join(c.dir, stem+".ccs"))
	// A plan whose circuit is gone (evicted by another process between
	// the two files' stores, or removed by hand) goes too.
	plans, _ := filepath.Glob(filepath.Join(c.dir, stem+".*"+planSuffix))
	for _, p := range plans {
		if _, err := os.Stat(circuitOfPlan(p)); errors.Is(err, fs.ErrNotExist) {
			os.Remove(p)
		}
	}
	paths, _ := filepath.Glob(filepath.Join(c.dir, stem+".*.ccs"))
	type entry struct {
		path string
		used time.Time
	}
	var others []entry
	for _, p := range paths {
		if p == keep {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			others = append(others, entry{p, fi.ModTime()})
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].used.After(others[j].used) })
	for i := circuitEntriesMax - 1; i < len(others); i++ {
		os.Remove(others[i].path)
		os.Remove(planPath(others[i].path))
	}
}

// Compile returns the constraint system of the built-in circuit named
// circuit at constraints: read from the circuit cache beside the keys when
// a file compiled from the same circuit, size, gnark and gnark-crypto
// versions and build revision is there, else from compile, then stored
// (checked file, written atomically). It records a circuit.compile span
// under the span in ctx with cuzk.circuit.cache (hit, miss, stale, corrupt,
// off) and child spans circuit.cache.read and circuit.cache.decode (a hit),
// or circuit.frontend and circuit.cache.store (a compile). The component
// solver's plan goes with a cached circuit (plan.go): read after a hit
// (circuit.plan.read, cuzk.solver.plan cache, missing or refused), made
// and stored after a compile or a read that found none that fits
// (synthesize.plan, circuit.plan.store).
//
// The first Compile writes one line to the progress writer saying what
// keys the cache (Key). With no key (WithRevision("")) the cache is
// neither read nor written; a damaged cached file is compiled again with a one-line warning.
// With WithEphemeralKeys a cached circuit is read (a hit writes nothing,
// not even a plan) but a compiled one is never stored, nor hashed: no circuit.cache.store,
// Hash "", cuzk.circuit.cache no_store, a stale or damaged file left as it
// is (at porep 2^26 on the H200 the store was 78.4 s of a 102.2 s compile).
// compile must return a BLS12-381 constraint system. Errors: compile's,
// the store's, or, when ctx ends during the compile, an *AbandonedError
// wrapping ctx's error (the compile runs on and stores its circuit; a
// Compile of the same circuit and size meanwhile joins it). Safe for
// concurrent use.
func (c *Cache) Compile(ctx context.Context, circuit string, constraints int, compile func() (constraint.ConstraintSystem, error)) (comp *Compiled, err error) {
	ctx, span := c.tracer.Start(ctx, semconv.SpanCircuitCompile, trace.WithAttributes(
		semconv.KeyCircuitID.String(circuit), semconv.KeyCircuitConstraints.Int(constraints)))
	outcome := CircuitCacheMiss
	defer func() {
		span.SetAttributes(semconv.KeyCircuitCache.String(outcome))
		endSpan(span, err)
	}()
	c.key(ctx)
	c.offOnce.Do(func() {
		switch {
		case c.progress == nil:
		case c.revision == "":
			fmt.Fprintf(c.progress, "circuit cache: off, %s; compiling each circuit\n", c.revisionWhy)
		case c.ephemeral:
			// Said even when quiet: what is stored changes, not only the key.
			fmt.Fprintf(c.progress, "circuit cache: %s; read only (ephemeral keys: a compiled circuit is not stored)\n", c.revisionWhy)
		case c.quiet:
		default:
			fmt.Fprintf(c.progress, "circuit cache: %s\n", c.revisionWhy)
		}
	})
	if c.revision == "" {
		outcome = CircuitCacheOff
		ccs, err := c.compileUnstored(ctx, fmt.Sprintf("compile:%s/%d", circuit, constraints), circuit, constraints, compile)
		if err != nil {
			return nil, err
		}
		return &Compiled{CCS: ccs}, nil
	}
	want := circuitMeta{
		Circuit: circuit, Constraints: constraints, Gnark: gnark.Version.String(),
		GnarkCrypto: gnarkCryptoVersion(), Revision: c.revision, Format: circuitFormat,
	}
	path := c.circuitPath(circuit, constraints)
	comp, rerr := c.readCircuit(ctx, path, want)
	switch {
	case rerr == nil:
		outcome = CircuitCacheHit
		c.loadPlan(ctx, comp)
		return comp, nil
	case errors.Is(rerr, fs.ErrNotExist):
	case errors.Is(rerr, errStale):
		outcome = CircuitCacheStale
	default:
		outcome = CircuitCacheCorrupt
		span.AddEvent("cached circuit unreadable, compiling again", trace.WithAttributes(attribute.String("error", rerr.Error())))
		if c.progress != nil {
			fmt.Fprintf(c.progress, "circuit cache: %s unreadable (%s); compiling again\n", path, reasonAt(rerr, path))
		}
	}
	if c.ephemeral {
		// Nothing big written (the circuit file of a large size) and no
		// time spent hashing for a key file that will not exist.
		outcome = CircuitCacheNoStore
		ccs, err := c.compileUnstored(ctx, "compile:"+path, circuit, constraints, compile)
		if err != nil {
			return nil, err
		}
		return &Compiled{CCS: ccs}, nil
	}
	// The file found unreadable or stale is no answer to the wait for the
	// lock: only one stored since is (compileAndStore).
	before, _ := os.Stat(path)
	comp, found, err := c.compileAndStore(ctx, path, circuit, constraints, want, before, compile)
	switch {
	case err != nil:
	case found:
		outcome = CircuitCacheHit
		c.loadPlan(ctx, comp)
	case comp.Path != "":
		c.storePlan(ctx, comp)
	}
	return comp, err
}

// compiledCircuit is what a compile made, and the hash its store found.
type compiledCircuit struct {
	ccs  constraint.ConstraintSystem
	hash string
}

// compileMake is a work's make: compile, its progress said (compileProgress)
// until it ends or ctx does.
func (c *Cache) compileMake(ctx context.Context, circuit string, constraints int, compile func() (constraint.ConstraintSystem, error)) func() (any, error) {
	return func() (any, error) {
		done := c.compileProgress(ctx, circuit, constraints)
		ccs, err := compile()
		done(err)
		return &compiledCircuit{ccs: ccs}, err
	}
}

// compileUnstored runs compile (or joins the compile of key under way) in
// a circuit.frontend span, storing nothing, and returns ctx's error as an
// *AbandonedError as soon as ctx ends: gnark's frontend.Compile cannot be
// stopped, and the spans of a run interrupted during it must end
// (circuit.compile left open made an interrupted cuzk prove's trace 100 %
// untraced).
func (c *Cache) compileUnstored(ctx context.Context, key, circuit string, constraints int, compile func() (constraint.ConstraintSystem, error)) (constraint.ConstraintSystem, error) {
	w := c.join(ctx, workSpec{key: key, step: semconv.SpanCircuitCompile, make: c.compileMake(ctx, circuit, constraints, compile)})
	_, v, _, err := c.await(ctx, w, workSpans{make: semconv.SpanCircuitFrontend})
	if err != nil {
		return nil, err
	}
	return v.(*compiledCircuit).ccs, nil
}

// compileAndStore compiles the circuit (circuit.frontend) and stores it at
// path (circuit.cache.store) with its hash, evicting the entries of other
// builds beyond circuitEntriesMax, under the lock of the circuit and size
// (lock.go): a compile of it by another process is waited for
// (circuit.cache.lock), and its entry read (found) when it is this
// build's. A call whose ctx ends during the compile or the store returns
// an *AbandonedError; the work goes on and stores. A failed store is no
// error: the circuit is returned without its Path (store).
func (c *Cache) compileAndStore(ctx context.Context, path, circuit string, constraints int, want circuitMeta, before fs.FileInfo, compile func() (constraint.ConstraintSystem, error)) (comp *Compiled, found bool, err error) {
	lock := ""
	if c.storable() {
		lock = c.circuitLockPath(circuit, constraints)
	}
	w := c.join(ctx, workSpec{
		key: "compile:" + path, step: semconv.SpanCircuitCompile, lockPath: lock,
		waitLine: fmt.Sprintf("circuit cache: waiting for another compile of %s, %s, in this cache (its lock %s is held): it is read once stored, not compiled twice",
			circuit, constraintCount(constraints), lock),
		cached: func() bool { return hasCircuitFile(path, want, before) },
		make:   c.compileMake(ctx, circuit, constraints, compile),
		store: func(v any) error {
			r := v.(*compiledCircuit)
			hash, err := Hash(r.ccs)
			if err != nil {
				return err
			}
			r.hash = hash
			if err := c.store("compiled circuit", path, func(w io.Writer) error { return writeCircuit(w, r.ccs, want, hash) }); err != nil {
				return err
			}
			c.evictCircuits(circuit, constraints, path)
			return nil
		},
	})
	found, v, storeErr, err := c.await(ctx, w, workSpans{lock: semconv.SpanCircuitCacheLock, make: semconv.SpanCircuitFrontend, store: semconv.SpanCircuitCacheStore})
	switch {
	case err != nil:
		return nil, false, err
	case found:
		comp, err := c.readCircuit(ctx, path, want)
		if err != nil {
			return nil, false, fmt.Errorf("circuit cache: the circuit another compile stored in %s: %w", path, err)
		}
		return comp, true, nil
	}
	r := v.(*compiledCircuit)
	if storeErr != nil {
		return &Compiled{CCS: r.ccs, Hash: r.hash}, false, nil
	}
	return &Compiled{CCS: r.ccs, Hash: r.hash, Path: path}, false, nil
}

// hasCircuitFile reports whether path holds a circuit of want (its
// metadata; the checksums are verified by the read) other than the file
// before (nil: none), which was found unreadable or stale.
func hasCircuitFile(path string, want circuitMeta, before fs.FileInfo) bool {
	if fi, err := os.Stat(path); err != nil || before != nil && os.SameFile(before, fi) {
		return false
	}
	meta, ok := circuitMetaOf(path)
	meta.Hash, meta.NbConstraints = "", 0
	return ok && meta == want
}

type storedHashKey struct{}

// OnStoredHash returns ctx carrying f, which a Compile under it that finds
// its circuit in the cache calls with the stored hash and constraint count
// of the cached system (checked file, matching build), before decoding it:
// the keys filed under that hash can be read (LoadCached) while the
// system decodes. The hash is Compiled.Hash if the decode succeeds.
func OnStoredHash(ctx context.Context, f func(hash string, constraints int)) context.Context {
	return context.WithValue(ctx, storedHashKey{}, f)
}

// errStale marks a cached circuit compiled by another build or gnark.
var errStale = errors.New("compiled by another build")

// circuitFormat is the layout of a cached circuit's payload, stored in its
// metadata: 2 is gnark's WriteTo of the system without its calldata, then
// the calldata raw (uint64 count, little-endian uint32s), then the
// metadata. gnark writes the calldata as varints, and decoding them one
// by one was three quarters of a cache hit (CPU profile at 2^18).
const circuitFormat = 2

// storeCircuit writes ccs and meta to path as a checked file
// (writeCircuit) and returns the hash of ccs (Hash: its whole WriteTo).
func storeCircuit(path string, ccs constraint.ConstraintSystem, meta circuitMeta) (string, error) {
	hash, err := Hash(ccs)
	if err != nil {
		return "", err
	}
	return hash, writeChecked(path, func(w io.Writer) error { return writeCircuit(w, ccs, meta, hash) })
}

// writeCircuit writes the payload of a cached circuit (circuitFormat) to
// w: ccs without its calldata, the calldata raw, then meta (with hash and
// the constraint count) and its length. ccs's calldata is set aside while
// its system is written, then restored.
func writeCircuit(w io.Writer, ccs constraint.ConstraintSystem, meta circuitMeta, hash string) error {
	r1cs, ok := ccs.(*cs_bls12381.R1CS)
	if !ok {
		return fmt.Errorf("keycache: %w: constraint system %T", ErrUnsupported, ccs)
	}
	calldata := r1cs.CallData
	r1cs.CallData = nil
	_, err := ccs.WriteTo(w)
	r1cs.CallData = calldata
	if err != nil {
		return fmt.Errorf("write constraint system: %w", err)
	}
	if err := binary.Write(w, binary.LittleEndian, uint64(len(calldata))); err != nil {
		return err
	}
	if len(calldata) > 0 {
		if _, err := w.Write(unsafe.Slice((*byte)(unsafe.Pointer(&calldata[0])), 4*len(calldata))); err != nil {
			return err
		}
	}
	meta.Hash, meta.NbConstraints = hash, ccs.GetNbConstraints()
	m, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if _, err := w.Write(m); err != nil {
		return err
	}
	return binary.Write(w, binary.LittleEndian, uint32(len(m)))
}

// decodeCircuit reads a payload of circuitFormat (without its metadata).
func decodeCircuit(body []byte) (constraint.ConstraintSystem, error) {
	ccs := groth16.NewCS(ecc.BLS12_381)
	r := bytesReader(body)
	if _, err := ccs.ReadFrom(r); err != nil {
		return nil, err
	}
	var n uint64
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, fmt.Errorf("calldata length: %w", err)
	}
	if n != uint64(r.remaining())/4 || r.remaining()%4 != 0 {
		return nil, fmt.Errorf("calldata of %d values in %d bytes", n, r.remaining())
	}
	r1cs := ccs.(*cs_bls12381.R1CS)
	r1cs.CallData = make([]uint32, n)
	if n > 0 {
		if _, err := io.ReadFull(r, unsafe.Slice((*byte)(unsafe.Pointer(&r1cs.CallData[0])), 4*n)); err != nil {
			return nil, err
		}
	}
	return ccs, nil
}

// readCircuit reads the cached circuit at path and checks it was compiled
// as want says. Errors wrap fs.ErrNotExist, errStale, or say what is damaged.
func (c *Cache) readCircuit(ctx context.Context, path string, want circuitMeta) (*Compiled, error) {
	_, rspan := c.tracer.Start(ctx, semconv.SpanCircuitCacheRead)
	body, meta, closeFile, err := readCircuitFile(path)
	if err == nil {
		rspan.SetAttributes(semconv.KeyFileBytes.Int(len(body)))
	}
	endSpan(rspan, ignoreNotExist(err))
	if err != nil {
		return nil, err
	}
	defer closeFile()
	got := meta
	got.Hash, got.NbConstraints = "", 0
	if got != want {
		return nil, fmt.Errorf("%w (%s)", errStale, describeMeta(meta))
	}
	if f, ok := ctx.Value(storedHashKey{}).(func(string, int)); ok && f != nil && meta.Hash != "" {
		f(meta.Hash, meta.NbConstraints)
	}
	_, dspan := c.tracer.Start(ctx, semconv.SpanCircuitCacheDecode)
	ccs, err := decodeCircuit(body)
	switch {
	case err != nil:
		err = corrupt(fmt.Errorf("decode constraint system: %w", err))
	case ccs.GetNbConstraints() != meta.NbConstraints:
		err = corrupt(fmt.Errorf("decode constraint system: %d constraints, stored with %d", ccs.GetNbConstraints(), meta.NbConstraints))
	}
	endSpan(dspan, err)
	if err != nil {
		return nil, err
	}
	if !c.ephemeral {
		// The entry was used: the last to be evicted (evictCircuits). A
		// cache of ephemeral keys writes nothing, not even a time.
		now := time.Now()
		_ = os.Chtimes(path, now, now)
	}
	return &Compiled{CCS: ccs, Hash: meta.Hash, CacheHit: true, Path: path}, nil
}

// readCircuitFile maps path, verifies its checksums and splits the payload
// into the constraint system's bytes and the metadata. closeFile unmaps it.
func readCircuitFile(path string) (body []byte, meta circuitMeta, closeFile func(), err error) {
	m, err := mapFile(path)
	if err != nil {
		return nil, meta, nil, err
	}
	fail := func(err error) ([]byte, circuitMeta, func(), error) {
		m.Close()
		return nil, circuitMeta{}, nil, err
	}
	payload, err := checkedPayload(m.data)
	if err != nil {
		return fail(err)
	}
	if len(payload) < 4 {
		return fail(corrupt(errors.New("no metadata")))
	}
	n := int(binary.LittleEndian.Uint32(payload[len(payload)-4:]))
	if n > len(payload)-4 {
		return fail(corrupt(fmt.Errorf("metadata of %d bytes in a payload of %d", n, len(payload))))
	}
	mb := payload[len(payload)-4-n : len(payload)-4]
	dec := json.NewDecoder(bytes.NewReader(mb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&meta); err != nil {
		return fail(corrupt(fmt.Errorf("metadata: %w", err)))
	}
	// gnark's ReadFrom and the calldata copy leave nothing in the mapping.
	return payload[:len(payload)-4-n], meta, m.closeInBackground, nil
}

func describeMeta(m circuitMeta) string {
	return fmt.Sprintf("%s/%d, gnark %s, gnark-crypto %s, build %.24s", m.Circuit, m.Constraints, m.Gnark, m.GnarkCrypto, m.Revision)
}

func ignoreNotExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// compileRateFile, in the cache directory, holds the last compile of the
// circuit measured on this host, as setupRateFile does for setups.
func compileRateFile(circuit string) string { return "compile-rate-" + circuit }

// compileProgress watches a compile of circuit at n constraints: once it
// has run progressAfter, one line saying so, with the time it should take
// from the last compile of that circuit measured here, and on a terminal
// (or with force) a bar of the time left (a spinner without an estimate),
// until ctx ends. The returned done ends it; a compile that succeeded is
// recorded for the next estimate.
func (c *Cache) compileProgress(ctx context.Context, circuit string, n int) (done func(error)) {
	rate := filepath.Join(c.dir, compileRateFile(circuit))
	est, known := progress.Estimate(rate, int64(n))
	start := time.Now()
	stop := progress.Start(progress.Step{W: c.progress, Force: c.forceProgress, After: c.progressAfter, Line: compileNotice(circuit, n, est, known),
		Bar: fmt.Sprintf("circuit compile, %s/%d", circuit, n), Estimate: est}, ctx.Done())
	return func(err error) {
		stop()
		if err == nil {
			progress.Record(rate, int64(n), time.Since(start))
		}
	}
}

// compileNotice is the one line said when a compile of circuit at n
// constraints has run longer than progressAfter, with the time it should
// take when a compile of it was measured here (known).
func compileNotice(circuit string, n int, est time.Duration, known bool) string {
	if known {
		return fmt.Sprintf("circuit compile: %s, %s; about %s in all, from the last compile measured here", circuit, constraintCount(n), human.Duration(est))
	}
	return fmt.Sprintf("circuit compile: %s, %s; the first compile of it here has no estimate", circuit, constraintCount(n))
}
