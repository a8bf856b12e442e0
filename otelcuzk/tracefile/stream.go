package tracefile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// DefaultMaxLineBytes caps one JSON value in ScanOTLPJSONLines: far above
// what otelcuzk's file exporter writes (one batch of at most 512 spans a
// line, a few hundred KiB) and the Collector's file exporter (one export
// request a line), so only damage or a file that is not a trace reaches it.
const DefaultMaxLineBytes = 64 << 20

// ErrLineTooLong is wrapped by the skip error of a value over the cap.
var ErrLineTooLong = semconv.NewError(semconv.ErrorTypeInvalidRequest, "line over the size cap")

// ScanOptions controls ScanOTLPJSONLines. The zero value reads every span
// with the default cap.
type ScanOptions struct {
	// TraceID, when set (32 hex digits, any case), passes on only the spans
	// of that trace; the others are decoded and dropped at once.
	TraceID string
	// MaxLineBytes caps one JSON value (a line, or a document spread over
	// several lines); 0 means DefaultMaxLineBytes. A longer one is skipped
	// without being held: memory stays within about twice the cap however
	// long the input is (a 10 GB file with no newline, /dev/zero).
	MaxLineBytes int
}

// utf8BOM is the UTF-8 byte-order mark, skipped at the start of a file.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// ScanOTLPJSONLines reads OTLP JSON traces as ReadOTLPJSONLines does (the
// same shapes: otelcuzk's and the Collector's JSON lines, Tempo's
// documents) but streaming: each span is passed to fn as soon as the value
// holding it has been read, and only one value is in memory at a time, so
// a file that processes append to for ever is read in time linear in its
// size and memory bounded by opts.MaxLineBytes.
//
// Values are found by their braces: a line that closes every brace it
// opens is one value (or several, `{...}{...}`); a line that leaves one
// open continues on the next lines, so a document spread over many lines
// (a pretty-printed Tempo answer) is read whole. A value that does not
// parse, one over the cap, and one cut short (a write of a killed process:
// the next line that is a whole OTLP document by itself,
// `{"resourceSpans":...}`, or the end of the input ends it) is skipped:
// skip receives one error per skipped line, naming it and wrapping
// ErrMalformed (and ErrLineTooLong for the cap), and the lines of a broken
// multi-line value are then read one by one so that none of its good
// lines is lost. A value over the cap is reported to skip as soon as it
// passes the cap, before its end is found. skip may be nil.
//
// Spans are not deduplicated here (a trace's tree keeps a span id once, see
// BuildTraces and Collector). It returns fn's first error, or an error
// reading r; an opts.TraceID that is not a trace id is an error before
// anything is read.
func ScanOTLPJSONLines(r io.Reader, opts ScanOptions, fn func(Span) error, skip func(error)) error {
	want := ""
	if opts.TraceID != "" {
		id, err := NormalizeTraceID(opts.TraceID)
		if err != nil {
			return err
		}
		want = id
	}
	limit := opts.MaxLineBytes
	if limit <= 0 {
		limit = DefaultMaxLineBytes
	}
	if skip == nil {
		skip = func(error) {}
	}
	br := bufio.NewReaderSize(r, min(1<<20, max(4096, limit+1)))
	// A byte-order mark (Windows editors and PowerShell's redirection
	// write one) is not part of the first document.
	if b, _ := br.Peek(len(utf8BOM)); bytes.Equal(b, utf8BOM) {
		_, _ = br.Discard(len(utf8BOM))
	}
	sc := &lineScanner{r: br, max: limit, onOver: func(n int) {
		skip(fmt.Errorf("line %d: %w: %w: longer than %d bytes, skipped", n, ErrMalformed, ErrLineTooLong, limit))
	}}
	deliver := func(spans []Span) error {
		for _, s := range spans {
			if want != "" && s.TraceID != want {
				continue
			}
			if err := fn(s); err != nil {
				return err
			}
		}
		return nil
	}

	var (
		pending      []byte // a value left open by the lines so far
		pendingFirst int    // its first line number
		state        braceState
		resync       bool // inside a value over the cap: skip to the next document start
	)
	// flushBroken reads a value that did not parse line by line: each line
	// that is a value by itself is kept, every other line skipped.
	flushBroken := func(buf []byte, first int) error {
		for i, l := range bytes.Split(buf, []byte{'\n'}) {
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			derr, err := decodeEach(l, deliver)
			if derr != nil {
				skip(fmt.Errorf("line %d: %w: %v", first+i, ErrMalformed, derr))
				continue
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	for {
		line, n, over, err := sc.next()
		if err != nil && err != io.EOF {
			return fmt.Errorf("read: %w", err)
		}
		if line == nil && !over && err == io.EOF {
			break
		}
		if over {
			if pending != nil {
				if err := flushBroken(pending, pendingFirst); err != nil {
					return err
				}
				pending = nil
			}
			if err == io.EOF {
				break
			}
			continue
		}
		trimmed := bytes.TrimSpace(line)
		startsDoc := isDocumentStart(trimmed)
		if resync {
			if !startsDoc {
				if err == io.EOF {
					break
				}
				continue
			}
			resync = false
		}
		if pending != nil && startsDoc {
			// The open value was cut short: this line is a document of
			// its own, never the middle of one.
			if err := flushBroken(pending, pendingFirst); err != nil {
				return err
			}
			pending = nil
		}
		switch {
		case pending == nil && len(trimmed) == 0:
		case pending == nil:
			state = braceState{}
			state.feed(line)
			if state.closed() {
				derr, err := decodeEach(line, deliver)
				if derr != nil {
					skip(fmt.Errorf("line %d: %w: %v", n, ErrMalformed, derr))
				} else if err != nil {
					return err
				}
			} else {
				pending = append(make([]byte, 0, max64k(len(line))), line...)
				pendingFirst = n
			}
		default:
			if len(pending)+1+len(line) > limit {
				skip(fmt.Errorf("lines %d-%d: %w: %w: a value longer than %d bytes, skipped", pendingFirst, n, ErrMalformed, ErrLineTooLong, limit))
				pending = nil
				resync = true
				break
			}
			pending = append(append(pending, '\n'), line...)
			state.feed(line)
			if state.closed() {
				derr, err := decodeEach(pending, deliver)
				if derr != nil {
					if err := flushBroken(pending, pendingFirst); err != nil {
						return err
					}
				} else if err != nil {
					return err
				}
				pending = nil
			}
		}
		if err == io.EOF {
			break
		}
	}
	if pending != nil {
		return flushBroken(pending, pendingFirst)
	}
	return nil
}

func max64k(n int) int { return max(n*2, 64<<10) }

// NormalizeTraceID returns id as 32 lowercase hex digits, left-padding a
// shorter hex id with zeros as Jaeger does; anything else (not hex, longer
// than 32 digits, all zero) is an error saying it is not a trace id.
func NormalizeTraceID(id string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(id))
	if s == "" || len(s) > 32 || strings.Trim(s, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not a trace id (want up to 32 hex digits)", id)
	}
	s = strings.Repeat("0", 32-len(s)) + s
	if strings.Trim(s, "0") == "" {
		return "", fmt.Errorf("%q is not a trace id (all zero)", id)
	}
	return s, nil
}

// isDocumentStart says whether a trimmed line opens an OTLP traces
// document by its first key, as every line of a JSON lines trace file does.
func isDocumentStart(l []byte) bool {
	if len(l) == 0 || l[0] != '{' {
		return false
	}
	l = bytes.TrimLeft(l[1:], " \t")
	for _, k := range []string{`"resourceSpans"`, `"batches"`, `"trace"`} {
		if bytes.HasPrefix(l, []byte(k)) {
			return true
		}
	}
	return false
}

// decodeValues decodes every JSON value of data as an OTLP traces document.
func decodeValues(data []byte) ([]Span, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []Span
	for {
		var doc linesDoc
		err := dec.Decode(&doc)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, plainTypeError(err)
		}
		got, err := doc.spans()
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
}

// braceState follows JSON nesting across lines, strings and escapes
// included, to tell where a value ends without parsing it.
type braceState struct {
	depth    int
	inString bool
	escaped  bool
}

func (b *braceState) feed(line []byte) {
	for _, c := range line {
		b.step(c)
	}
}

// step takes one byte of the input.
func (b *braceState) step(c byte) {
	if b.inString {
		switch {
		case b.escaped:
			b.escaped = false
		case c == '\\':
			b.escaped = true
		case c == '"':
			b.inString = false
		}
		return
	}
	switch c {
	case '"':
		b.inString = true
	case '{', '[':
		b.depth++
	case '}', ']':
		b.depth--
	}
}

// closed: every brace opened is closed. A line that ends inside a string
// is closed too: JSON strings hold no raw newline, so that value is broken
// and is better reported on its own line than glued to the next.
func (b *braceState) closed() bool { return b.depth <= 0 || b.inString }

// lineScanner returns the input's lines without their newline, holding at
// most max bytes of one.
type lineScanner struct {
	r      *bufio.Reader
	max    int
	n      int // lines returned
	buf    []byte
	onOver func(n int) // called once per line, as soon as it passes max
}

// next returns the next line and its number; line is only valid until the
// next call. over reports a line longer than max, whose bytes were
// discarded (line is nil then; onOver has been called). err is io.EOF with
// the last line (which may be non-empty) or alone.
func (s *lineScanner) next() (line []byte, n int, over bool, err error) {
	s.buf = s.buf[:0]
	if cap(s.buf) > 4<<20 {
		s.buf = nil // do not keep one huge line's buffer for the rest of the file
	}
	read := false
	for {
		frag, ferr := s.r.ReadSlice('\n')
		if !read && ferr != bufio.ErrBufferFull && len(frag) <= s.max+1 {
			// The whole line is in the reader's buffer: no copy.
			if len(frag) == 0 && ferr != nil {
				if ferr == io.EOF {
					return nil, 0, false, io.EOF
				}
				return nil, 0, false, ferr
			}
			if ferr != nil && ferr != io.EOF {
				return nil, 0, false, ferr
			}
			s.n++
			return trimEOL(frag), s.n, false, ferr
		}
		read = read || len(frag) > 0
		if !over {
			if len(s.buf)+len(frag) > s.max+1 {
				over = true
				s.buf = nil
				if s.onOver != nil {
					s.onOver(s.n + 1)
				}
			} else {
				if need := len(s.buf) + len(frag); need > cap(s.buf) {
					// Grow by doubling but never past the cap, so a
					// line at the cap holds about the cap, not twice.
					grown := make([]byte, len(s.buf), min(max(2*cap(s.buf), need, 64<<10), s.max+1))
					copy(grown, s.buf)
					s.buf = grown
				}
				s.buf = append(s.buf, frag...)
			}
		}
		if ferr == bufio.ErrBufferFull {
			continue
		}
		if ferr != nil && ferr != io.EOF {
			return nil, 0, false, ferr
		}
		s.n++
		if over {
			return nil, s.n, true, ferr
		}
		return trimEOL(s.buf), s.n, false, ferr
	}
}

func trimEOL(l []byte) []byte {
	l = bytes.TrimSuffix(l, []byte{'\n'})
	return bytes.TrimSuffix(l, []byte{'\r'})
}

// ReadOTLPJSONLinesSkipping is ReadOTLPJSONLines for a JSON lines file that
// processes append to (otelcuzk's file exporter, the Collector's): lines
// that do not parse (a write cut short by a killed process, say) are
// skipped instead of failing the file, as ScanOTLPJSONLines says. skipped
// holds one error per skipped line, naming it and wrapping ErrMalformed.
// err is only for reading r. A span seen twice (same trace and span id) is
// kept once. It returns every span in memory: for files of any size, use
// ScanOTLPJSONLines with a Collector.
func ReadOTLPJSONLinesSkipping(r io.Reader) (spans []Span, skipped []error, err error) {
	seen := map[[2]string]bool{}
	err = ScanOTLPJSONLines(r, ScanOptions{}, func(s Span) error {
		k := [2]string{s.TraceID, s.SpanID}
		if !seen[k] {
			seen[k] = true
			spans = append(spans, s)
		}
		return nil
	}, func(e error) { skipped = append(skipped, e) })
	return spans, skipped, err
}
