package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// root is the repository root, the folder above this one.
const root = ".."

// spanConstants returns the span names of otelcuzk/semconv/names.go: each Span*
// constant's value mapped to its identifier.
func spanConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "otelcuzk", "semconv", "names.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, id := range vs.Names {
			if !strings.HasPrefix(id.Name, "Span") || i >= len(vs.Values) {
				continue
			}
			lit, ok := vs.Values[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Fatalf("%s is not a string literal", id.Name)
			}
			v, _ := strconv.Unquote(lit.Value)
			names[v] = id.Name
		}
		return true
	})
	if len(names) < 20 {
		t.Fatalf("found %d span constants in otelcuzk/semconv/names.go: not the file", len(names))
	}
	return names
}

// spanRow is one row of DESIGN.md's "Where each span is made": the span
// names of its first cell and, per file of its second, the functions named.
type spanRow struct {
	line  int
	spans []string
	files []string
	funcs map[string][]string // file -> functions ("Func" or "Type.Method")
}

var (
	backticked    = regexp.MustCompile("`([^`]+)`")
	parenthesized = regexp.MustCompile(`\([^)]*\)`)
)

// parseSpanTable reads the table of the section titled title: every row
// whose first cell holds backticked names (the header and rule are not).
func parseSpanTable(t *testing.T, doc, title string) []spanRow {
	t.Helper()
	lines, first := section(t, doc, title)
	var rows []spanRow
	for i, l := range lines {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		line := first + i
		cells := strings.Split(l, "|")
		if len(cells) != 4 {
			t.Errorf("DESIGN.md:%d: want two cells, got %q", line, l)
			continue
		}
		r := spanRow{line: line, funcs: map[string][]string{}}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			r.spans = append(r.spans, m[1])
		}
		// Remarks in parentheses name flags and callers, not the makers.
		file := ""
		for _, m := range backticked.FindAllStringSubmatch(parenthesized.ReplaceAllString(cells[2], ""), -1) {
			if strings.HasSuffix(m[1], ".go") {
				file = m[1]
				r.files = append(r.files, file)
				continue
			}
			if file == "" {
				t.Errorf("DESIGN.md:%d: function %s before any file", r.line, m[1])
				continue
			}
			r.funcs[file] = append(r.funcs[file], m[1])
		}
		if len(r.spans) == 0 || len(r.files) == 0 {
			t.Errorf("DESIGN.md:%d: a row needs span names and a file: %q", r.line, l)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatalf("DESIGN.md has no table under %q", title)
	}
	return rows
}

// declared returns the functions a Go file declares, as "Func" and
// "Type.Method" (the receiver's type without pointer or type parameters).
func declared(f *ast.File) map[string]bool {
	funcs := map[string]bool{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		if fd.Recv == nil || len(fd.Recv.List) == 0 {
			funcs[fd.Name.Name] = true
			continue
		}
		typ := fd.Recv.List[0].Type
		if s, ok := typ.(*ast.StarExpr); ok {
			typ = s.X
		}
		switch x := typ.(type) {
		case *ast.IndexExpr:
			typ = x.X
		case *ast.IndexListExpr:
			typ = x.X
		}
		if id, ok := typ.(*ast.Ident); ok {
			funcs[id.Name+"."+fd.Name.Name] = true
		}
	}
	return funcs
}

// TestDesignSpanTableMatchesTheTree: DESIGN.md's table of where each span
// is made lists every span constant of otelcuzk/semconv/names.go and only those;
// each file it names exists and declares the functions named with it, and
// one of a row's files uses each of the row's span constants.
func TestDesignSpanTableMatchesTheTree(t *testing.T) {
	doc, err := os.ReadFile("DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	consts := spanConstants(t)
	rows := parseSpanTable(t, string(doc), "Where each span is made")
	listed := map[string]int{}
	for _, r := range rows {
		srcs := map[string]string{}
		for _, file := range r.files {
			src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
			if err != nil {
				t.Errorf("DESIGN.md:%d: %v", r.line, err)
				continue
			}
			srcs[file] = string(src)
			f, err := parser.ParseFile(token.NewFileSet(), file, src, 0)
			if err != nil {
				t.Errorf("DESIGN.md:%d: %v", r.line, err)
				continue
			}
			have := declared(f)
			for _, fn := range r.funcs[file] {
				if !have[fn] {
					t.Errorf("DESIGN.md:%d: %s declares no %s", r.line, file, fn)
				}
			}
		}
		for _, name := range r.spans {
			if prev, ok := listed[name]; ok {
				t.Errorf("DESIGN.md:%d: %s already listed on line %d", r.line, name, prev)
			}
			listed[name] = r.line
			id, ok := consts[name]
			if !ok {
				t.Errorf("DESIGN.md:%d: %s is not a span constant of otelcuzk/semconv/names.go", r.line, name)
				continue
			}
			use := regexp.MustCompile(`\b` + id + `\b`)
			found := false
			for _, src := range srcs {
				found = found || use.MatchString(src)
			}
			if !found && len(srcs) == len(r.files) {
				t.Errorf("DESIGN.md:%d: none of %v uses %s (%s)", r.line, r.files, id, name)
			}
		}
	}
	var missing []string
	for name, id := range consts {
		if _, ok := listed[name]; !ok {
			missing = append(missing, id+" ("+name+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("DESIGN.md's table of where each span is made has no row for %s", m)
	}
}

// section returns the lines of DESIGN.md under the "## title" heading,
// up to the next one, with their line numbers.
func section(t *testing.T, doc, title string) (lines []string, first int) {
	t.Helper()
	all := strings.Split(doc, "\n")
	for i, l := range all {
		if l != "## "+title {
			continue
		}
		for j := i + 1; j < len(all) && !strings.HasPrefix(all[j], "## "); j++ {
			lines = append(lines, all[j])
		}
		return lines, i + 2
	}
	t.Fatalf("DESIGN.md has no section %q", title)
	return nil, 0
}

// TestDesignKernelTableMatchesTheTree: DESIGN.md's table of where each
// kernel lives has a row for every CUDA source of prover/gpu/kernels, and
// every repository path it names exists.
func TestDesignKernelTableMatchesTheTree(t *testing.T) {
	doc, err := os.ReadFile("DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	lines, first := section(t, string(doc), "Where each kernel lives")
	rowed := map[string]bool{}
	rows := 0
	for i, l := range lines {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		rows++
		cells := strings.Split(l, "|")
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			rowed[m[1]] = true
		}
		for _, m := range backticked.FindAllStringSubmatch(l, -1) {
			if p := m[1]; strings.HasPrefix(p, "prover/") {
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
					t.Errorf("DESIGN.md:%d: %v", first+i, err)
				}
			}
		}
	}
	if rows == 0 {
		t.Fatal("no rows in DESIGN.md's kernel table")
	}
	srcs, err := filepath.Glob(filepath.Join(root, "prover", "gpu", "kernels", "*.cu*"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no kernel sources found: %v", err)
	}
	for _, s := range srcs {
		rel := "prover/gpu/kernels/" + filepath.Base(s)
		if !rowed[rel] {
			t.Errorf("DESIGN.md's kernel table has no row for %s", rel)
		}
	}
}
