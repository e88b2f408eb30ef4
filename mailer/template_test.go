package mailer_test

import (
	htmltemplate "html/template"
	"net/mail"
	"testing"
	texttemplate "text/template"

	"github.com/latchkit/auth/mailer"
)

// Render fills each part from the data, and reads the addresses with or
// without a display name; a clone's templates are its own.
func TestTemplateRender(t *testing.T) {
	tmpl := mailer.Template{
		Subject: texttemplate.Must(texttemplate.New("s").Parse(" Hello {{.Name}} \n")),
		Text:    texttemplate.Must(texttemplate.New("t").Parse("Hi {{.Name}}")),
		HTML:    htmltemplate.Must(htmltemplate.New("h").Parse("<p>Hi {{.Name}}</p>")),
	}
	clone, err := tmpl.Clone()
	if err != nil {
		t.Fatal(err)
	}
	msg, err := tmpl.Render("Example <no-reply@example.com>", "ada@example.com", struct{ Name string }{"<Ada>"})
	if err != nil {
		t.Fatal(err)
	}
	want := mailer.Message{
		From:    mail.Address{Name: "Example", Address: "no-reply@example.com"},
		To:      mail.Address{Address: "ada@example.com"},
		Subject: "Hello <Ada>",
		Text:    "Hi <Ada>",
		HTML:    "<p>Hi &lt;Ada&gt;</p>",
	}
	if msg != want {
		t.Errorf("Render: %+v, want %+v", msg, want)
	}

	texttemplate.Must(clone.Text.Parse("Changed"))
	if msg, _ := tmpl.Render("a@example.com", "b@example.com", struct{ Name string }{"x"}); msg.Text != "Hi x" {
		t.Errorf("a change to a clone reached the original: %q", msg.Text)
	}
	clone.HTML = nil
	if msg, err := clone.Render("a@example.com", "b@example.com", nil); err != nil || msg.HTML != "" || msg.Text != "Changed" {
		t.Errorf("a text-only template: %+v, %v", msg, err)
	}
	if _, err := tmpl.Clone(); err == nil {
		t.Error("Clone of an executed HTML template: nil error, want html/template's")
	}
}
