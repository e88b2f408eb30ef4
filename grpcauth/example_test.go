package grpcauth_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http/httptest"
	"strings"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/grpcauth"
	"github.com/latchkit/auth/store/memstore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// A gRPC server whose calls need a session. The client signs up over
// HTTP in header mode, then sends its access token as a call's metadata.
func Example() {
	a, err := auth.New(auth.Config{Store: memstore.New()})
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(
		grpc.UnaryInterceptor(grpcauth.UnaryServerInterceptor(a)),
		grpc.StreamInterceptor(grpcauth.StreamServerInterceptor(a)),
	)
	healthpb.RegisterHealthServer(srv, grpchealth.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	req := httptest.NewRequest("POST", "/auth/signup", strings.NewReader(
		`{"formFields":[{"id":"email","value":"ada@example.com"},{"id":"password","value":"analytical engine 1"}]}`))
	req.Header.Set("st-auth-mode", "header")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	token := rec.Header().Get("st-access-token")

	conn, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)

	_, err = client.Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(status.Code(err), status.Convert(err).Message())
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
	res, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(res.GetStatus(), err)
	// Output:
	// Unauthenticated unauthorised
	// SERVING <nil>
}
