package natsconn

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const natsImport = "github.com/nats-io/nats.go"

// Ways to set a connection's event handlers in nats.go: Conn methods,
// connect options, and Options fields.
var (
	handlerSetters = []string{
		"SetErrorHandler", "SetDisconnectHandler", "SetDisconnectErrHandler",
		"SetReconnectHandler", "SetClosedHandler", "SetDiscoveredServersHandler",
	}
	handlerOptions = []string{
		"ErrorHandler", "DisconnectHandler", "DisconnectErrHandler", "ConnectHandler",
		"ReconnectHandler", "ReconnectErrHandler", "ClosedHandler",
		"DiscoveredServersHandler", "LameDuckModeHandler",
	}
	handlerFields = []string{
		"AsyncErrorCB", "ClosedCB", "DisconnectedCB", "DisconnectedErrCB", "ConnectedCB",
		"ReconnectedCB", "ReconnectErrCB", "DiscoveredServersCB", "LameDuckModeHandler",
	}
)

// handlerSets lists where f sets a connection handler, as file:line: what.
func handlerSets(fset *token.FileSet, f *ast.File) []string {
	natsName := ""
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == natsImport {
			natsName = "nats"
			if imp.Name != nil {
				natsName = imp.Name.Name
			}
		}
	}
	var found []string
	report := func(n ast.Node, what string) {
		found = append(found, fset.Position(n.Pos()).String()+": "+what)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			name := n.Sel.Name
			if x, ok := n.X.(*ast.Ident); ok && natsName != "" && x.Name == natsName {
				if slices.Contains(handlerOptions, name) {
					report(n, natsName+"."+name)
				}
				return true
			}
			if slices.Contains(handlerSetters, name) || slices.Contains(handlerFields, name) {
				report(n, "."+name)
			}
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok && slices.Contains(handlerFields, k.Name) {
				report(n, k.Name+":")
			}
		}
		return true
	})
	return found
}

// moduleRoot is the directory of go.mod above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package")
		}
		dir = parent
	}
}

// TestOnlyNatsconnSetsHandlers keeps the connection's handlers in one
// place: natsconn's asynchronous error handler stops the command on a
// permission violation and sends the rest to the command's logger, and a
// handler set elsewhere replaces it (as the replay publisher's once did,
// so that a refused republish waited out its timeouts).
func TestOnlyNatsconnSetsHandlers(t *testing.T) {
	root := moduleRoot(t)
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var offences, ours []string
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		sets := handlerSets(fset, f)
		if filepath.Dir(path) == here {
			ours = append(ours, sets...)
		} else {
			offences = append(offences, sets...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(offences) > 0 {
		t.Errorf("only pkg/natsconn sets connection handlers; found:\n%s", strings.Join(offences, "\n"))
	}
	// The scan sees what it is looking for: natsconn's own handlers.
	if files < 100 || len(ours) == 0 {
		t.Errorf("scanned %d files, found natsconn's handlers at %v: the scan looks in the wrong place", files, ours)
	}
}

func TestHandlerSetsFindsEveryForm(t *testing.T) {
	src := `package x

import n "github.com/nats-io/nats.go"

func f(nc *n.Conn) {
	nc.SetErrorHandler(nil)
	set := nc.SetClosedHandler
	_ = set
	_, _ = n.Connect("", n.ReconnectHandler(nil))
	opts := n.GetDefaultOptions()
	opts.AsyncErrorCB = nil
	_ = n.Options{DisconnectedErrCB: nil}
	_ = n.Name("not a handler")
	nc.StatusChanged()
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := handlerSets(fset, f)
	var whats []string
	for _, g := range got {
		whats = append(whats, g[strings.LastIndex(g, ": ")+2:])
	}
	want := []string{".SetErrorHandler", ".SetClosedHandler", "n.ReconnectHandler", ".AsyncErrorCB", "DisconnectedErrCB:"}
	if !slices.Equal(whats, want) {
		t.Errorf("found %q, want %q", whats, want)
	}
}
