package auth_test

import (
	"go/ast"
	"go/importer"
	"go/token"
	"go/types"
	"maps"
	"slices"
	"strings"
	"testing"
)

// featureFiles are the root's files that belong to one feature; every
// other non-test file is the kernel. MFA's stay in the root by design
// (doc.go, # Recipes and the kernel); a feature added to the root later
// is listed here too, until it moves into a package of its own.
var featureFiles = map[string][]string{
	"mfa": {"mfa.go", "totp.go", "recoverycodes.go", "secondfactors.go", "factornotice.go"},
}

// crossFeatureBudget is how many names one feature's files may use that
// another feature's files declare: none, now that passkeys reach MFA's
// factors through the kernel's seam. A feature that leans on another
// cannot move into a package of its own; the budget only goes down.
const crossFeatureBudget = 0

// TestFeaturesKeepApart counts the names a feature's files use from
// another feature's files, and fails past crossFeatureBudget: what two
// features share belongs in the kernel's files. Names are resolved by
// go/types, so a method or local variable that shares a name with
// another feature's function is not counted.
func TestFeaturesKeepApart(t *testing.T) {
	fset := token.NewFileSet()
	owner := map[string]string{}
	for f, files := range featureFiles {
		for _, name := range files {
			owner[name] = f
		}
	}
	byName := sourceFiles(t, fset, "*.go")
	for name := range owner {
		if byName[name] == nil {
			t.Fatalf("featureFiles names %s, which is not a file of the root", name)
		}
	}
	files := slices.Collect(maps.Values(byName))
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("github.com/latchkit/auth", fset, files, info); err != nil {
		t.Fatal(err)
	}
	crossing := map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() == nil || obj.Pkg().Path() != "github.com/latchkit/auth" || !obj.Pos().IsValid() {
			continue
		}
		if v, ok := obj.(*types.Var); ok && !v.IsField() && obj.Parent() != obj.Pkg().Scope() {
			continue // a local variable
		}
		user, declarer := owner[fset.File(id.Pos()).Name()], owner[fset.File(obj.Pos()).Name()]
		if user != "" && declarer != "" && user != declarer {
			crossing[user+" uses "+declarer+"."+obj.Name()] = true
		}
	}
	list := slices.Sorted(maps.Keys(crossing))
	t.Logf("%d names cross between features:\n%s", len(list), strings.Join(list, "\n"))
	if len(list) > crossFeatureBudget {
		t.Errorf("%d names cross between features, over the budget of %d: move what features share into the kernel's files",
			len(list), crossFeatureBudget)
	}
}

// recipePackages are the recipes that are packages of their own.
var recipePackages = []string{"dashboard", "emailpassword", "emailverification", "passkey", "passwordless", "roles", "thirdparty"}

// seam is what a recipe package may import of the module: the kernel's
// seam, the mechanics that need no Auth, and the public contracts.
var seam = []string{
	module + "/internal/address",
	module + "/internal/kit",
	module + "/internal/onetime",
	module + "/internal/password",
	module + "/internal/wire",
	module + "/mailer",
	module + "/provider",
	module + "/store",
}

// TestRecipesImportOnlyTheSeam holds each recipe package to the seam: it
// never imports package auth (which imports it) or another recipe, so a
// recipe cannot lean on another's internals, and package auth builds each
// through the same kit.Kernel.
func TestRecipesImportOnlyTheSeam(t *testing.T) {
	for _, name := range recipePackages {
		for _, imp := range nonStandardImports(t, module+"/"+name) {
			if strings.HasPrefix(imp, module) && !slices.Contains(seam, imp) {
				t.Errorf("recipe %s imports %s; a recipe imports only %q", name, imp, seam)
			}
		}
	}
	for _, f := range slices.Sorted(maps.Keys(featureFiles)) {
		if slices.Contains(recipePackages, f) {
			t.Errorf("%s is a package of its own and still has files in the root's featureFiles", f)
		}
	}
}
