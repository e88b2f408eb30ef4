package main

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// A demo on a loopback address answers only the hosts it serves, against
// DNS rebinding: a page the developer visits can point its own name at
// 127.0.0.1 and then, same-origin under that name, read what the demo
// answers. Its requests carry that name in Host, which no browser lets
// a page forge, so the name gives it away. With -dev the stake is every
// account (the outbox shows reset links, the development provider signs
// in anyone); without it, a service the developer thinks unreachable.
//
// On any other address the demo answers every Host: whoever can reach it
// needs no rebinding, and behind a proxy it may be reached under names it
// cannot know.

// servedHosts are the Host values a loopback demo answers: the app URL's
// host, as browsers send it, and the loopback names on the port it
// listens on.
func servedHosts(appURL string, port int) []string {
	var hosts []string
	if u, err := url.Parse(appURL); err == nil && u.Host != "" {
		hosts = append(hosts, strings.ToLower(u.Host))
	}
	for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
		if h := net.JoinHostPort(name, strconv.Itoa(port)); !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// onlyHosts answers 421 Misdirected Request, on every route, to a request
// whose Host is not one of hosts, saying which ones are served.
func onlyHosts(hosts []string, next http.Handler) http.Handler {
	msg := "misdirected request: this demo serves only " + strings.Join(hosts, ", ") + "; name another with -app-url"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(hosts, strings.ToLower(r.Host)) {
			http.Error(w, msg, http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guardHosts wraps h with onlyHosts when the demo listens on loopback
// (see above); addr is the listener's address, which has the port even
// when -addr asked for port 0.
func guardHosts(h http.Handler, appURL string, addr net.Addr) http.Handler {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return h
	}
	return onlyHosts(servedHosts(appURL, tcp.Port), h)
}
