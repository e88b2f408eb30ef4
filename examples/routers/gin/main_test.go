package main

import (
	"io"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/latchkit/auth"
	"github.com/latchkit/auth/examples/routers/internal/routertest"
)

func TestRouter(t *testing.T) {
	gin.SetMode(gin.TestMode)
	gin.DefaultWriter = io.Discard // gin.Default's request log
	routertest.Run(t, routertest.Example{
		Config: config,
		Router: func(a *auth.Auth) http.Handler { return newRouter(a) },
	})
}
