package auth

import (
	"slices"

	"github.com/latchkit/auth/provider"
)

// Routes lists what a's handler serves, as "METHOD /path" under the base
// path, sorted; a provider's callback is "/callback/<id>". The suites
// that must cover every route (input, fuzz, log hygiene, enumeration,
// the docs' route lists) ask a built handler, so a route added by any
// feature cannot slip past them.
func Routes(a *Auth) []string {
	var out []string
	callbacks := map[string]bool{}
	for _, p := range a.cfg.ThirdParty.Providers {
		if fp, ok := p.(provider.FormPoster); ok && fp.FormPost() {
			callbacks["/callback/"+p.ID()] = true
		}
	}
	for path, rt := range a.routes {
		if callbacks[path] {
			path = "/callback/<id>"
		}
		out = append(out, rt.Method+" "+path)
		if rt.Get != nil {
			out = append(out, "GET "+path)
		}
		for m := range rt.More {
			out = append(out, m+" "+path)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
