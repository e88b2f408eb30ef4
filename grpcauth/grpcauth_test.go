package grpcauth_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/authtest"
	"github.com/latchkit/auth/grpcauth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// health is a gRPC service that records the session its handlers see.
type health struct {
	healthpb.UnimplementedHealthServer
	mu   sync.Mutex
	seen []string // user ids, or "" for a call without a session
}

func (h *health) record(ctx context.Context) {
	s, _ := auth.SessionFromContext(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, s.UserID)
}

func (h *health) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.record(ctx)
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (h *health) Watch(_ *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	h.record(stream.Context())
	return stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
}

// serve starts a gRPC server on a loopback port with the interceptors of
// a and rules, and returns a client connected to it.
func serve(t *testing.T, a *auth.Auth, h *health, rules ...auth.Rule) healthpb.HealthClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(
		grpc.UnaryInterceptor(grpcauth.UnaryServerInterceptor(a, rules...)),
		grpc.StreamInterceptor(grpcauth.StreamServerInterceptor(a, rules...)),
	)
	healthpb.RegisterHealthServer(srv, h)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

// call makes a unary and a streaming call with token ("" for none) and
// returns the refusal's reason trailer and their errors.
func call(t *testing.T, c healthpb.HealthClient, token string) (reason string, unary, stream error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	var trailer metadata.MD
	_, unary = c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	if r := trailer.Get(grpcauth.ReasonTrailer); len(r) == 1 {
		reason = r[0]
	}
	w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = w.Recv()
	}
	return reason, unary, err
}

// wantRefused checks that both calls were refused with code and message,
// and the reason trailer.
func wantRefused(t *testing.T, what string, unary, stream error, reason string, code codes.Code, msg string, wantReason auth.Reason) {
	t.Helper()
	for kind, err := range map[string]error{"unary": unary, "stream": stream} {
		if st := status.Convert(err); st.Code() != code || !strings.HasPrefix(st.Message(), msg) {
			t.Errorf("%s, %s call: %v, want %v %q", what, kind, err, code, msg)
		}
	}
	if reason != string(wantReason) {
		t.Errorf("%s: reason trailer %q, want %q", what, reason, wantReason)
	}
}

func TestInterceptors(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{CheckSessionInStore: true})
	h := &health{}
	c := serve(t, s.Auth, h)
	signedIn := func() *authtest.Client {
		cl := s.NewClient(authtest.Header)
		if res := cl.SignIn("caller@example.com", "a good password 1"); res.Status != "OK" {
			t.Fatalf("sign-in: %s", res.Body)
		}
		return cl
	}
	if res := s.NewClient(authtest.Header).SignUp("caller@example.com", "a good password 1"); res.Status != "OK" {
		t.Fatalf("sign-up: %s", res.Body)
	}
	good := signedIn()

	_, unary, stream := call(t, c, good.AccessToken)
	if unary != nil || stream != nil {
		t.Fatalf("a good token: %v, %v", unary, stream)
	}
	if len(h.seen) != 2 || h.seen[0] == "" || h.seen[0] != h.seen[1] {
		t.Errorf("the handlers saw the sessions of %q, want the caller's twice", h.seen)
	}

	reason, unary, stream := call(t, c, "")
	wantRefused(t, "no token", unary, stream, reason, codes.Unauthenticated, "unauthorised", auth.ReasonNoToken)
	sig := strings.LastIndexByte(good.AccessToken, '.') + 1
	forged := good.AccessToken[:sig] + strings.Repeat("A", len(good.AccessToken)-sig)
	reason, unary, stream = call(t, c, forged)
	wantRefused(t, "a forged token", unary, stream, reason, codes.Unauthenticated, "try refresh token", auth.ReasonInvalid)

	out := signedIn()
	token := out.AccessToken
	if res := out.SignOut(); res.Status != "OK" {
		t.Fatalf("sign-out: %s", res.Body)
	}
	reason, unary, stream = call(t, c, token)
	wantRefused(t, "a signed-out session", unary, stream, reason, codes.Unauthenticated, "unauthorised", auth.ReasonSignedOut)

	s.Clock.Advance(auth.DefaultAccessTokenLifetime)
	reason, unary, stream = call(t, c, good.AccessToken)
	wantRefused(t, "an expired token", unary, stream, reason, codes.Unauthenticated, "try refresh token", auth.ReasonExpired)
	if len(h.seen) != 2 {
		t.Errorf("the handlers ran %d times, want 2: refused calls must not reach them", len(h.seen))
	}
}

// A claim that refuses the session refuses the call PermissionDenied.
func TestInterceptorsClaims(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{})
	c := serve(t, s.Auth, &health{}, auth.FactorWithin(auth.FactorTOTP, time.Minute))
	cl := s.NewClient(authtest.Header)
	if res := cl.SignUp("caller@example.com", "a good password 1"); res.Status != "OK" {
		t.Fatalf("sign-up: %s", res.Body)
	}
	reason, unary, stream := call(t, c, cl.AccessToken)
	wantRefused(t, "FactorWithin without the factor", unary, stream, reason, codes.PermissionDenied, "invalid claim: st-mfa", "")
}

// Metadata that is not one Bearer token is refused as malformed.
func TestInterceptorsMalformed(t *testing.T) {
	s := authtest.NewServer(t, auth.Config{})
	c := serve(t, s.Auth, &health{})
	for _, md := range [][]string{
		{"authorization", "Basic dXNlcjpwYXNz"},
		{"authorization", "Bearer a", "authorization", "Bearer b"},
	} {
		ctx := metadata.AppendToOutgoingContext(t.Context(), md...)
		var trailer metadata.MD
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
		if st := status.Convert(err); st.Code() != codes.Unauthenticated || !slices.Equal(trailer.Get(grpcauth.ReasonTrailer), []string{string(auth.ReasonMalformed)}) {
			t.Errorf("metadata %q: %v, reason %q; want Unauthenticated, malformed", md, err, trailer.Get(grpcauth.ReasonTrailer))
		}
	}
}
