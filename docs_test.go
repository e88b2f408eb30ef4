package auth_test

// The documentation repeats lists that the code holds, because a reader
// needs them where they read: why a session is refused, the routes, the
// demo's flags. Each test below holds one copy to the code in both
// directions, so that an entry added on either side without the other
// fails. The code's side is read from the source with go/ast where no Go
// value enumerates it (constants), with reflect where one does, and from
// a built handler where the list is what it serves or answers. A
// list that no test holds is not repeated: the documentation points at
// go doc instead. The last tests check what the documents point at: the
// files they name, their Markdown links, and the doc links of the
// package's comments.

import (
	"context"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/emailchange"
	"github.com/latchkit/auth/emailverification"
	"github.com/latchkit/auth/passkey"
	"github.com/latchkit/auth/passwordless"
	"github.com/latchkit/auth/provider"
	"github.com/latchkit/auth/store"
	"github.com/latchkit/auth/thirdparty"
)

func TestReadmeReasons(t *testing.T) {
	want := values(constsOfType(t, "errors.go", "Reason"))
	readme := readFile(t, "README.md")
	section := markdownSection(t, readme, "### Why a session ended")
	var got []string
	for _, row := range tableRows(section) {
		got = append(got, backticked(row[0])...)
	}
	compareLists(t, "README's table of reasons", got, "errors.go's Reason constants", want)
	listedOnce(t, "README", readme, section, "reason", want)
}

// TestPackageDocEvents checks doc.go's list of event kinds, each written
// "[EventName] (value): meaning", against events.go's constants; the
// README keeps no table of them.
func TestPackageDocEvents(t *testing.T) {
	kinds := constsOfType(t, "events.go", "EventKind")
	section := packageDocSection(t, "# Events, logs and metrics")
	var got, want []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "- [Event") {
			continue
		}
		m := docEvent.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("doc.go's event %q: want [EventName] (value): meaning", strings.TrimSpace(line))
			continue
		}
		got = append(got, m[1]+" = "+m[2])
	}
	for name, v := range kinds {
		want = append(want, name+" = "+v)
	}
	compareLists(t, "doc.go's list of event kinds", got, "events.go's EventKind constants", want)
	var names []string
	for name := range kinds {
		names = append(names, name)
	}
	listedOnce(t, "README", readFile(t, "README.md"), "", "event kind", names)
}

// TestReadmeLength holds the README to a tour: what the library is, how
// to run it, and a short stop at each feature with a pointer onward. The
// details have homes of their own, so that each fact is written once.
func TestReadmeLength(t *testing.T) {
	const limit = 500
	lines := len(strings.Split(strings.TrimSuffix(readFile(t, "README.md"), "\n"), "\n"))
	if lines >= limit {
		t.Errorf("README.md has %d lines, want fewer than %d: it is a tour. Move detail to its home and link to it: "+
			"a feature's settings, routes, events and limits to the package doc (doc.go, read by go doc) or the doc of its field or type; "+
			"what each endpoint answers on the wire to PROTOCOL.md; promises and the tests that show them to SECURITY.md; "+
			"figures to BENCHMARKS.md; the demo's flags and pages to examples/demo/doc.go",
			lines, limit)
	}
}

// TestDocsEventSignUp checks the meaning the docs give EventSignUp: a
// sign-up by any login method reports it, naming the method, and then
// EventSignIn. The login methods are package store's,
// less the record of second factors, which signs nobody in.
func TestDocsEventSignUp(t *testing.T) {
	fake := authtest.NewProvider(t)
	var mu sync.Mutex
	var events []auth.Event
	s := authtest.NewServer(t, auth.Config{
		AppURL:       "https://app.example.com",
		ThirdParty:   thirdparty.Config{Providers: []provider.Provider{fake.Provider()}},
		Passwordless: passwordless.Config{Flow: passwordless.Code},
		Passkeys:     passkey.New(passkey.Config{}),
		OnEvent: func(_ context.Context, e auth.Event) {
			if e.Kind == auth.EventSignUp || e.Kind == auth.EventSignIn {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
		},
	})
	signUp := map[string]func(c *authtest.Client, email string) *authtest.Response{
		store.MethodEmailPassword: func(c *authtest.Client, email string) *authtest.Response {
			return c.SignUp(email, authtest.Password)
		},
		store.MethodThirdParty: func(c *authtest.Client, email string) *authtest.Response {
			fake.SetIdentity("id-"+email, email, true)
			return c.SignInWithProvider(fake)
		},
		store.MethodPasswordless: func(c *authtest.Client, email string) *authtest.Response {
			return c.SignInWithCode(email)
		},
		store.MethodWebAuthn: func(c *authtest.Client, email string) *authtest.Response {
			return c.SignUpWithPasskey(s.NewAuthenticator(), email)
		},
	}
	var methods []string
	for name, v := range untypedConsts(t, "store/login.go", "Method") {
		if name != "MethodSecondFactors" {
			methods = append(methods, v)
		}
	}
	compareLists(t, "this test's sign-ups", slices.Collect(maps.Keys(signUp)), "store's login methods", methods)
	for _, method := range methods {
		do := signUp[method]
		if do == nil {
			continue
		}
		mu.Lock()
		events = nil
		mu.Unlock()
		if res := do(s.NewClient(authtest.Header), method+"@example.com"); res.Status != "OK" {
			t.Errorf("sign-up by %s: %d %s", method, res.StatusCode, res.Body)
			continue
		}
		mu.Lock()
		got := events
		mu.Unlock()
		if len(got) != 2 || got[0].Kind != auth.EventSignUp || got[1].Kind != auth.EventSignIn ||
			got[0].Method != method || got[1].Method != method || got[0].UserID == "" || got[0].UserID != got[1].UserID {
			t.Errorf("sign-up by %s reported %+v, want sign_up then sign_in, of one user, by %s", method, got, method)
		}
	}
}

// TestDocsRoutes checks PROTOCOL.md's tables of endpoints against the
// routes the handler with every feature on serves: each route has one
// row, and each listed route answers OPTIONS naming its method. The
// README keeps no table of them: it points at PROTOCOL.md.
func TestDocsRoutes(t *testing.T) {
	want := codeRoutes(t)
	got := protocolRoutes(t, readFile(t, "PROTOCOL.md"))
	compareLists(t, "PROTOCOL.md's tables of endpoints", got, "the handler", want)
	var paths []string
	for _, r := range want {
		_, path, _ := strings.Cut(r, " ")
		paths = append(paths, path, "/auth"+path)
	}
	listedOnce(t, "README", readFile(t, "README.md"), "", "endpoint", paths)

	fake := authtest.NewProvider(t)
	relay := callbackPoster{fake.Provider()}
	s := authtest.NewServer(t, auth.Config{
		SigningAlgorithm:  auth.EdDSA,
		EmailVerification: emailverification.Config{Mode: emailverification.Optional},
		ThirdParty:        thirdparty.Config{Providers: []provider.Provider{relay}},
		Passwordless:      passwordless.Config{Flow: passwordless.CodeAndLink},
		Passkeys:          passkey.New(passkey.Config{}),
		MFA:               auth.MFAConfig{Required: []string{auth.FactorTOTP, auth.FactorWebAuthn}},
		BeforeDeleteUser:  func(context.Context, string) error { return nil },
		EmailChange:       emailchange.Config{Enabled: true},
		Tenants:           auth.TenantsConfig{Enabled: true},
		// Browsers refuse WebAuthn on IP addresses, so passkeys need a
		// host name; the requests below go to the handler directly.
		AppURL: "https://app.example.com",
	})
	allow := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		s.Auth.ServeHTTP(rec, httptest.NewRequest(http.MethodOptions, path, nil))
		return rec.Code, rec.Header().Get("Allow")
	}
	if code, _ := allow("/auth/no/such/route"); code != http.StatusNotFound {
		t.Fatalf("OPTIONS of an unknown path answered %d, want 404: the check below would prove nothing", code)
	}
	for _, r := range got {
		method, path, _ := strings.Cut(r, " ")
		path = "/auth" + strings.ReplaceAll(path, "<id>", relay.ID())
		code, methods := allow(path)
		if code != http.StatusNoContent || !slices.Contains(strings.Split(methods, ", "), method) {
			t.Errorf("PROTOCOL.md lists %s %s, but OPTIONS answered %d with Allow %q", method, path, code, methods)
		}
	}
}

// protocolRoutes returns the endpoints of the rows of PROTOCOL.md's
// tables, as "METHOD /path" under the base path, in the order listed.
func protocolRoutes(t *testing.T, protocol string) []string {
	t.Helper()
	var got []string
	for _, row := range tableRows(protocol) {
		for _, cell := range backticked(row[0]) {
			m := protocolRoute.FindStringSubmatch(cell)
			if m == nil {
				t.Errorf("PROTOCOL.md's endpoint %q: want METHOD /path", cell)
				continue
			}
			got = append(got, m[1]+" "+m[2])
		}
	}
	return got
}

// TestPackageDocRoutes checks the routes that doc.go's package comment
// lists, under the base path, against the routes the handler serves.
func TestPackageDocRoutes(t *testing.T) {
	want := codeRoutes(t)
	section := packageDocSection(t, "# Login methods and routes")
	var got []string
	for _, m := range docRoute.FindAllStringSubmatch(section, -1) {
		got = append(got, m[1]+" "+strings.TrimRight(m[2], ".,;:)"))
	}
	compareLists(t, "doc.go's routes", got, "the handler", want)
}

// TestPackageDocStatuses checks that doc.go's section on HTTP statuses
// names every status the package's code writes, and no other: the
// README points there rather than keep a list of its own.
func TestPackageDocStatuses(t *testing.T) {
	byName := map[string]int{}
	for code := 100; code < 600; code++ {
		if text := http.StatusText(code); text != "" {
			byName["Status"+nonLetters.ReplaceAllString(text, "")] = code
		}
	}
	var want []string
	files := sourceFiles(t, token.NewFileSet(), "*.go")
	maps.Copy(files, sourceFiles(t, token.NewFileSet(), "internal/wire/*.go")) // the answers every route shares
	for _, recipe := range recipePackages {
		maps.Copy(files, sourceFiles(t, token.NewFileSet(), recipe+"/*.go"))
	}
	for name, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || !strings.HasPrefix(sel.Sel.Name, "Status") {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "http" {
				return true
			}
			code, ok := byName[sel.Sel.Name]
			if !ok {
				t.Fatalf("%s: cannot tell the number of http.%s", name, sel.Sel.Name)
			}
			if s := strconv.Itoa(code); !slices.Contains(want, s) {
				want = append(want, s)
			}
			return true
		})
	}
	section := packageDocSection(t, "# HTTP statuses")
	var got []string
	for _, m := range docStatus.FindAllStringSubmatch(section, -1) {
		if !slices.Contains(got, m[1]) { // prose may name one twice
			got = append(got, m[1])
		}
	}
	compareLists(t, "doc.go's HTTP statuses", got, "the package's code", want)
}

// TestDocsLoginMethods checks that PROTOCOL.md's row for
// /loginmethods names each key of its answer, and no other.
func TestDocsLoginMethods(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{})
	res := s.NewClient(authtest.Header).Get("/auth/loginmethods")
	if res.Status != "OK" {
		t.Fatalf("GET /auth/loginmethods: %d %s", res.StatusCode, res.Body)
	}
	var want []string
	for key := range res.JSON {
		if key != "status" {
			want = append(want, key)
		}
	}
	rows := tableRows(markdownSection(t, readFile(t, "PROTOCOL.md"), "## Endpoints"))
	i := slices.IndexFunc(rows, func(row []string) bool { return row[0] == "`GET /loginmethods`" })
	if i < 0 {
		t.Fatal("PROTOCOL.md's table of endpoints has no row for GET /loginmethods")
	}
	row := rows[i]
	compareLists(t, "PROTOCOL.md's row for /loginmethods", backticked(row[len(row)-1]), "its answer's keys", want)
}

// TestDocsGoAPI checks the lists of the Go API in the README and the
// package doc against Auth's methods. The Go API is what the
// application's own code calls: every exported method but those of
// notServed, which serve HTTP or stop the Auth.
func TestDocsGoAPI(t *testing.T) {
	notServed := []string{"ServeHTTP", "CORS", "RequireSession", "OptionalSession", "VerifyRequest", "VerifyToken", "Close"}
	typ := reflect.TypeFor[*auth.Auth]()
	var want []string
	for m := range typ.Methods() {
		if !slices.Contains(notServed, m.Name) {
			want = append(want, m.Name)
		}
	}
	for _, name := range notServed {
		if _, ok := typ.MethodByName(name); !ok {
			t.Errorf("Auth has no method %s, which this test leaves out of the Go API", name)
		}
	}

	readme := readFile(t, "README.md")
	_, bullet, ok := strings.Cut(readme, "\n- The Go API")
	if !ok {
		t.Fatal(`README has no "- The Go API" item`)
	}
	bullet, _, _ = strings.Cut(bullet, "\n-")
	bullet, _, _ = strings.Cut(bullet, "\n\n")
	compareLists(t, "README's Go API", backticked(bullet), "Auth's methods", want)

	section := packageDocSection(t, "# Sessions")
	_, para, ok := strings.Cut(section, "The Go API")
	if !ok {
		t.Fatal(`doc.go's Sessions has no "The Go API"`)
	}
	para, _, _ = strings.Cut(para, "\n\n")
	var got []string
	for _, m := range authLink.FindAllStringSubmatch(para, -1) {
		got = append(got, m[1])
	}
	compareLists(t, "doc.go's Go API", got, "Auth's methods", want)
}

// TestReadmeProviders checks the README's presets of package provider,
// and OIDC, against the package's functions that make a Provider; and
// that the README's first paragraph names each preset too.
func TestReadmeProviders(t *testing.T) {
	var want []string
	for _, f := range sourceFiles(t, token.NewFileSet(), "provider/*.go") {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !fd.Name.IsExported() || fd.Type.Results == nil {
				continue
			}
			if res := fd.Type.Results.List; len(res) == 2 && isIdent(res[0].Type, "Provider") {
				want = append(want, fd.Name.Name)
			}
		}
	}
	readme := readFile(t, "README.md")
	_, sentence, ok := strings.Cut(readme, "The presets are ")
	sentence, _, closed := strings.Cut(sentence, "(`go doc")
	if !ok || !closed {
		t.Fatal(`README has no "The presets are ... (` + "`go doc" + `"`)
	}
	got := backticked(sentence)
	compareLists(t, "README's presets", got, "package provider's constructors", want)
	intro, _, _ := strings.Cut(readme, "\n\n```")
	for _, p := range got {
		if p != "OIDC" && !strings.Contains(intro, p) {
			t.Errorf("README's introduction does not name the preset %s", p)
		}
	}
}

// TestReadmeConfigGroups checks the README's list of Config's groups
// against Config's fields of struct type.
func TestReadmeConfigGroups(t *testing.T) {
	var want []string
	typ := reflect.TypeFor[auth.Config]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() && f.Type.Kind() == reflect.Struct {
			want = append(want, f.Name)
		}
	}
	section := markdownSection(t, readFile(t, "README.md"), "## Configuration")
	_, list, ok := strings.Cut(section, "feature's group (")
	list, _, closed := strings.Cut(list, ")")
	if !ok || !closed {
		t.Fatal(`README's Configuration has no "feature's group (...)"`)
	}
	compareLists(t, "README's groups of Config", backticked(list), "Config's struct fields", want)
}

// TestDemoDocFlags checks that examples/demo's package doc describes
// every flag the demo defines, and no other, with its environment
// variable.
func TestDemoDocFlags(t *testing.T) {
	fset := token.NewFileSet()
	var flags, envs []string
	for _, name := range []string{"examples/demo/main.go", "examples/demo/admins.go"} {
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		demoFlags(t, file, &flags, &envs)
	}
	if len(flags) == 0 || len(envs) == 0 {
		t.Fatalf("read no flags (%d) or environment variables (%d) from main.go", len(flags), len(envs))
	}
	checkDemoDoc(t, fset, flags, envs)
}

// demoFlags adds to flags the names of the flags file defines, and to
// envs the environment variables it names.
func demoFlags(t *testing.T, file *ast.File, flags, envs *[]string) {
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			// fs.StringVar(&v, "name", ...), fs.BoolVar, fs.Func("name",
			// ...), and the demo's dur(&v, "name", "ENV", ...) for
			// durations.
			fun := ""
			switch f := n.Fun.(type) {
			case *ast.SelectorExpr:
				if x, ok := f.X.(*ast.Ident); ok && x.Name == "fs" && f.Sel.Name == "Func" && len(n.Args) > 0 {
					if lit, ok := n.Args[0].(*ast.BasicLit); ok {
						*flags = append(*flags, stringLit(t, lit))
					}
				}
				if x, ok := f.X.(*ast.Ident); ok && x.Name == "fs" && strings.HasSuffix(f.Sel.Name, "Var") {
					fun = f.Sel.Name
				}
			case *ast.Ident:
				if f.Name == "dur" {
					fun = f.Name
				}
			}
			if fun == "" || len(n.Args) < 2 {
				break
			}
			// Inside dur, fs.DurationVar forwards dur's parameter.
			if lit, ok := n.Args[1].(*ast.BasicLit); ok {
				*flags = append(*flags, stringLit(t, lit))
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				if v, _ := strconv.Unquote(n.Value); demoEnv.MatchString(v) {
					*envs = append(*envs, v)
				}
			}
		}
		return true
	})
}

// checkDemoDoc compares the flags and environment variables of the demo
// with its package doc.
func checkDemoDoc(t *testing.T, fset *token.FileSet, flags, envs []string) {
	doc, err := parser.ParseFile(fset, "examples/demo/doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Doc == nil {
		t.Fatal("examples/demo/doc.go has no package comment")
	}
	text := doc.Doc.Text()
	var documented []string
	for _, m := range docFlag.FindAllStringSubmatch(text, -1) {
		documented = append(documented, m[1])
	}
	compareLists(t, "the demo's package doc", documented, "the flags of examples/demo/main.go", flags)
	for _, env := range envs {
		if !strings.Contains(text, env) {
			t.Errorf("the demo's package doc does not name %s, which main.go reads", env)
		}
	}
}

// TestDocsNameFilesThatExist checks that each file or directory the
// documents name, in code spans, exists: a path that starts with one of
// the repository's top-level entries, or a file name ending in .go,
// which the root package's files are named by.
func TestDocsNameFilesThatExist(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{"README.md", "CONTRIBUTING.md", "SECURITY.md", "PROTOCOL.md"} {
		for _, span := range backticked(fence.ReplaceAllString(readFile(t, doc), "")) {
			top, _, _ := strings.Cut(span, "/")
			named := strings.HasSuffix(span, ".go") || slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == top })
			if !named || strings.ContainsAny(span, " <*?") {
				continue
			}
			if _, err := os.Stat(span); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, span)
			}
		}
	}
}

// TestDocLinks checks the doc links in the package's doc comments: each
// [Name] or [pkg.Name] names something that exists. go doc shows a link
// to nothing as plain text in brackets, so a renamed identifier would
// otherwise go unnoticed.
func TestDocLinks(t *testing.T) {
	pkgs := map[string]*docPackage{}
	pkg := func(importPath string) *docPackage {
		if p, ok := pkgs[importPath]; ok {
			return p
		}
		p := loadDocPackage(t, importPath)
		pkgs[importPath] = p
		return p
	}
	root := pkg(module)
	for _, c := range root.comments {
		forEachText(root.parser.Parse(c).Content, func(x comment.Text) {
			switch x := x.(type) {
			case comment.Plain:
				for _, m := range unlinked.FindAllString(string(x), -1) {
					t.Errorf("the comment %q has %s, which links nowhere", firstLine(c), m)
				}
			case *comment.DocLink:
				if x.ImportPath == module || x.Name == "" || !strings.HasPrefix(x.ImportPath, module+"/") {
					return // the parser found it, or it is a package or outside the module
				}
				if !pkg(x.ImportPath).parser.LookupSym(x.Recv, x.Name) {
					t.Errorf("the comment %q links to %s, which %s lacks", firstLine(c), strings.TrimPrefix(x.Recv+"."+x.Name, "."), x.ImportPath)
				}
			}
		})
	}
}

// TestDocsMarkdownLinks checks the links of the repository's top-level
// Markdown files: each relative link names a file that exists, and each
// #fragment a heading of the file it points into, as GitHub spells its
// anchors. A section moved from one document to another would otherwise
// leave its links pointing nowhere.
func TestDocsMarkdownLinks(t *testing.T) {
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string][]string{}
	anchorsOf := func(doc string) []string {
		if a, ok := anchors[doc]; ok {
			return a
		}
		var a []string
		for _, l := range strings.Split(fence.ReplaceAllString(readFile(t, doc), ""), "\n") {
			if m := mdHeading.FindStringSubmatch(l); m != nil {
				a = append(a, headingAnchor(m[1]))
			}
		}
		anchors[doc] = a
		return a
	}
	for _, doc := range docs {
		for _, m := range mdLink.FindAllStringSubmatch(fence.ReplaceAllString(readFile(t, doc), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			if file == "" {
				file = doc
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s links to %s, which does not exist", doc, target)
				continue
			}
			if frag != "" && strings.HasSuffix(file, ".md") && !slices.Contains(anchorsOf(file), frag) {
				t.Errorf("%s links to %s, but %s has no heading with that anchor", doc, target, file)
			}
		}
	}
}

// headingAnchor is the anchor GitHub gives a Markdown heading: lower
// case, spaces to hyphens, and punctuation other than hyphens and
// underscores dropped.
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// docPackage is a package of the module as go doc reads it: the parser
// that resolves its doc links, and its doc comments.
type docPackage struct {
	parser   *comment.Parser
	comments []string
}

// loadDocPackage reads the package of the module at importPath.
func loadDocPackage(t *testing.T, importPath string) *docPackage {
	t.Helper()
	dir := "." + strings.TrimPrefix(importPath, module)
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	p, err := doc.NewFromFiles(fset, files, importPath, doc.PreserveAST)
	if err != nil {
		t.Fatal(err)
	}
	out := &docPackage{parser: p.Parser()}
	add := func(cg *ast.CommentGroup) {
		if cg != nil {
			out.comments = append(out.comments, cg.Text())
		}
	}
	for _, f := range files {
		add(f.Doc)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				add(n.Doc)
			case *ast.GenDecl:
				add(n.Doc)
			case *ast.TypeSpec:
				add(n.Doc)
			case *ast.ValueSpec:
				add(n.Doc)
				add(n.Comment)
			case *ast.Field:
				add(n.Doc)
				add(n.Comment)
			}
			return true
		})
	}
	return out
}

// forEachText calls f with each run of text in blocks, inside links too.
func forEachText(blocks []comment.Block, f func(comment.Text)) {
	var texts func([]comment.Text)
	texts = func(xs []comment.Text) {
		for _, x := range xs {
			f(x)
			switch x := x.(type) {
			case *comment.Link:
				texts(x.Text)
			case *comment.DocLink:
				texts(x.Text)
			}
		}
	}
	for _, b := range blocks {
		switch b := b.(type) {
		case *comment.Paragraph:
			texts(b.Text)
		case *comment.Heading:
			texts(b.Text)
		case *comment.List:
			for _, item := range b.Items {
				forEachText(item.Content, f)
			}
		}
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

var (
	// protocolRoute is an endpoint as PROTOCOL.md's tables write it:
	// METHOD /path under the base path, maybe with a query.
	protocolRoute = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE) (/[^?\s]+)(?:\?\S*)?$`)
	// docRoute is an endpoint as doc.go writes it, under the base path.
	docRoute = regexp.MustCompile(`\b(GET|POST|PUT|PATCH|DELETE)\s+(/\S+)`)
	// docEvent is an event kind's item in doc.go's list of them.
	docEvent = regexp.MustCompile(`^\s+- \[(Event\w+)\] \(([a-z_]+)\): \S`)
	// docFlag is a flag's line in the demo's doc: a tab, then -name.
	docFlag = regexp.MustCompile(`(?m)^\t-([a-z][a-z-]*)\b`)
	demoEnv = regexp.MustCompile(`^DEMO_[A-Z_]+$`)
	// docStatus is a status in doc.go's section on them, whose only
	// numbers are statuses.
	docStatus  = regexp.MustCompile(`\b([1-5]\d\d)\b`)
	nonLetters = regexp.MustCompile(`[^A-Za-z]`)
	// unlinked is a doc link that go doc's parser left as plain text.
	unlinked = regexp.MustCompile(`\[\*?(?:[a-z]\w*\.)?[A-Z]\w*(?:\.[A-Z]\w*)?\]`)
	// authLink is a doc link to a method or field of Auth.
	authLink = regexp.MustCompile(`\[Auth\.(\w+)\]`)
)

// callbackPoster is a provider whose redirect back is a form post, as
// Apple's is, so the handler serves a relay for it.
type callbackPoster struct{ provider.Provider }

func (callbackPoster) FormPost() bool { return true }

// constsOfType returns the constants of type typ declared in file, by
// name, with their string values.
func constsOfType(t *testing.T, file, typ string) map[string]string {
	t.Helper()
	return stringConsts(t, file, "of type "+typ, func(vs *ast.ValueSpec, _ string) bool {
		id, ok := vs.Type.(*ast.Ident)
		return ok && id.Name == typ
	})
}

// untypedConsts returns the untyped constants declared in file whose
// names start with prefix, by name, with their string values.
func untypedConsts(t *testing.T, file, prefix string) map[string]string {
	t.Helper()
	return stringConsts(t, file, prefix+"...", func(vs *ast.ValueSpec, name string) bool {
		return vs.Type == nil && strings.HasPrefix(name, prefix)
	})
}

// kitFile declares the seam's constants.
const kitFile = "internal/kit/kit.go"

// stringConsts returns the constants declared in file that keep
// accepts, by name, with their string values; what names them in a
// failure.
func stringConsts(t *testing.T, file, what string, keep func(vs *ast.ValueSpec, name string) bool) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !keep(vs, name.Name) {
					continue
				}
				// A kind a recipe reports is named by the seam's
				// constant (internal/kit), which holds its value.
				if sel, ok := vs.Values[i].(*ast.SelectorExpr); ok && file != kitFile {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "kit" {
						consts[name.Name] = untypedConsts(t, kitFile, sel.Sel.Name)[sel.Sel.Name]
						continue
					}
				}
				consts[name.Name] = stringLit(t, vs.Values[i])
			}
		}
	}
	if len(consts) == 0 {
		t.Fatalf("no constants %s in %s", what, file)
	}
	return consts
}

// sourceFiles parses the non-test Go files that pattern matches, by
// name, in fset.
func sourceFiles(t *testing.T, fset *token.FileSet, pattern string) map[string]*ast.File {
	t.Helper()
	names, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	if len(files) == 0 {
		t.Fatalf("no Go files match %s", pattern)
	}
	return files
}

// codeRoutes are the routes a handler with every feature on serves, as
// "METHOD /path" under the base path, with <id> for a provider's id:
// asked of the built handler, not read from the source. The dashboard's
// are left out: they speak the dashboard's API, not the SDKs' protocol,
// and their home is package dashboard's doc (TestDashboardDocRoutes).
func codeRoutes(t *testing.T) []string {
	t.Helper()
	routes := slices.DeleteFunc(auth.Routes(newFullFixture(t, auth.Config{}).Auth), func(r string) bool {
		_, path, _ := strings.Cut(r, " ")
		return path == "/dashboard" || strings.HasPrefix(path, "/dashboard/")
	})
	if len(routes) < 10 {
		t.Fatalf("the full handler serves only %v", routes)
	}
	return routes
}

func stringLit(t *testing.T, e ast.Expr) string {
	t.Helper()
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		t.Fatalf("want a string literal, got %#v", e)
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// packageDocSection returns the section of doc.go's package comment
// that starts with the heading, up to the next heading.
func packageDocSection(t *testing.T, heading string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go has no package comment")
	}
	text := f.Doc.Text()
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("doc.go has no %q section", heading)
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n# "); end >= 0 {
		section = section[:end]
	}
	return section
}

func values(m map[string]string) []string {
	var vs []string
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markdownSection returns the section that starts with the heading line,
// up to the next heading of the same level or above. Code blocks are
// skipped when looking for that next heading.
func markdownSection(t *testing.T, doc, heading string) string {
	t.Helper()
	lines := strings.SplitAfter(doc, "\n")
	level := strings.Index(heading, " ")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimRight(l, "\n") == heading })
	if start < 0 {
		t.Fatalf("no section %q", heading)
	}
	end, fenced := len(lines), false
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		if n := len(l) - len(strings.TrimLeft(l, "#")); !fenced && n > 0 && n <= level && strings.HasPrefix(l[n:], " ") {
			end = i
			break
		}
	}
	return strings.Join(lines[start:end], "")
}

// tableRows returns the cells of the body rows of the tables in text:
// lines that start with "|", less the header and its rule.
func tableRows(text string) [][]string {
	var rows [][]string
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		if tableRule.MatchString(l) || i+1 < len(lines) && tableRule.MatchString(lines[i+1]) {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	return rows
}

var (
	tableRule = regexp.MustCompile(`^\|\s*:?-{3}`)
	fence     = regexp.MustCompile("(?s)```.*?```")
	backtick  = regexp.MustCompile("`([^`]+)`")
	// mdLink is the target of a Markdown link, [text](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// mdHeading is a Markdown heading line.
	mdHeading = regexp.MustCompile(`^#{1,6} (.+)$`)
)

// backticked returns the code spans in s.
func backticked(s string) []string {
	var spans []string
	for _, m := range backtick.FindAllStringSubmatch(s, -1) {
		spans = append(spans, m[1])
	}
	return spans
}

// compareLists reports every entry of one list that the other lacks, and
// every entry a list repeats.
func compareLists(t *testing.T, gotName string, got []string, wantName string, want []string) {
	t.Helper()
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("%s has %q, which %s lacks", gotName, g, wantName)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s lacks %q, which %s has", gotName, w, wantName)
		}
	}
	seen := map[string]bool{}
	for _, g := range got {
		if seen[g] {
			t.Errorf("%s lists %q twice", gotName, g)
		}
		seen[g] = true
	}
}

// listedOnce reports a table row of doc, named docName, outside section
// whose first cell names one of entries: each list has one table in the
// documents, and an empty section means that doc has none of it.
func listedOnce(t *testing.T, docName, doc, section, what string, entries []string) {
	t.Helper()
	rest := strings.Replace(doc, section, "", 1)
	for _, row := range tableRows(rest) {
		for _, span := range backticked(row[0]) {
			for _, e := range entries {
				if span == e || strings.HasPrefix(span, e+"?") || strings.HasSuffix(span, " "+e) || strings.Contains(span, " "+e+"?") {
					t.Errorf("%s has a row for %s %q outside its table: %q", docName, what, e, row)
				}
			}
		}
	}
}
