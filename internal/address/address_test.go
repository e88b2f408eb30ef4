package address

import "testing"

func TestNormalise(t *testing.T) {
	for in, want := range map[string]string{
		"  Kate@Example.COM ":     "kate@example.com",
		"e\u0301mile@example.com": "\u00e9mile@example.com", // NFC: one account for both spellings
		"ｋate@example.com":        "ｋate@example.com",       // not NFKC: the mailbox the user typed
	} {
		if got := Normalise(in); got != want {
			t.Errorf("Normalise(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFromProvider(t *testing.T) {
	for in, want := range map[string]string{
		"KATE@EXAMPLE.COM":        "kate@example.com",
		"\u00c9MILE@example.com":  "\u00e9mile@example.com",
		"\u212Aate@example.com":   "", // KELVIN SIGN: NFC would make it K
		"e\u0301mile@example.com": "", // not in NFC
		"\u0130rene@example.com":  "", // İ lower-cases to i, whose upper case is I
		"kate@example.com\xff":    "",
	} {
		if got := FromProvider(in); got != want {
			t.Errorf("FromProvider(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValid(t *testing.T) {
	for in, want := range map[string]bool{
		"kate@example.com":              true,
		"kate@[192.0.2.1]":              true,  // an address literal net/mail reads back
		`"kate smith"@example.com`:      false, // quoted: the mailer refuses it
		"ka\u200bte@example.com":        false, // a zero-width space makes a look-alike
		"kate\x00@example.com":          false,
		"kate@example":                  false,
		string(make([]byte, 300)) + "@": false,
	} {
		if got := Valid(in); got != want {
			t.Errorf("Valid(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestIsPhone(t *testing.T) {
	for in, want := range map[string]bool{"+14155550123": true, "+": false, "+1a": false, "+kate@example.com": false, "14155550123": false} {
		if got := IsPhone(in); got != want {
			t.Errorf("IsPhone(%q) = %v, want %v", in, got, want)
		}
	}
}
