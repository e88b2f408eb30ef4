package main

import (
	"testing"

	"github.com/latchkit/auth/examples/routers/internal/routertest"
)

func TestRouter(t *testing.T) {
	routertest.Run(t, routertest.Example{Config: config, Router: newRouter})
}
