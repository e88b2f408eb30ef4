// Package grpcauth checks the session of gRPC calls with an [auth.Auth].
// A call carries the access token as HTTP requests in header mode do, in
// its "authorization" metadata ("Bearer <token>"); the interceptors hold it
// to the rules and reasons of [auth.Auth.RequireSession] through
// [auth.Auth.VerifyToken], and put the session in the handler's context,
// where [auth.SessionFromContext] reads it:
//
//	srv := grpc.NewServer(
//		grpc.UnaryInterceptor(grpcauth.UnaryServerInterceptor(a)),
//		grpc.StreamInterceptor(grpcauth.StreamServerInterceptor(a)),
//	)
//
// A call is refused with
//
//   - codes.Unauthenticated, message "unauthorised", when it carries no
//     token or its session has ended (with Config.CheckSessionInStore, at
//     once); "try refresh token" when the token has expired or is not one
//     the Auth issued: the client refreshes over HTTP and calls again. The
//     trailer "auth-reason" holds the [auth.Reason], as the Auth-Reason
//     header does over HTTP;
//   - codes.PermissionDenied when a claim refuses the session (an
//     unverified email in required mode, a second factor not completed),
//     with the claim and its message;
//   - codes.Unavailable when the store is down or the call's context ends,
//     and codes.Internal for any other failure, whose cause is not sent.
//
// The package is apart from package auth so that applications without
// gRPC do not build it.
package grpcauth

import (
	"context"
	"errors"
	"strings"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/store"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// ReasonTrailer is the trailer that says why a call was refused
// Unauthenticated: an [auth.Reason].
const ReasonTrailer = "auth-reason"

// UnaryServerInterceptor checks the session of each unary call with a and
// rules, and serves the call with the session in its context.
func UnaryServerInterceptor(a *auth.Auth, rules ...auth.Rule) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := authenticate(ctx, a, rules)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor checks the session of each stream when it
// opens, with a and rules, and serves the stream with the session in its
// context. A stream that outlives its access token is not cut off: a
// long-lived stream that must end with its session checks again itself.
func StreamServerInterceptor(a *auth.Auth, rules ...auth.Rule) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := authenticate(ss.Context(), a, rules)
		if err != nil {
			return err
		}
		return handler(srv, &sessionStream{ss, ctx})
	}
}

// sessionStream is a stream whose context carries its session.
type sessionStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *sessionStream) Context() context.Context { return s.ctx }

// authenticate verifies the token of the call in ctx and returns ctx with
// its session, or the status to refuse the call with.
func authenticate(ctx context.Context, a *auth.Auth, rules []auth.Rule) (context.Context, error) {
	token, ok := bearer(ctx)
	if !ok {
		return ctx, refuse(ctx, auth.ReasonMalformed, auth.ErrTryRefreshToken)
	}
	s, err := a.VerifyToken(ctx, token, rules...)
	if err != nil {
		return ctx, refusal(ctx, err)
	}
	return auth.ContextWithSession(ctx, s), nil
}

// bearer returns the token of the call's authorization metadata: "" when
// there is none, and false when there are several or the scheme is not
// Bearer.
func bearer(ctx context.Context) (string, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get("authorization")
	switch len(values) {
	case 0:
		return "", true
	case 1:
	default:
		return "", false
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// refusal is the status for an error of VerifyToken.
func refusal(ctx context.Context, err error) error {
	var claim *auth.ClaimError
	var se *auth.SessionError
	switch {
	case errors.As(err, &claim):
		return status.Error(codes.PermissionDenied, "invalid claim: "+claim.Claim+": "+claim.Message)
	case errors.As(err, &se) && errors.Is(err, auth.ErrUnauthorized):
		return refuse(ctx, se.Reason, auth.ErrUnauthorized)
	case errors.As(err, &se) && errors.Is(err, auth.ErrTryRefreshToken):
		return refuse(ctx, se.Reason, auth.ErrTryRefreshToken)
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.Unavailable, "the session could not be checked; try again")
	default:
		return status.Error(codes.Internal, "internal error")
	}
}

// refuse is the Unauthenticated status of a session refused for reason
// with answer, ErrUnauthorized or ErrTryRefreshToken.
func refuse(ctx context.Context, reason auth.Reason, answer error) error {
	// The trailer rides on the status; a failure to set it leaves the
	// status as it is.
	_ = grpc.SetTrailer(ctx, metadata.Pairs(ReasonTrailer, string(reason)))
	msg := "unauthorised"
	if answer == auth.ErrTryRefreshToken {
		msg = "try refresh token"
	}
	return status.Error(codes.Unauthenticated, msg)
}
