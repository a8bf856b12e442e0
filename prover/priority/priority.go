// Package priority holds the one Priority type of cuzk: the order in which
// queued proofs are taken. The client, the gRPC server and the engine share
// it; the conversions to and from the wire enum (cuzk.v1.Priority) are
// beside the generated API (cuzkv1.FromPriority, cuzkv1.ToPriority). It
// imports the standard library only: no gRPC, no gnark and no cgo, so the
// engine links no generated API through it (a test checks `go list
// -deps`).
package priority

import (
	"fmt"
	"strings"
)

// Priority orders queued work: a higher priority overtakes every lower one
// (the values compare as they rank, Low < Normal < High < Critical). The
// zero value is Normal, so a request that says nothing is Normal.
type Priority int

// The four priorities cuzk offers Curio.
const (
	Low      Priority = -1
	Normal   Priority = 0
	High     Priority = 1
	Critical Priority = 2
)

// All lists the priorities from the highest to the lowest, the order in
// which queues are served.
var All = [...]Priority{Critical, High, Normal, Low}

// Valid reports whether p is one of Low, Normal, High and Critical.
func (p Priority) Valid() bool { return Low <= p && p <= Critical }

// String returns LOW, NORMAL, HIGH or CRITICAL (the cuzk.priority
// attribute's values), or Priority(n) for an invalid p.
func (p Priority) String() string {
	switch p {
	case Low:
		return "LOW"
	case Normal:
		return "NORMAL"
	case High:
		return "HIGH"
	case Critical:
		return "CRITICAL"
	}
	return fmt.Sprintf("Priority(%d)", int(p))
}

// Parse maps LOW, NORMAL, HIGH or CRITICAL, in any case, to a Priority; any
// other string is an error naming the four.
func Parse(s string) (Priority, error) {
	for _, p := range All {
		if strings.EqualFold(s, p.String()) {
			return p, nil
		}
	}
	return Normal, fmt.Errorf("unknown priority %q (want LOW, NORMAL, HIGH or CRITICAL)", s)
}

// MarshalText writes p's name (LOW, NORMAL, HIGH, CRITICAL), so JSON and
// config files, and maps keyed by Priority in them, read as words rather
// than the numbers behind the names; an invalid p is an error.
func (p Priority) MarshalText() ([]byte, error) {
	if !p.Valid() {
		return nil, fmt.Errorf("unknown priority %d", int(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText reads a name as Parse does.
func (p *Priority) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}
