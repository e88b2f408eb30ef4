package main

import (
	"bufio"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseOptionsOTel(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, ""},
		{[]string{"-otel", "stdout"}, nil, "stdout"},
		{nil, map[string]string{"DEMO_OTEL": "stdout"}, "stdout"},
		{[]string{"-otel", "off"}, map[string]string{"DEMO_OTEL": "stdout"}, ""},
	} {
		o, err := parseOptions(tc.args, func(k string) string { return tc.env[k] })
		if err != nil || o.otel != tc.want {
			t.Errorf("parseOptions(%q) with env %v: otel %q, %v; want %q", tc.args, tc.env, o.otel, err, tc.want)
		}
	}
	if _, err := parseOptions([]string{"-otel", "jaeger"}, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "-otel") {
		t.Errorf("-otel jaeger: %v, want an error naming -otel", err)
	}
}

// TestOTel runs a sign-up with -otel stdout: its span, with its events,
// is a line of JSON on standard output, and the demo's pages under /auth/
// have none; no line holds the email.
func TestOTel(t *testing.T) {
	spans := &syncBuffer{}
	d := newTestDemo(t, func(o *options) {
		stop, err := startOTel(o, spans)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := stop(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}, "-otel", "stdout")
	if r := d.do("GET", "/auth/reset-password", "", "", nil); r.status != 200 {
		t.Fatalf("reset page: %d", r.status)
	}
	creds := map[string]any{"formFields": []map[string]string{{"id": "email", "value": "ada@example.com"}, {"id": "password", "value": "correct horse 1"}}}
	if r := d.do("POST", "/auth/signup", "", "", creds); r.status != 200 {
		t.Fatalf("sign-up: %d %s", r.status, r.body)
	}

	type span struct {
		Name   string
		Events []struct{ Name string }
	}
	var got []span
	deadline := time.Now().Add(5 * time.Second)
	for !slices.ContainsFunc(got, func(s span) bool { return s.Name == "auth POST /signup" }) {
		if time.Now().After(deadline) {
			t.Fatalf("no span of the sign-up in %q", spans.String())
		}
		time.Sleep(10 * time.Millisecond)
		got = got[:0]
		sc := bufio.NewScanner(strings.NewReader(spans.String()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var s span
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				t.Fatalf("a line that is not a span: %v: %q", err, sc.Text())
			}
			got = append(got, s)
		}
	}
	for _, s := range got {
		if strings.Contains(s.Name, "reset-password") || s.Name == "auth GET" {
			t.Errorf("a span for the reset page: %q", s.Name)
		}
		if s.Name == "auth POST /signup" && (len(s.Events) != 2 || s.Events[0].Name != "sign_up" || s.Events[1].Name != "sign_in") {
			t.Errorf("the sign-up's events %v, want sign_up and sign_in", s.Events)
		}
	}
	if strings.Contains(spans.String(), "ada@example.com") {
		t.Errorf("the spans hold the email:\n%s", spans.String())
	}
}
