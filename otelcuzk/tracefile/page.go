package tracefile

import (
	_ "embed"
	"html"
	"strings"
)

// The three pages (waterfall.html, diff.html, timeline.html) share their
// head, common styles and script helpers, filled in by htmlPage.render: each
// page template starts with {{HEAD}} and opens its script with {{DATA}}.

// pageHead is the start of every page up to and into its open style
// element: the document head and the styles the pages share (table, lane,
// bar, axis). {{TITLE}} is the page's title.
//
//go:embed page_head.html
var pageHead string

// pageData is the data element and the start of the page's script, which
// reads the data into `data`; {{ID}} is the element's id, {{DRAWS}} what
// the page draws, {{JSON}} the data.
//
//go:embed page_data.html
var pageData string

// pageJS is the script the pages share (cells, lanes, placed bars, axis
// ticks), in the function scope of each page's script, after pageData; it
// may call the page's own fmt.
//
//go:embed page.js
var pageJS string

// htmlPage names one page: its template, the id of its data element and what
// it draws (for the noscript text).
type htmlPage struct {
	tmpl, dataID, draws string
}

// render fills the page's template with its title (HTML-escaped) and its
// data (JSON, which must have <, > and & escaped, as json.Marshal does, so
// it cannot close the script element). Each value is inserted once and not
// scanned again, so a placeholder inside the title or the data stays as it is.
func (p htmlPage) render(title string, data []byte) string {
	head := strings.Replace(pageHead, "{{TITLE}}", html.EscapeString(title), 1)
	script := strings.NewReplacer("{{ID}}", p.dataID, "{{DRAWS}}", p.draws).Replace(pageData)
	script = strings.Replace(script, "{{JSON}}", string(data), 1) + pageJS
	return strings.NewReplacer("{{HEAD}}", head, "{{DATA}}", script).Replace(p.tmpl)
}
