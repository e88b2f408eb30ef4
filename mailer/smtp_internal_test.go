package mailer

import "testing"

func TestIsLoopbackHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LOCALHOST", true},
		{"LocalHost", true},
		{"localhost.", true},
		{"LOCALHOST.", true},
		{"127.0.0.1", true},
		{"127.0.0.2", true},
		{"127.1.2.3", true},
		{"127.255.255.255", true},
		{"::1", true},
		{"0:0:0:0:0:0:0:1", true},
		{"::1%lo", true},
		{"::ffff:127.0.0.1", true}, // 127.0.0.1, mapped

		// Names are not resolved, whatever they resolve to.
		{"", false},
		{"smtp.example.com", false},
		{"localhost.example.com", false},
		{"localhost.localdomain", false},
		{"mail.localhost", false},
		{"localhost..", false},
		{".localhost", false},
		{"mylocalhost", false},
		{"127.0.0.1.example.com", false},
		{"127.0.0.1.", false},
		// Not literals in the usual notation: resolvers may read them as
		// 127.0.0.1, but that is resolving.
		{"127.1", false},
		{"2130706433", false},
		{"0x7f.0.0.1", false},
		{"0177.0.0.1", false},
		{"[::1]", false}, // a host as written in a URL, brackets and all
		// Other addresses.
		{"10.0.0.1", false},
		{"192.168.1.25", false},
		{"128.0.0.1", false},
		{"126.255.255.255", false},
		{"0.0.0.0", false},
		{"::", false},
		{"::2", false},
		{"fe80::1%lo", false},
		{"::ffff:10.0.0.1", false},
		{"2001:db8::1", false},
	} {
		if got := isLoopbackHost(tc.host); got != tc.want {
			t.Errorf("isLoopbackHost(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}
