// Package address normalises and checks the email addresses and phone
// numbers that users sign in with: one home for what makes two addresses
// one account, and what makes an address one the library will mail.
package address

import (
	"net/mail"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxEmailLen bounds an address, in bytes; RFC 5321 allows 254.
const maxEmailLen = 256

// emailPattern is the email check of the SuperTokens backends. JavaScript's
// \s is Unicode-aware and Go's is not, so the whitespace class is spelled
// out.
var emailPattern = regexp.MustCompile(`^(([^<>()\[\]\\.,;:\s\x0B\p{Z}\x{FEFF}@"]+(\.[^<>()\[\]\\.,;:\s\x0B\p{Z}\x{FEFF}@"]+)*)|("[^\n\r\x{2028}\x{2029}]+"))@((\[[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\])|(([a-zA-Z\-0-9]+\.)+[a-zA-Z]{2,}))$`)

// Normalise trims and lower-cases an email for validation and lookup.
//
// Emails are put in Unicode normalisation form C, so that an address typed
// with a precomposed "é" and one with "e" and a combining accent are one
// account. NFC, not NFKC: the compatibility mappings of NFKC (fullwidth
// letters, ligatures) would change the mailbox the user typed, and mail
// must reach it.
func Normalise(s string) string {
	return norm.NFC.String(strings.ToLower(strings.TrimSpace(s)))
}

// FromProvider is Normalise for an address a provider reports, or "" when
// normalising would change it into the address of another mailbox. The
// provider vouches for the address it sent; the library's equivalences
// may carry that over to the normalised form only where they are letter
// case, as they are for a user who types an address: KATE@EXAMPLE.COM is
// kate@example.com, and ÉMILE@ is émile@. So, after trimming spaces, an
// address is refused when
//
//   - it is not valid UTF-8, or not already in NFC: NFC maps the KELVIN
//     SIGN U+212A onto K, the ANGSTROM SIGN U+212B onto Å, the OHM SIGN
//     U+2126 onto Ω, and a decomposed á onto the precomposed one, and a
//     mail server need not;
//   - lower-casing turns a rune into a letter whose upper case is not that
//     rune: U+0130 İ becomes i, whose upper case is I, so İrene@ would be
//     irene@ (likewise the KELVIN SIGN's k, the capital sharp s and the
//     title-case digraphs such as ǅ).
func FromProvider(raw string) string {
	s := strings.TrimSpace(raw)
	if !utf8.ValidString(s) || !norm.NFC.IsNormalString(s) {
		return ""
	}
	for _, r := range s {
		if lower := unicode.ToLower(r); lower != r && unicode.ToUpper(lower) != r {
			return ""
		}
	}
	return Normalise(s)
}

// Valid reports whether a normalised, non-empty email is one to accept.
// Beyond the SuperTokens regex it refuses:
//
//   - invalid UTF-8 and control characters: no mailbox has them, and SQL
//     stores cannot hold a NUL;
//   - format characters (Unicode category Cf: zero-width spaces and
//     joiners, the soft hyphen, bidi overrides), which render as nothing
//     and so make look-alikes of other accounts;
//   - what the library's own mailer would refuse to send to, such as a
//     quoted local part or an address literal net/mail cannot read: a
//     user with such an address could never get a reset email.
func Valid(email string) bool {
	return len(email) <= maxEmailLen && utf8.ValidString(email) &&
		!strings.ContainsFunc(email, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) &&
		emailPattern.MatchString(email) && mailable(email)
}

// mailable reports whether email is a bare address that net/mail reads
// back unchanged, as mailer.Message requires of its recipients.
func mailable(email string) bool {
	a, err := mail.ParseAddress(email)
	return err == nil && a.Name == "" && a.Address == email
}

// IsPhone tells a passwordless login's phone number from its email: an
// email may begin with "+" too, but a normalised phone number is digits
// after it.
func IsPhone(contact string) bool {
	if len(contact) < 2 || contact[0] != '+' {
		return false
	}
	for _, c := range contact[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// NormalisePhone returns a phone number in E.164 form: "+", then 8 to 15
// digits, the first not 0, with the spaces, dots, dashes and brackets
// people type between them removed.
func NormalisePhone(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) > 32 || !strings.HasPrefix(s, "+") {
		return "", false
	}
	var b strings.Builder
	b.WriteByte('+')
	for _, c := range s[1:] {
		switch {
		case c >= '0' && c <= '9':
			b.WriteRune(c)
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')':
		default:
			return "", false
		}
	}
	p := b.String()
	return p, len(p) >= 9 && len(p) <= 16 && p[1] != '0'
}
