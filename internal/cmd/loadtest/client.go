package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// client sends the phases' requests to the demo over loopback HTTP.
type client struct {
	base string
	hc   *http.Client
}

func newClient(base string, conns int, timeout time.Duration) *client {
	tr := &http.Transport{
		Proxy:               nil, // loopback only, never a proxy
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &client{base: base, hc: &http.Client{Transport: tr, Timeout: timeout}}
}

// answer is a response read in full.
type answer struct {
	code int
	hdr  http.Header
	body []byte
}

func (c *client) do(ctx context.Context, method, path, bearer, body string) (answer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return answer{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(path, "/auth/") {
		req.Header.Set("st-auth-mode", "header")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return answer{code: res.StatusCode, hdr: res.Header, body: b}, err
}

// errKey names a transport error for the error table.
func errKey(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "no answer"
	}
}

// expect200 turns an answer into an outcome: 200 with, for the auth
// endpoints, {"status":"OK"}.
func expect200(a answer, err error, authStatus bool) outcome {
	if err != nil {
		return outcome{err: errKey(err)}
	}
	if a.code != http.StatusOK {
		return outcome{err: strconv.Itoa(a.code)}
	}
	if authStatus && !bytes.Contains(a.body, []byte(`"status":"OK"`)) {
		var s struct{ Status string }
		json.Unmarshal(a.body, &s)
		return outcome{err: "200 " + s.Status}
	}
	return outcome{}
}

func credentials(email string) string {
	b, _ := json.Marshal(map[string]any{"formFields": []map[string]string{
		{"id": "email", "value": email}, {"id": "password", "value": password},
	}})
	return string(b)
}

// session is a worker's user and tokens.
type session struct {
	email, access, refresh string
}

// signUp creates n users in header mode, a few at a time.
func signUp(ctx context.Context, cl *client, prefix string, n int) ([]session, error) {
	out := make([]session, n)
	err := fewAtATime(n, func(i int) error {
		email := fmt.Sprintf("%s-%d@example.com", prefix, i)
		a, err := cl.do(ctx, "POST", "/auth/signup", "", credentials(email))
		if o := expect200(a, err, true); o.err != "" {
			return fmt.Errorf("sign-up %s: %s %s %v", email, o.err, bytes.TrimSpace(a.body), err)
		}
		out[i] = session{email, a.hdr.Get("st-access-token"), a.hdr.Get("st-refresh-token")}
		if out[i].access == "" || out[i].refresh == "" {
			return fmt.Errorf("sign-up %s: no tokens in the response headers", email)
		}
		return nil
	})
	return out, err
}

// fewAtATime runs f(0) to f(n-1), 8 at a time, and returns one of their
// errors, if any.
func fewAtATime(n int, f func(i int) error) error {
	errc := make(chan error, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := f(i); err != nil {
				errc <- err
			}
		})
	}
	wg.Wait()
	close(errc)
	return <-errc
}
