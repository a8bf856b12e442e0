package cuzkv1

import (
	"fmt"

	"github.com/otelcuzk/otelcuzk/prover/priority"
)

// This file is written by hand: the conversions between the wire enum
// Priority and the one priority.Priority of the client, the server and
// the engine, here beside the generated API so that package priority links
// no gRPC.

// FromPriority returns p as the wire enum; an invalid p is an error (and
// PRIORITY_UNSPECIFIED).
func FromPriority(p priority.Priority) (Priority, error) {
	switch p {
	case priority.Low:
		return Priority_LOW, nil
	case priority.Normal:
		return Priority_NORMAL, nil
	case priority.High:
		return Priority_HIGH, nil
	case priority.Critical:
		return Priority_CRITICAL, nil
	}
	return Priority_PRIORITY_UNSPECIFIED, fmt.Errorf("unknown priority %d", int(p))
}

// ToPriority returns the priority.Priority of a wire value:
// PRIORITY_UNSPECIFIED (a request that set none) is Normal. A value this
// build does not know is an error, with Normal.
func ToPriority(v Priority) (priority.Priority, error) {
	switch v {
	case Priority_PRIORITY_UNSPECIFIED, Priority_NORMAL:
		return priority.Normal, nil
	case Priority_LOW:
		return priority.Low, nil
	case Priority_HIGH:
		return priority.High, nil
	case Priority_CRITICAL:
		return priority.Critical, nil
	}
	return priority.Normal, fmt.Errorf("unknown priority %d", int32(v))
}
