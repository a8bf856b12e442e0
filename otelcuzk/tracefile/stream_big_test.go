package tracefile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// bigLine is one OTLP JSON line of n spans of one trace, each with two
// attributes.
func bigLine(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"cuzk"}}]},"scopeSpans":[{"scope":{"name":"cuzk"},"spans":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"%016x","parentSpanId":"0000000000000001","name":"cuda.kernel","startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"cuda.stream","value":{"intValue":"3"}},{"key":"cuzk.kernel","value":{"stringValue":"msm_window_%d"}}]}`, i+2, 1000+i, 2000+i, i%20)
	}
	b.WriteString(`]}]}]}`)
	return []byte(b.String())
}

// A long line is decoded span by span: when its first span is delivered,
// the others are not in memory as spans (decoded whole, the line's spans
// took about 1.5 times the line, all at once).
func TestALongValueIsDecodedSpanBySpan(t *testing.T) {
	data := bigLine(20_000)
	if len(data) <= bigValueBytes {
		t.Fatalf("line of %d bytes, want over %d", len(data), bigValueBytes)
	}
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	var grown uint64
	n := 0
	perr, derr := decodeEach(data, func(spans []Span) error {
		if n == 0 {
			runtime.GC()
			runtime.ReadMemStats(&m)
			grown = m.HeapAlloc - min(base, m.HeapAlloc)
		}
		n += len(spans)
		return nil
	})
	if perr != nil || derr != nil || n != 20_000 {
		t.Fatalf("decodeEach: %v, %v, %d spans; want 20000", perr, derr, n)
	}
	if grown > uint64(len(data))/4 {
		t.Errorf("heap grew by %d bytes before the first span of a %d-byte line was delivered, want under a quarter of the line", grown, len(data))
	}
}

// The spans decodeBig keeps between its passes are slices of its input,
// not copies (encoding/json's Unmarshal hands an Unmarshaler a slice of
// the input): otherwise a long line would be held twice.
func TestBigValueSpansAreSlicesOfTheInput(t *testing.T) {
	data := bigLine(3)
	var d skelDoc
	if err := splitValues(data, func(v []byte) error { return jsonUnmarshal(v, &d) }); err != nil {
		t.Fatal(err)
	}
	raw := (*d.ResourceSpans)[0].ScopeSpans[0].Spans[1]
	off := cap(data) - cap(raw)
	if off < 0 || off >= len(data) || &data[off] != &raw[0] {
		t.Fatalf("span %q is a copy, not a slice of the input", raw)
	}
}

// FuzzDecodeBigAgreesWithDecodeValues: the span-by-span decoder gives what
// the whole decoder gives (the same spans in order, or an error when it
// errs) on any input, so a line's size never changes what is read.
func FuzzDecodeBigAgreesWithDecodeValues(f *testing.F) {
	line := string(bigLine(2))
	span := `{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00000000000000a1","name":"x","startTimeUnixNano":"1","endTimeUnixNano":"2"}`
	for _, seed := range []string{
		line,
		line + "\n" + line,
		line + line,
		`{"batches":[{"scopeSpans":[{"spans":[` + span + `]}]}]}`,
		`{"trace":{"resourceSpans":[{"instrumentationLibrarySpans":[{"spans":[` + span + `]}]}]}}`,
		`{"RESOURCESPANS":[{"ScopeSpans":[{"SPANS":[` + span + `]}]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[` + span + `]}]}],"resourceSpans":[]}`,
		`{"resourceSpans":null,"batches":[{"scopeSpans":[{"spans":[` + span + `,null]}]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[` + span + `]}],"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"late"}}]}}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[` + span + `,{"traceId":"zz"}]}]}]}`,
		`{"resourceSpans":[]} 5`,
		`[` + line + `]`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":"x"}]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[` + span,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, werr := decodeValues(data)
		var big []Span
		perr, derr := decodeBig(data, func(spans []Span) error {
			big = append(big, spans...)
			return nil
		})
		if derr != nil {
			t.Fatalf("deliver error %v from a deliver that returns nil", derr)
		}
		if (werr == nil) != (perr == nil) {
			t.Fatalf("whole: %v; span by span: %v", werr, perr)
		}
		if perr != nil {
			if len(big) != 0 {
				t.Fatalf("%d spans delivered from a value that does not parse", len(big))
			}
			return
		}
		if len(whole) != len(big) || (len(whole) > 0 && !reflect.DeepEqual(whole, big)) {
			t.Fatalf("whole decode gave %d spans, span by span %d:\n%+v\n%+v", len(whole), len(big), whole, big)
		}
	})
}

func jsonUnmarshal(v []byte, d *skelDoc) error { return json.Unmarshal(v, d) }
