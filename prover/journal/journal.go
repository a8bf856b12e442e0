// Package journal keeps the daemon's jobs on disk, so that a request id
// outlives a crash or a restart: each job's request id, a hash of the
// proof it asks for, its state, proof, trace id and timings, in one bbolt
// file (go.etcd.io/bbolt, an embedded B+tree store with one writer and
// fsync'd transactions).
//
// A record is written when its job is submitted and again when it ends.
// A record still unfinished when a journal is opened belonged to a job
// the previous process never finished: Open marks it Interrupted (a
// FAILED job, "interrupted by a restart"), which a new submission of the
// same request id proves again. Records expire after a TTL and the oldest
// go first beyond a count or a byte cap.
package journal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
	"github.com/otelcuzk/otelcuzk/prover"
)

// FileName is the journal's file in its state directory.
const FileName = "jobs.db"

// Defaults of Open.
const (
	DefaultTTL        = 10 * time.Minute
	DefaultMaxEntries = 4096
	// DefaultMaxBytes bounds the encoded records (a proof is 192 bytes, a
	// public witness 12 bytes and 32 per public input, so a record is
	// about 1 KiB).
	DefaultMaxBytes = 64 << 20
)

// Errors callers branch on, each with its error.type (semconv.NewError).
var (
	// ErrLocked: another process (a daemon) holds the journal's file.
	ErrLocked = semconv.NewError(semconv.ErrorTypeUnavailable, "the job journal is locked by another process (another daemon uses this --state-dir)")
	// ErrCorrupt: the file is not a journal bbolt can read.
	ErrCorrupt = semconv.NewError(semconv.ErrorTypeCorrupt, "the job journal is corrupt")
)

// InterruptedError is the Error of a record Open found unfinished.
const InterruptedError = "interrupted by a restart: the daemon stopped before this job ended; submit the same request id again to prove it"

// State is a record's state, by the engine's state names.
type State string

// The states a record has.
const (
	StateSubmitted   State = "submitted" // written at submit; not yet ended
	StateSucceeded   State = "succeeded"
	StateFailed      State = "failed"
	StateCancelled   State = "cancelled"
	StateInterrupted State = "interrupted" // failed: found unfinished by Open
)

// Finished reports whether s is a final state.
func (s State) Finished() bool { return s != StateSubmitted && s != "" }

// Record is one job.
type Record struct {
	RequestID string `json:"request_id"`
	JobID     string `json:"job_id"`
	// ParamsHash is ParamsHash of the job's request (hex).
	ParamsHash  string `json:"params_hash"`
	Circuit     string `json:"circuit"`
	Constraints int    `json:"constraints"`
	Partitions  int    `json:"partitions"`
	Priority    int    `json:"priority"`
	State       State  `json:"state"`
	// Error says why a failed, cancelled or interrupted job ended.
	Error string `json:"error,omitempty"`
	// ErrorType is the error.type of Error (semconv.ErrorType: bad_witness,
	// unsatisfied, ...), so a job read back fails as it did; "" in records
	// written before it was kept.
	ErrorType string `json:"error_type,omitempty"`
	TraceID   string `json:"trace_id,omitempty"`
	Worker    string `json:"worker,omitempty"`
	// Submitted, Started and Finished are wall clock times (zero: not yet).
	Submitted time.Time `json:"submitted"`
	Started   time.Time `json:"started,omitzero"`
	Finished  time.Time `json:"finished,omitzero"`
	// Result is the proof of a succeeded job (its timings included).
	Result *prover.Result `json:"result,omitempty"`
}

// ParamsHash is the hex SHA-256 of what makes two requests the same proof
// (the engine's rule: circuit, size and witnesses; priority, correlation
// and Verify aside).
func ParamsHash(circuit string, constraints int, witnesses [][]byte) string {
	h := sha256.New()
	var b [8]byte
	put := func(p []byte) {
		binary.BigEndian.PutUint64(b[:], uint64(len(p)))
		h.Write(b[:])
		h.Write(p)
	}
	put([]byte(circuit))
	binary.BigEndian.PutUint64(b[:], uint64(constraints))
	h.Write(b[:])
	binary.BigEndian.PutUint64(b[:], uint64(len(witnesses)))
	h.Write(b[:])
	for _, w := range witnesses {
		put(w)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Option configures Open.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	ttl        time.Duration
	maxEntries int
	maxBytes   int64
	now        func() time.Time
	lock       time.Duration
}

// WithTTL sets how long a record is kept after its job ended (default
// DefaultTTL). A record not yet ended does not expire.
func WithTTL(d time.Duration) Option { return optionFunc(func(c *config) { c.ttl = d }) }

// WithMaxEntries bounds the records kept, the oldest written evicted first
// (default DefaultMaxEntries; n < 1 means 1).
func WithMaxEntries(n int) Option {
	return optionFunc(func(c *config) { c.maxEntries = max(n, 1) })
}

// WithMaxBytes bounds the encoded size of the records kept, the oldest
// written evicted first (default DefaultMaxBytes). The newest record is
// kept whatever its size.
func WithMaxBytes(n int64) Option { return optionFunc(func(c *config) { c.maxBytes = n }) }

// withClock is for tests.
func withClock(now func() time.Time) Option { return optionFunc(func(c *config) { c.now = now }) }

// Journal is an open journal; its methods are safe for concurrent use.
type Journal struct {
	cfg  config
	db   *bolt.DB
	path string
}

var (
	bucketJobs  = []byte("jobs")  // request id -> JSON Record
	bucketOrder = []byte("order") // 8-byte sequence -> request id, oldest first
	bucketSeq   = []byte("seq")   // request id -> its 8-byte sequence
	bucketMeta  = []byte("meta")  // keyBytes -> total bytes of the records
	keyBytes    = []byte("bytes")
	keyCount    = []byte("count") // in bucketMeta: records kept
)

// Open opens (creating it and dir when missing) the journal in dir
// (FileName), marks every unfinished record Interrupted, and returns it
// with those records' request ids. Errors: ErrLocked when another process
// has it open (tried for 200 ms), ErrCorrupt when the file is not a
// readable journal, or the error of making dir; each names the file.
func Open(dir string, opts ...Option) (*Journal, []string, error) {
	c := config{ttl: DefaultTTL, maxEntries: DefaultMaxEntries, maxBytes: DefaultMaxBytes, now: time.Now, lock: 200 * time.Millisecond}
	for _, o := range opts {
		o.apply(&c)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err // mkdir DIR: ...
	}
	path := filepath.Join(dir, FileName)
	db, err := openDB(path, c.lock)
	if err != nil {
		return nil, nil, err
	}
	j := &Journal{cfg: c, db: db, path: path}
	interrupted, err := j.recover()
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	return j, interrupted, nil
}

// openDB opens path, turning bbolt's timeout and its format errors (and
// its panics on some damaged files) into ErrLocked and ErrCorrupt.
func openDB(path string, lock time.Duration) (db *bolt.DB, err error) {
	defer func() {
		if p := recover(); p != nil {
			db, err = nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, p)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: lock})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrChecksum):
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	case err != nil:
		return nil, err // open PATH: ...
	}
	return db, nil
}

// Path is the journal's file.
func (j *Journal) Path() string { return j.path }

// recover makes the buckets, marks unfinished records Interrupted and
// evicts what is expired or over the caps.
func (j *Journal) recover() (ids []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	err = j.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketJobs, bucketOrder, bucketSeq, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		jobs := tx.Bucket(bucketJobs)
		var stale []Record
		err := jobs.ForEach(func(k, v []byte) error {
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("record %q: %w", k, err)
			}
			if !r.State.Finished() {
				stale = append(stale, r)
			}
			return nil
		})
		if err != nil {
			return err
		}
		now := j.cfg.now()
		for _, r := range stale {
			r.State, r.Error, r.Finished = StateInterrupted, InterruptedError, now
			if err := put(tx, r); err != nil {
				return err
			}
			ids = append(ids, r.RequestID)
		}
		return j.evict(tx, now)
	})
	return ids, err
}

// Put writes r (replacing the record of its request id), then evicts
// expired records and the oldest beyond the caps, in one transaction.
func (j *Journal) Put(r Record) error {
	if r.RequestID == "" {
		return errors.New("put: empty request id")
	}
	err := j.db.Update(func(tx *bolt.Tx) error {
		if err := put(tx, r); err != nil {
			return err
		}
		return j.evict(tx, j.cfg.now())
	})
	if err != nil {
		return fmt.Errorf("put %q: %w", r.RequestID, err)
	}
	return nil
}

func put(tx *bolt.Tx, r Record) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	id := []byte(r.RequestID)
	jobs, order, seqs := tx.Bucket(bucketJobs), tx.Bucket(bucketOrder), tx.Bucket(bucketSeq)
	total, count := meta(tx, keyBytes), meta(tx, keyCount)
	if old := jobs.Get(id); old != nil {
		total -= int64(len(old))
	} else {
		count++
	}
	if s := seqs.Get(id); s != nil {
		if err := order.Delete(s); err != nil {
			return err
		}
	}
	n, err := order.NextSequence()
	if err != nil {
		return err
	}
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], n)
	if err := order.Put(s[:], id); err != nil {
		return err
	}
	if err := seqs.Put(id, s[:]); err != nil {
		return err
	}
	if err := jobs.Put(id, v); err != nil {
		return err
	}
	if err := setMeta(tx, keyCount, count); err != nil {
		return err
	}
	return setMeta(tx, keyBytes, total+int64(len(v)))
}

// meta is the counter key of bucketMeta (0 when unset).
func meta(tx *bolt.Tx, key []byte) int64 {
	if v := tx.Bucket(bucketMeta).Get(key); len(v) == 8 {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func setMeta(tx *bolt.Tx, key []byte, n int64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(max(n, 0)))
	return tx.Bucket(bucketMeta).Put(key, b[:])
}

// evict deletes, oldest written first, records over the count or byte
// cap, and finished records older than the TTL. An expired record behind
// a newer one is evicted when the records before it are, so the TTL
// holds within the time between writes of one job.
func (j *Journal) evict(tx *bolt.Tx, now time.Time) error {
	jobs, order, seqs := tx.Bucket(bucketJobs), tx.Bucket(bucketOrder), tx.Bucket(bucketSeq)
	count, total := meta(tx, keyCount), meta(tx, keyBytes)
	cur := order.Cursor()
	for k, id := cur.First(); k != nil; k, id = cur.First() {
		v := jobs.Get(id)
		over := count > int64(j.cfg.maxEntries) || (total > j.cfg.maxBytes && count > 1)
		if !over && v != nil {
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			if !r.State.Finished() || now.Sub(r.Finished) < j.cfg.ttl {
				break
			}
		}
		if err := order.Delete(k); err != nil {
			return err
		}
		if v != nil {
			if err := jobs.Delete(id); err != nil {
				return err
			}
			if err := seqs.Delete(id); err != nil {
				return err
			}
			total -= int64(len(v))
			count--
		}
	}
	if err := setMeta(tx, keyCount, count); err != nil {
		return err
	}
	return setMeta(tx, keyBytes, total)
}

// Get returns the record of requestID; false when there is none (or it
// expired).
func (j *Journal) Get(requestID string) (Record, bool, error) {
	var r Record
	var ok bool
	err := j.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketJobs).Get([]byte(requestID))
		if v == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(v, &r)
	})
	if err != nil {
		return Record{}, false, fmt.Errorf("get %q: %w", requestID, err)
	}
	if ok && r.State.Finished() && j.cfg.now().Sub(r.Finished) >= j.cfg.ttl {
		return Record{}, false, nil
	}
	return r, ok, nil
}

// All returns every record kept, oldest written first (expired ones left
// out).
func (j *Journal) All() ([]Record, error) {
	var out []Record
	now := j.cfg.now()
	err := j.db.View(func(tx *bolt.Tx) error {
		jobs := tx.Bucket(bucketJobs)
		return tx.Bucket(bucketOrder).ForEach(func(_, id []byte) error {
			v := jobs.Get(id)
			if v == nil {
				return nil
			}
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("record %q: %w", id, err)
			}
			if r.State.Finished() && now.Sub(r.Finished) >= j.cfg.ttl {
				return nil
			}
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return out, nil
}

// Close closes the file (and releases its lock).
func (j *Journal) Close() error { return j.db.Close() }
