package tracefile

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
)

// FetchTempo reads one trace from Grafana Tempo's HTTP API: GET
// {baseURL}/api/traces/{traceID} with Accept: application/json (without it
// Tempo answers protobuf), baseURL being Tempo's HTTP address (e.g.
// http://localhost:3200). traceID is 32 hex digits (fewer are left-padded).
// The answer ({"batches":[...]}, ids in base64) is read by
// ReadOTLPJSONLines. A nil client means http.DefaultClient. It returns
// ErrTraceNotFound (wrapped) on 404 or an empty trace, and an error naming
// the URL for transport failures and other HTTP statuses.
func FetchTempo(ctx context.Context, client *http.Client, baseURL, traceID string) ([]Span, error) {
	body, err := getTrace(ctx, client, baseURL, traceID, "application/json")
	if err != nil {
		return nil, err
	}
	spans, err := ReadOTLPJSONLines(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("Tempo trace %s: %w", traceID, err)
	}
	if len(spans) == 0 {
		return nil, fmt.Errorf("%w: %s at %s", ErrTraceNotFound, traceID, baseURL)
	}
	return spans, nil
}
