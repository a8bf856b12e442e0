package tracefile

import (
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/otelcuzk/otelcuzk/otelcuzk"
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

// htmlLayer sums the spans of one name.
type htmlLayer struct {
	Name       string  `json:"name"`
	Spans      int     `json:"spans"`
	TotalMS    float64 `json:"total_ms"`
	UntracedMS float64 `json:"untraced_ms"`
}

// WriteHTML writes the spans of one trace (as FetchJaeger, FetchTempo or
// ReadOTLPJSONLines give them) as one self-contained HTML page: a waterfall
// of every span (indented by depth, start offset, duration, untraced time,
// a bar on the trace's time axis; a click shows the attributes), with
// `untraced` spans hatched, and a table of time by span name. The spans
// travel as JSON in the page and its script draws the rows, so the page
// needs no network. Spans whose parent is absent (a caller's span that was
// not exported) are drawn as roots. Spans of other traces than the first
// span's are left out. It returns an error when there is no span or w
// fails.
func WriteHTML(w io.Writer, spans []Span) error {
	page, err := buildHTMLTrace(spans)
	if err != nil {
		return err
	}
	// json.Marshal escapes <, > and & as \u003c..., so no span name or
	// attribute can close the script element.
	data, err := json.Marshal(page)
	if err != nil {
		return fmt.Errorf("tracefile: HTML: %w", err)
	}
	out := strings.NewReplacer(
		"{{TITLE}}", html.EscapeString("trace "+page.TraceID),
		"{{JSON}}", string(data),
	).Replace(waterfallHTML)
	if _, err := io.WriteString(w, out); err != nil {
		return fmt.Errorf("tracefile: write HTML: %w", err)
	}
	return nil
}

type htmlNode struct {
	span     Span
	children []*htmlNode
}

func buildHTMLTrace(spans []Span) (*htmlTrace, error) {
	if len(spans) == 0 {
		return nil, errors.New("tracefile: HTML: trace has no spans")
	}
	traceID := spans[0].TraceID
	var nodes []*htmlNode
	byID := map[string]*htmlNode{}
	for _, s := range spans {
		if s.TraceID != traceID {
			continue
		}
		n := &htmlNode{span: s}
		nodes = append(nodes, n)
		byID[s.SpanID] = n
	}
	var roots []*htmlNode
	for _, n := range nodes {
		if p, ok := byID[n.span.ParentID]; ok && p != n {
			p.children = append(p.children, n)
		} else {
			roots = append(roots, n)
		}
	}
	t0, t1 := nodes[0].span.Start, nodes[0].span.End
	for _, n := range nodes {
		if n.span.Start.Before(t0) {
			t0 = n.span.Start
		}
		if n.span.End.After(t1) {
			t1 = n.span.End
		}
	}
	page := &htmlTrace{TraceID: traceID, DurationMS: durMS(t1.Sub(t0))}
	services := map[string]bool{}
	layers := map[string]*htmlLayer{}
	seen := map[*htmlNode]bool{}
	var walk func(n *htmlNode, depth int)
	walk = func(n *htmlNode, depth int) {
		if seen[n] { // a parent cycle in malformed input
			return
		}
		seen[n] = true
		s := n.span
		row := htmlSpan{
			SpanID:       s.SpanID,
			ParentID:     s.ParentID,
			Name:         s.Name,
			Service:      s.Service,
			Depth:        depth,
			StartMS:      durMS(s.Start.Sub(t0)),
			DurationMS:   durMS(s.Duration()),
			UntracedMS:   untracedMS(n),
			UntracedSpan: s.Name == otelcuzk.SpanUntraced,
			Error:        s.Status.Code == StatusError,
			Attributes:   htmlAttrs(s.Attrs),
		}
		page.Spans = append(page.Spans, row)
		services[s.Service] = true
		l := layers[s.Name]
		if l == nil {
			l = &htmlLayer{Name: s.Name}
			layers[s.Name] = l
		}
		l.Spans++
		l.TotalMS += row.DurationMS
		l.UntracedMS += row.UntracedMS
		sort.SliceStable(n.children, func(i, j int) bool {
			return n.children[i].span.Start.Before(n.children[j].span.Start)
		})
		for _, c := range n.children {
			walk(c, depth+1)
		}
	}
	sort.SliceStable(roots, func(i, j int) bool { return roots[i].span.Start.Before(roots[j].span.Start) })
	for _, r := range roots {
		walk(r, 0)
	}
	for s := range services {
		page.Services = append(page.Services, s)
	}
	sort.Strings(page.Services)
	for _, l := range layers {
		page.Layers = append(page.Layers, *l)
	}
	// Largest total first: where the time went.
	sort.Slice(page.Layers, func(i, j int) bool {
		if page.Layers[i].TotalMS != page.Layers[j].TotalMS {
			return page.Layers[i].TotalMS > page.Layers[j].TotalMS
		}
		return page.Layers[i].Name < page.Layers[j].Name
	})
	return page, nil
}

// untracedMS is the time of n that none of its children (other than the
// `untraced` spans, which mark that very time) covers; 0 for a leaf, whose
// time is its own work.
func untracedMS(n *htmlNode) float64 {
	var children []otelcuzk.Interval
	for _, c := range n.children {
		if c.span.Name == otelcuzk.SpanUntraced {
			continue
		}
		children = append(children, otelcuzk.Interval{Start: c.span.Start, End: c.span.End})
	}
	if len(children) == 0 {
		return 0
	}
	total, _ := otelcuzk.Uncovered(otelcuzk.Interval{Start: n.span.Start, End: n.span.End}, children)
	return durMS(total)
}

func durMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

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
		out[k] = v
	}
	return out
}
