// Package priority holds the one Priority type of cuzk: the order in which
// queued proofs are taken. The client, the gRPC server and the engine share
// it, and its conversions to and from the wire enum (cuzk.v1.Priority) are
// here, in one place. It imports the generated API only: no gnark and no
// cgo, so Curio links it through prover/client (a test checks `go list
// -deps`).
package priority

import (
	"fmt"
	"strings"

	cuzkv1 "github.com/otelcuzk/otelcuzk/prover/api/cuzkv1"
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

// Proto returns p as the wire enum; an invalid p is an error (and
// PRIORITY_UNSPECIFIED).
func (p Priority) Proto() (cuzkv1.Priority, error) {
	switch p {
	case Low:
		return cuzkv1.Priority_LOW, nil
	case Normal:
		return cuzkv1.Priority_NORMAL, nil
	case High:
		return cuzkv1.Priority_HIGH, nil
	case Critical:
		return cuzkv1.Priority_CRITICAL, nil
	}
	return cuzkv1.Priority_PRIORITY_UNSPECIFIED, fmt.Errorf("unknown priority %d", int(p))
}

// FromProto returns the Priority of a wire value: PRIORITY_UNSPECIFIED (a
// request that set none) is Normal. A value this build does not know is an
// error, with Normal.
func FromProto(v cuzkv1.Priority) (Priority, error) {
	switch v {
	case cuzkv1.Priority_PRIORITY_UNSPECIFIED, cuzkv1.Priority_NORMAL:
		return Normal, nil
	case cuzkv1.Priority_LOW:
		return Low, nil
	case cuzkv1.Priority_HIGH:
		return High, nil
	case cuzkv1.Priority_CRITICAL:
		return Critical, nil
	}
	return Normal, fmt.Errorf("unknown priority %d", int32(v))
}
