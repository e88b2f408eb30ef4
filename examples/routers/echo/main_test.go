package main

import (
	"net/http"
	"testing"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/examples/routers/internal/routertest"
)

func TestRouter(t *testing.T) {
	routertest.Run(t, routertest.Example{
		Config: config,
		Router: func(a *auth.Auth) http.Handler { return newRouter(a) },
	})
}
