// Package doccheck holds one test, TestEveryExportedNameHasDoc, which
// keeps the rule that every exported name in the repository reads well
// on pkg.go.dev: each package has a package comment, and each exported
// function, method, type, constant, variable, struct field and interface
// method has a doc comment, which for a declaration begins with the
// name it documents ("A", "An" or "The" may come first, as go doc
// allows). A comment on a const or var group covers its members, as does
// a line comment on a member; fields on consecutive lines may share the
// comment above the first of them when it names each one.
//
// The test walks the whole repository tree as plain files, nested
// modules included (observe/otel, bench, examples/sdk). It only parses
// source, it never type-checks or imports it, so it needs nothing from
// those modules' dependency graphs; and one walker run by the root
// module's `go test ./...` cannot drift from copies kept in each nested
// module, nor be forgotten when a new module is added. The price is
// that running the tests of a nested module alone does not check its
// docs; `make test` runs the root module, so the rule holds in CI.
package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestEveryExportedNameHasDoc fails with one line per finding, each
// naming the file, the line and what is missing, so a reader can fix
// the lot from one run.
func TestEveryExportedNameHasDoc(t *testing.T) {
	root := repoRoot(t)
	findings, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) > 0 {
		t.Errorf("%d exported names lack a proper doc comment:\n%s",
			len(findings), strings.Join(findings, "\n"))
	}
}

// TestCheckerFlagsEachKindOfGap runs the checker on a small package
// written to hold one gap of every kind it looks for, so the test above
// cannot pass just because the checker went blind.
func TestCheckerFlagsEachKindOfGap(t *testing.T) {
	dir := t.TempDir()
	src := `package gaps

type Undocumented struct {
	Field int
	// Documented is fine.
	Documented int
	hidden     int
	// Start and End share this comment, which names them both.
	Start int
	End   int
	// Named is documented; the field after it is not.
	Named int
	Stray int
}

// Wrong starts with another word.
type Misnamed interface {
	Method()
}

func (Undocumented) Method() {}

func (u *Undocumented) PtrMethod() {}

func (unexported) Method() {}

type unexported struct{}

func Func() {}

const Lone = 1

var (
	Grouped = 1
	// Grouped2 is documented.
	Grouped2 = 2
	Trailing = 3 // Trailing has a line comment, which is enough in a group.
)

// Such values share a group comment, which covers them all.
const (
	A = 1
	B = 2
)
`
	if err := os.WriteFile(filepath.Join(dir, "gaps.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := check(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"gaps.go:1: package gaps has no package doc comment in any file",
		"gaps.go:3: type Undocumented has no doc comment",
		"gaps.go:4: field Undocumented.Field has no doc comment",
		"gaps.go:13: field Undocumented.Stray has no doc comment",
		"gaps.go:17: doc comment of type Misnamed should begin with \"Misnamed\"",
		"gaps.go:18: method Misnamed.Method has no doc comment",
		"gaps.go:21: method Undocumented.Method has no doc comment",
		"gaps.go:23: method Undocumented.PtrMethod has no doc comment",
		"gaps.go:29: func Func has no doc comment",
		"gaps.go:31: const Lone has no doc comment",
		"gaps.go:34: var Grouped has no doc comment",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// repoRoot is the directory holding the root module's go.mod, two levels
// above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found above the test: %v", err)
	}
	return root
}

// check parses every non-test .go file under root (skipping testdata,
// hidden directories and vendor) and returns its findings sorted by file
// and line, each relative to root.
func check(root string) ([]string, error) {
	fset := token.NewFileSet()
	// Files of one package, by directory and package name: a package
	// comment in any one of them is enough.
	type pkgKey struct{ dir, name string }
	pkgs := map[pkgKey][]*ast.File{}
	var findings []finding
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		k := pkgKey{filepath.Dir(path), f.Name.Name}
		pkgs[k] = append(pkgs[k], f)
		findings = append(findings, checkFile(fset, f)...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for k, files := range pkgs {
		documented := false
		for _, f := range files {
			if f.Doc != nil {
				documented = true
			}
		}
		if !documented {
			// Report it at the first file by name, so the finding is stable.
			first := files[0]
			for _, f := range files[1:] {
				if fset.Position(f.Package).Filename < fset.Position(first.Package).Filename {
					first = f
				}
			}
			findings = append(findings, finding{fset.Position(first.Package),
				fmt.Sprintf("package %s has no package doc comment in any file", k.name)})
		}
	}
	sort.Slice(findings, func(i, j int) bool {
		a, b := findings[i].pos, findings[j].pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Line < b.Line
	})
	out := make([]string, len(findings))
	for i, f := range findings {
		rel, err := filepath.Rel(root, f.pos.Filename)
		if err != nil {
			rel = f.pos.Filename
		}
		out[i] = fmt.Sprintf("%s:%d: %s", filepath.ToSlash(rel), f.pos.Line, f.msg)
	}
	return out, nil
}

// finding is one gap: where it is and what is missing.
type finding struct {
	pos token.Position
	msg string
}

// checkFile returns the gaps of one file's top-level declarations.
func checkFile(fset *token.FileSet, f *ast.File) []finding {
	var out []finding
	add := func(pos token.Pos, format string, args ...any) {
		out = append(out, finding{fset.Position(pos), fmt.Sprintf(format, args...)})
	}
	// needsName reports a doc comment that is missing or does not begin
	// with name.
	needsName := func(doc *ast.CommentGroup, pos token.Pos, kind, name string) {
		switch {
		case doc == nil:
			add(pos, "%s %s has no doc comment", kind, name)
		case !beginsWith(doc.Text(), shortName(name)):
			add(pos, "doc comment of %s %s should begin with %q", kind, name, shortName(name))
		}
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				needsName(d.Doc, d.Pos(), "func", d.Name.Name)
				continue
			}
			recv := receiverType(d.Recv.List[0].Type)
			if !ast.IsExported(recv) {
				continue
			}
			needsName(d.Doc, d.Pos(), "method", recv+"."+d.Name.Name)
		case *ast.GenDecl:
			grouped := d.Lparen.IsValid()
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					doc := s.Doc
					if doc == nil && !grouped {
						doc = d.Doc
					}
					needsName(doc, s.Pos(), "type", s.Name.Name)
					checkTypeBody(fset, s, add)
				case *ast.ValueSpec:
					kind := d.Tok.String()
					for _, n := range s.Names {
						if !n.IsExported() {
							continue
						}
						switch {
						case grouped && d.Doc != nil:
							// A comment on the group covers its members.
						case s.Doc != nil:
							if len(s.Names) == 1 && !grouped {
								needsName(s.Doc, n.Pos(), kind, n.Name)
							}
						case !grouped && d.Doc != nil:
							if len(s.Names) == 1 {
								needsName(d.Doc, n.Pos(), kind, n.Name)
							}
						case grouped && s.Comment != nil:
							// A line comment documents a member of a group.
						default:
							add(n.Pos(), "%s %s has no doc comment", kind, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// checkTypeBody flags the exported fields of an exported struct type and
// the methods of an exported interface type that carry no comment, above
// or at the end of the line. A run of fields on consecutive lines may
// share the comment above its first field ("Start and End bound…"), as
// long as that comment names each of them. Embedded fields and
// interfaces are left alone: the embedded type carries its own doc.
func checkTypeBody(fset *token.FileSet, s *ast.TypeSpec, add func(token.Pos, string, ...any)) {
	var list *ast.FieldList
	kind := "field"
	switch t := s.Type.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list, kind = t.Methods, "method"
	default:
		return
	}
	line := func(p token.Pos) int { return fset.Position(p).Line }
	for i, field := range list.List {
		if field.Doc != nil || field.Comment != nil {
			continue
		}
		// The comment of the run this field closes, if any.
		var shared *ast.CommentGroup
		for j := i - 1; j >= 0 && line(list.List[j].End())+1 == line(list.List[j+1].Pos()); j-- {
			if list.List[j].Doc != nil {
				shared = list.List[j].Doc
				break
			}
			if list.List[j].Comment != nil {
				break
			}
		}
		for _, n := range field.Names {
			if n.IsExported() && (shared == nil || !mentions(shared.Text(), n.Name)) {
				add(n.Pos(), "%s %s.%s has no doc comment", kind, s.Name.Name, n.Name)
			}
		}
	}
}

// mentions reports whether text holds name as a whole word.
func mentions(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !isWordByte(text[start-1])) && (end == len(text) || !isWordByte(text[end])) {
			return true
		}
		i = end
	}
}

// isWordByte reports whether b can be part of a Go identifier.
func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// receiverType is the name of a method's receiver type, without the
// pointer or the type parameters.
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// shortName is the part of "Type.Method" a doc comment begins with.
func shortName(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// beginsWith reports whether doc begins with name as a word, optionally
// after an article ("A Client is…", "The Gateway…"), the forms go doc
// and the old golint accept. A deprecation notice is not such a start.
func beginsWith(doc, name string) bool {
	for _, article := range []string{"", "A ", "An ", "The "} {
		rest, ok := strings.CutPrefix(doc, article+name)
		if !ok {
			continue
		}
		if rest == "" {
			return true
		}
		switch rest[0] {
		case ' ', '\n', ',', '.', ':', ';', '(', '\'', '\t':
			return true
		}
	}
	return false
}
