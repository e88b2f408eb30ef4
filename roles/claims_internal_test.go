package roles

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/latchkit/auth/internal/kit"
)

// FuzzParse feeds the claims' reader what a token could carry: it never
// panics, accepts only {"v": [strings], ...}, and what it accepts reads
// back the same after encoding.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{`{"v":["admin"],"t":1735689600000}`, `{"v":[],"t":0}`, `{"v":null}`, `{"v":[1]}`,
		`[]`, `"admin"`, `{"v":["a","a"],"t":-1,"x":{}}`, `{"t":5}`, `null`, `{"v":["admin",null]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := parse(raw)
		if err != nil {
			return
		}
		v, ok := got.(*value)
		if !ok || v.V == nil {
			t.Fatalf("parse(%s) = %#v, want a *value with a list", raw, got)
		}
		again, err := parse(encode(v.V, time.UnixMilli(v.T)))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("parse(encode(parse(%s))) = %#v, %v; want %#v", raw, again, err, got)
		}
		var generic struct {
			V []any `json:"v"`
		}
		if json.Unmarshal(raw, &generic) != nil || len(generic.V) != len(v.V) {
			t.Fatalf("parse accepted %s, which is not a claim of strings", raw)
		}
		for _, e := range generic.V {
			if _, ok := e.(string); !ok {
				t.Fatalf("parse accepted %s, whose list holds %v", raw, e)
			}
		}
	})
}

// A rule's reason is the SDKs' validator's, byte for byte.
func TestRuleReasons(t *testing.T) {
	for _, c := range []struct {
		r    rule
		have []string
		want string
	}{
		{rule{"st-role", []string{"admin"}, true}, []string{"editor"},
			`{"message":"wrong value","expectedToInclude":"admin","actualValue":["editor"]}`},
		{rule{"st-role", []string{"a", "b"}, true}, nil,
			`{"message":"wrong value","expectedToInclude":["a","b"],"actualValue":[]}`},
		{rule{"st-perm", []string{"a", "b"}, false}, []string{"c"},
			`{"message":"wrong value","expectedToIncludeAtLeastOneOf":["a","b"],"actualValue":["c"]}`},
	} {
		err := c.r.check(c.have)
		if err == nil {
			t.Fatalf("%+v on %q passed", c.r, c.have)
		}
		b, _ := json.Marshal(reasonOf(t, err))
		if string(b) != c.want {
			t.Errorf("%+v on %q: %s, want %s", c.r, c.have, b, c.want)
		}
	}
	if err := (rule{"st-role", []string{"a", "b"}, false}).check([]string{"b"}); err != nil {
		t.Errorf("any of a, b with b: %v", err)
	}
}

func reasonOf(t *testing.T, err error) any {
	t.Helper()
	ce, ok := err.(*kit.ClaimError)
	if !ok {
		t.Fatalf("%T is not a claim error", err)
	}
	return ce.Reason
}

// A rule's names are trimmed as the Go API's are, and a rule that names
// nothing, or a name the Go API refuses, panics where the route is made.
func TestRuleNames(t *testing.T) {
	if got := RequireAll(" admin ", "editor", "admin").Arg().(rule).want; !reflect.DeepEqual(got, []string{"admin", "editor"}) {
		t.Errorf("RequireAll(\" admin \", \"editor\", \"admin\") wants %q", got)
	}
	for name, newRule := range map[string]func() kit.Rule{
		"RequireAll()":               func() kit.Rule { return RequireAll() },
		"RequireAny()":               func() kit.Rule { return RequireAny() },
		"RequireAllPermissions()":    func() kit.Rule { return RequireAllPermissions() },
		"Require(\" \")":             func() kit.Rule { return Require(" ") },
		"RequirePermission(long)":    func() kit.Rule { return RequirePermission(string(make([]byte, maxName+1))) },
		"RequireAnyPermission(\"\")": func() kit.Rule { return RequireAnyPermission("") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			newRule()
		}()
	}
}
