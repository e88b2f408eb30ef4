package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
)

func TestPrometheusExport(t *testing.T) {
	m := newPromMetrics()
	s := authtest.NewServer(t, auth.Config{Metrics: m})
	s.Mux.Handle("GET /metrics", m)
	c, u := s.SignedIn(authtest.Header)
	c.SignIn(u.Email, "wrong password 1")
	c.SignIn(u.Email, authtest.Password)
	_, old := c.Tokens()
	c.Refresh()
	c.SetTokens("", old)
	if res := c.Refresh(); res.Message != "token theft detected" {
		t.Fatalf("replay: %d %s", res.StatusCode, res.Body)
	}
	res := c.Get("/metrics")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", res.StatusCode)
	}
	body := string(res.Body)
	for _, want := range []string{
		`auth_events_total{kind="sign_up"} 1`,
		`auth_events_total{kind="sign_in"} 2`, // the sign-up's session, and the second sign-in
		`auth_events_total{kind="sign_in_failed"} 1`,
		`auth_events_total{kind="refresh"} 1`,
		`auth_events_total{kind="token_theft"} 1`,
		`auth_events_total{kind="session_refused"} 1`,
		`auth_refusals_total{reason="token_theft_previous"} 1`,
		"# TYPE auth_refusals_total counter",
		`auth_hash_wait_seconds_count 3`, // one hash each: sign-up, two sign-ins
		`auth_hash_wait_seconds_bucket{le="+Inf"} 3`,
		"# TYPE auth_hash_wait_seconds histogram",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}

func TestHistogramBuckets(t *testing.T) {
	m := newPromMetrics()
	m.ObserveHashWait(0)
	m.ObserveHashWait(30 * time.Millisecond)
	m.ObserveHashWait(5 * time.Second)
	var b strings.Builder
	m.render(&b)
	for _, want := range []string{
		`auth_hash_wait_seconds_bucket{le="0.001"} 1`,
		`auth_hash_wait_seconds_bucket{le="0.025"} 1`,
		`auth_hash_wait_seconds_bucket{le="0.05"} 2`,
		`auth_hash_wait_seconds_bucket{le="2"} 2`,
		`auth_hash_wait_seconds_bucket{le="+Inf"} 3`,
		`auth_hash_wait_seconds_count 3`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("histogram lacks %q:\n%s", want, b.String())
		}
	}
}
