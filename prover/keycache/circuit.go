package keycache

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"runtime/debug"
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

// CircuitPath returns the file Compile caches circuit at constraints in.
func (c *Cache) CircuitPath(circuit string, constraints int) string {
	return c.circuitPath(circuit, constraints)
}

// circuitPath is the cache file of circuit at constraints: one file per
// circuit and size, replaced when the build changes, so old builds leave
// no files behind.
func (c *Cache) circuitPath(circuit string, constraints int) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, circuit)
	return filepath.Join(c.dir, "circuit-"+safe+"-"+strconv.Itoa(constraints)+".ccs")
}

// Compile returns the constraint system of the built-in circuit named
// circuit at constraints: read from the circuit cache beside the keys when
// a file compiled from the same circuit, size, gnark and gnark-crypto
// versions and build revision is there, else from compile, then stored
// (checked file, written atomically). It records a circuit.compile span
// under the span in ctx with cuzk.circuit.cache (hit, miss, stale, corrupt,
// off) and child spans circuit.cache.read and circuit.cache.decode (a hit),
// or circuit.frontend and circuit.cache.store (a compile).
//
// The first Compile writes one line to the progress writer saying what
// keys the cache (Key). With no key (WithRevision("")) the cache is
// neither read nor written; a damaged cached file is compiled again with a one-line warning.
// With WithEphemeralKeys a cached circuit is read (a hit writes nothing)
// but a compiled one is never stored, nor hashed: no circuit.cache.store,
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
		done := c.compileProgress(circuit, constraints)
		ccs, err := c.frontendCompile(ctx, fmt.Sprintf("compile:%s/%d", circuit, constraints), compile, nil)
		done(err)
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
		return comp, nil
	case errors.Is(rerr, fs.ErrNotExist):
	case errors.Is(rerr, errStale):
		outcome = CircuitCacheStale
	default:
		outcome = CircuitCacheCorrupt
		span.AddEvent("cached circuit unreadable, compiling again", trace.WithAttributes(attribute.String("error", rerr.Error())))
		if c.progress != nil {
			fmt.Fprintf(c.progress, "circuit cache: %s unreadable (%v); compiling again\n", path, rerr)
		}
	}
	if c.ephemeral {
		// Nothing big written (the circuit file of a large size) and no
		// time spent hashing for a key file that will not exist.
		outcome = CircuitCacheNoStore
		done := c.compileProgress(circuit, constraints)
		ccs, err := c.frontendCompile(ctx, "compile:"+path, compile, nil)
		done(err)
		if err != nil {
			return nil, err
		}
		return &Compiled{CCS: ccs}, nil
	}
	done := c.compileProgress(circuit, constraints)
	ccs, err := c.frontendCompile(ctx, "compile:"+path, compile, func(ccs constraint.ConstraintSystem) {
		_, _ = storeCircuit(path, ccs, want)
	})
	done(err)
	if err != nil {
		return nil, err
	}
	_, sspan := c.tracer.Start(ctx, semconv.SpanCircuitCacheStore)
	want.Hash, err = storeCircuit(path, ccs, want)
	endSpan(sspan, err)
	if err != nil {
		return nil, fmt.Errorf("store compiled circuit: %w", err)
	}
	return &Compiled{CCS: ccs, Hash: want.Hash}, nil
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

// frontendCompile runs compile (or joins the compile of key under way) in
// a circuit.frontend span, and returns ctx's error as an *AbandonedError as
// soon as ctx ends: gnark's frontend.Compile cannot be stopped, and the
// spans of a run interrupted during it must end (circuit.compile left open
// made an interrupted cuzk prove's trace 100 % untraced). The compile left
// running goes on and is given to store (when not nil) at its end.
func (c *Cache) frontendCompile(ctx context.Context, key string, compile func() (constraint.ConstraintSystem, error), store func(constraint.ConstraintSystem)) (constraint.ConstraintSystem, error) {
	_, span := c.tracer.Start(ctx, semconv.SpanCircuitFrontend)
	var stored func(any)
	if store != nil {
		stored = func(v any) { store(v.(constraint.ConstraintSystem)) }
	}
	v, err := c.shared(ctx, key, semconv.SpanCircuitCompile, func() (any, error) { return compile() }, stored)
	endSpan(span, err)
	if err != nil {
		return nil, err
	}
	return v.(constraint.ConstraintSystem), nil
}

// circuitFormat is the layout of a cached circuit's payload, stored in its
// metadata: 2 is gnark's WriteTo of the system without its calldata, then
// the calldata raw (uint64 count, little-endian uint32s), then the
// metadata. gnark writes the calldata as varints, and decoding them one
// by one was three quarters of a cache hit (CPU profile at 2^18).
const circuitFormat = 2

// storeCircuit writes ccs and meta to path as a checked file and returns
// the hash of ccs (Hash: its whole WriteTo). ccs's calldata is set aside
// while its system is written, then restored.
func storeCircuit(path string, ccs constraint.ConstraintSystem, meta circuitMeta) (string, error) {
	r1cs, ok := ccs.(*cs_bls12381.R1CS)
	if !ok {
		return "", fmt.Errorf("keycache: %w: constraint system %T", ErrUnsupported, ccs)
	}
	hash, err := Hash(ccs)
	if err != nil {
		return "", err
	}
	err = writeChecked(path, func(w io.Writer) error {
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
	})
	return hash, err
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
	return &Compiled{CCS: ccs, Hash: meta.Hash, CacheHit: true}, nil
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
// (or with force) a bar of the time left (a spinner without an estimate).
// The returned done ends it; a compile that succeeded is recorded for the
// next estimate.
func (c *Cache) compileProgress(circuit string, n int) (done func(error)) {
	rate := filepath.Join(c.dir, compileRateFile(circuit))
	est, known := progress.Estimate(rate, int64(n))
	line := fmt.Sprintf("circuit compile: %s, %d constraints; the first compile of it here has no estimate", circuit, n)
	if known {
		line = fmt.Sprintf("circuit compile: %s, %d constraints; about %s in all, from the last compile measured here", circuit, n, human.Duration(est))
	}
	start := time.Now()
	stop := progress.Start(progress.Step{W: c.progress, Force: c.forceProgress, After: c.progressAfter, Line: line,
		Bar: fmt.Sprintf("circuit compile, %s/%d", circuit, n), Estimate: est}, nil)
	return func(err error) {
		stop()
		if err == nil {
			progress.Record(rate, int64(n), time.Since(start))
		}
	}
}
