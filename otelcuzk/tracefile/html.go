package tracefile

import (
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/otelcuzk/otelcuzk/internal/human"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// waterfallHTML is the page: styles, an empty table and the script that
// fills it from the embedded JSON. No external assets, so the file works
// offline and from any directory.
//
//go:embed waterfall.html
var waterfallHTML string

// htmlTrace is the JSON the page's script reads (element "trace-data").
type htmlTrace struct {
	TraceID    string      `json:"trace_id"`
	DurationMS float64     `json:"duration_ms"`
	Services   []string    `json:"services"`
	Spans      []htmlSpan  `json:"spans"`
	Layers     []htmlLayer `json:"layers"`
}

// htmlSpan is one row of the waterfall, in tree order (parent before its
// children, siblings by start time).
type htmlSpan struct {
	SpanID       string         `json:"span_id"`
	ParentID     string         `json:"parent_id,omitempty"`
	Name         string         `json:"name"`
	Service      string         `json:"service"`
	Depth        int            `json:"depth"`
	StartMS      float64        `json:"start_ms"` // from the trace's first span start
	DurationMS   float64        `json:"duration_ms"`
	UntracedMS   float64        `json:"untraced_ms"` // of this span, no child covers it
	UntracedSpan bool           `json:"untraced_span,omitempty"`
	Error        bool           `json:"error,omitempty"`
	Attributes   map[string]any `json:"attributes,omitempty"`
}

// htmlLayer is one row of Layers: the time of one kind of child (or the
// parent's untraced time) inside one kind of parent.
type htmlLayer struct {
	Parent  string  `json:"parent"`
	Name    string  `json:"name"`
	Spans   int     `json:"spans"`
	TotalMS float64 `json:"total_ms"`
	Share   float64 `json:"share"` // of the parents' summed duration, 0..1
}

// WriteHTML writes the spans of one trace (as FetchJaeger, FetchTempo or
// ReadOTLPJSONLines give them) as one self-contained HTML page: a
// waterfall of every span (indented by depth; start offset, duration and
// untraced time in ms, as BuildTraces computes them; a bar on the trace's
// time axis; a click shows the attributes), with `untraced` spans hatched,
// and the Layers summary of where the time went. The spans travel as JSON
// in the page and its script draws the rows, so the page needs no network.
// Spans whose parent is absent (a caller's span that was not exported) are
// drawn as roots; spans of other traces than the first span's are left
// out. It returns an error when there is no span or w fails.
func WriteHTML(w io.Writer, spans []Span) error {
	page, err := buildHTMLTrace(spans)
	if err != nil {
		return err
	}
	// json.Marshal escapes <, > and & as \u003c..., so no span name or
	// attribute can close the script element.
	data, err := json.Marshal(page)
	if err != nil {
		return fmt.Errorf("HTML: %w", err)
	}
	out := htmlPage{waterfallHTML, "trace-data", "the waterfall"}.render("trace "+page.TraceID, data)
	if _, err := io.WriteString(w, out); err != nil {
		return fmt.Errorf("write HTML: %w", err)
	}
	return nil
}

func buildHTMLTrace(spans []Span) (*htmlTrace, error) {
	if len(spans) == 0 {
		return nil, errors.New("HTML: trace has no spans")
	}
	var t *Trace
	traces := BuildTraces(spans)
	for i := range traces {
		if traces[i].ID == spans[0].TraceID {
			t = &traces[i]
		}
	}
	if t == nil {
		return nil, fmt.Errorf("HTML: trace %s: %w", spans[0].TraceID, ErrTraceNotFound)
	}
	page := &htmlTrace{TraceID: t.ID, DurationMS: human.Milliseconds(t.Duration()), Services: t.Services()}
	t.Walk(func(n *Node) bool {
		page.Spans = append(page.Spans, htmlSpan{
			SpanID:       n.SpanID,
			ParentID:     n.ParentID,
			Name:         n.Name,
			Service:      n.Service,
			Depth:        n.Depth,
			StartMS:      human.Milliseconds(n.Start.Sub(t.Start)),
			DurationMS:   human.Milliseconds(n.Duration()),
			UntracedMS:   human.Milliseconds(n.Untraced),
			UntracedSpan: n.Name == semconv.SpanUntraced,
			Error:        n.Status.Code == StatusError,
			Attributes:   htmlAttrs(n.Attrs),
		})
		return true
	})
	for _, l := range Layers(*t) {
		page.Layers = append(page.Layers, htmlLayer{
			Parent: l.Parent, Name: l.Name, Spans: l.Count, TotalMS: human.Milliseconds(l.Duration), Share: l.Share,
		})
	}
	return page, nil
}

// htmlAttrs makes attribute values JSON-friendly: bytes as hex.
func htmlAttrs(attrs map[string]any) map[string]any {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]any, len(attrs))
	for k, v := range attrs {
		if b, ok := v.([]byte); ok {
			v = hex.EncodeToString(b)
		}
		v = finiteJSON(v)
		out[k] = v
	}
	return out
}

// finiteJSON returns v with every NaN or ±Inf float, also inside arrays,
// spelled as a string: JSON has no such numbers (OTLP JSON spells them as
// strings too), and json.Marshal refuses them.
func finiteJSON(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case []float64:
		out := make([]any, len(x))
		for i, f := range x {
			out[i] = finiteJSON(f)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = finiteJSON(e)
		}
		return out
	}
	return v
}
