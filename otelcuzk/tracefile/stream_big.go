package tracefile

import (
	"encoding/json"
	"errors"
	"fmt"
)

// bigValueBytes: a value longer than this is decoded span by span
// (decodeBig) instead of whole. A variable for the tests.
var bigValueBytes = 1 << 20

// decodeEach decodes every JSON value of data as an OTLP traces document
// and hands its spans to deliver, all or none: parseErr when a value does
// not parse (nothing was delivered then), deliverErr for deliver's first
// error. Values up to bigValueBytes are decoded whole; a longer one (a
// Collector's export of many spans on one line, up to the 64 MiB cap) is
// decoded span by span, so memory is about the value itself rather than
// several times it (its decoded form and its spans, all at once: two lines
// of 63 MB took 454 MB).
func decodeEach(data []byte, deliver func([]Span) error) (parseErr, deliverErr error) {
	if len(data) <= bigValueBytes {
		spans, err := decodeValues(data)
		if err != nil {
			return err, nil
		}
		return nil, deliver(spans)
	}
	return decodeBig(data, deliver)
}

// decodeBig is decodeEach for a long value, with decodeValues' result
// (the same spans, in the same order; an error when it gives one). The
// values are decoded by encoding/json into skeletons of linesDoc whose
// spans are left as slices of data (rawSpan), so encoding/json's rules
// (keys matched without case, the last of a repeated key winning, null)
// are the same as decodeValues'. Each span is decoded three times: as
// encoding/json meets it, to check them all before any is delivered, and
// to deliver it.
func decodeBig(data []byte, deliver func([]Span) error) (parseErr, deliverErr error) {
	var docs []skelDoc
	if err := splitValues(data, func(v []byte) error {
		var d skelDoc
		if err := json.Unmarshal(v, &d); err != nil {
			return plainTypeError(err)
		}
		docs = append(docs, d)
		return nil
	}); err != nil {
		return err, nil
	}
	for i := range docs {
		if err := docs[i].each(func(Span) error { return nil }); err != nil {
			return err, nil
		}
	}
	one := make([]Span, 1)
	for i := range docs {
		err := docs[i].each(func(s Span) error {
			one[0] = s
			return deliver(one)
		})
		if err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// splitValues hands fn each top-level value of data, found by its braces
// (braceState). A value that is not an object is an error, as it is for
// decodeValues (no OTLP traces document is anything else); so is one cut
// short.
func splitValues(data []byte, fn func([]byte) error) error {
	i := 0
	for {
		for i < len(data) && linesSpace(data[i]) {
			i++
		}
		if i == len(data) {
			return nil
		}
		if data[i] != '{' {
			return fmt.Errorf("invalid character %q looking for the start of an OTLP traces document", data[i])
		}
		var b braceState
		end := -1
		for j := i; j < len(data); j++ {
			b.step(data[j])
			if b.depth == 0 && !b.inString {
				end = j + 1
				break
			}
		}
		if end < 0 {
			return errors.New("unexpected end of JSON input")
		}
		if err := fn(data[i:end]); err != nil {
			return err
		}
		i = end
	}
}

// skelDoc is linesDoc with each span left undecoded.
type skelDoc = otlpDoc[rawSpan]

// rawSpan is one span's JSON as json.Unmarshal hands it over: a slice of
// the input value (Unmarshal does not copy or reuse its input, so keeping
// the slice costs nothing; TestBigValueSpansAreSlicesOfTheInput checks it).
type rawSpan []byte

// UnmarshalJSON keeps b, once it decodes as a span: decodeValues fails a
// value on a span that does not decode (a number that is no number) even
// where a repeated key then replaces that span, so the check is made here,
// on every span encoding/json meets, not only on those that remain.
func (r *rawSpan) UnmarshalJSON(b []byte) error {
	var ls linesSpan
	if err := json.Unmarshal(b, &ls); err != nil {
		return err
	}
	*r = b
	return nil
}

// span decodes r as linesDoc does its spans.
func (r rawSpan) span(res resourceInfo) (Span, error) {
	var ls linesSpan
	if err := json.Unmarshal(r, &ls); err != nil {
		return Span{}, err
	}
	return ls.span(res)
}
