package mailer

import (
	htmltemplate "html/template"
	"net/mail"
	"strings"
	texttemplate "text/template"
)

// Template renders an email from the data of its kind: each feature that
// sends one documents the data its templates get (the reset email's, the
// verification email's, ...) and offers its default as a starting point.
type Template struct {
	Subject *texttemplate.Template
	Text    *texttemplate.Template // the plain-text body
	HTML    *htmltemplate.Template // the HTML body; nil for text only
}

// Clone copies t, its parsed templates included: a template's
// definitions can be added to after parsing, and the copy's are its own.
// An HTML template that has been executed cannot be cloned (html/template
// refuses), so clone a template before its first Render.
func (t Template) Clone() (Template, error) {
	subject, err := t.Subject.Clone()
	if err != nil {
		return Template{}, err
	}
	text, err := t.Text.Clone()
	if err != nil {
		return Template{}, err
	}
	out := Template{Subject: subject, Text: text}
	if t.HTML != nil {
		if out.HTML, err = t.HTML.Clone(); err != nil {
			return Template{}, err
		}
	}
	return out, nil
}

// Render executes the templates of t with data, for a message from from
// to to, each an address with or without a display name ("Name <addr>").
func (t *Template) Render(from, to string, data any) (Message, error) {
	var subject, text, html strings.Builder
	if err := t.Subject.Execute(&subject, data); err != nil {
		return Message{}, err
	}
	if err := t.Text.Execute(&text, data); err != nil {
		return Message{}, err
	}
	if t.HTML != nil {
		if err := t.HTML.Execute(&html, data); err != nil {
			return Message{}, err
		}
	}
	return Message{
		From:    address(from),
		To:      address(to),
		Subject: strings.TrimSpace(subject.String()),
		Text:    text.String(),
		HTML:    html.String(),
	}, nil
}

// address parses "Name <addr>" or a bare address. One that does not parse
// is kept as it is, for Message's own checks to refuse.
func address(s string) mail.Address {
	if a, err := mail.ParseAddress(s); err == nil {
		return *a
	}
	return mail.Address{Address: s}
}
