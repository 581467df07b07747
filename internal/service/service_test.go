package service

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/config"
)

// loopback is a configuration that serves on free loopback ports, runs
// scripts in this process and has the demo tools.
func loopback(t *testing.T) *config.Config {
	t.Helper()
	c := config.Default()
	c.Listen, c.Metrics.Listen = "127.0.0.1:0", "127.0.0.1:0"
	c.DemoTools = true
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServiceStartsAndStops assembles ptcd, serves and shuts it down.
func TestServiceStartsAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, loopback(t), Options{InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Runtime().Registry.Definitions()); got == 0 {
		t.Fatal("no demo tools in the registry")
	}
	s.Start()
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatalf("the gRPC listener does not accept: %v", err)
	}
	_ = conn.Close()
	cancel()
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("Wait after the context ended = %v, want nil", err)
	}
}

// TestBindErrorNamesTheFlag checks that a listener whose address is in
// use fails New with a *BindError naming the listener, its flag, its key
// and how to turn it off.
func TestBindErrorNamesTheFlag(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	cases := []struct {
		name string
		set  func(c *config.Config)
		want string
	}{
		{"grpc", func(c *config.Config) { c.Listen = addr },
			"gRPC listener (--listen, listen): listen tcp " + addr + ": bind: address already in use: give another address"},
		{"metrics", func(c *config.Config) { c.Metrics.Listen = addr },
			"metrics listener (--metrics-listen, metrics.listen): listen tcp " + addr + `: bind: address already in use: give another address, or --metrics-listen "" to turn it off`},
		{"mcp", func(c *config.Config) { c.MCP.Listen = addr },
			"MCP listener (--mcp.listen, mcp.listen): listen tcp " + addr + `: bind: address already in use: give another address, or --mcp.listen "" to turn it off`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := loopback(t)
			tc.set(c)
			_, err := New(context.Background(), c, Options{InProcess: true})
			var be *BindError
			if !errors.As(err, &be) || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestRuntimeForStdio assembles the Runtime `ptc mcp --config` serves:
// no continuation store, scripts in this process.
func TestRuntimeForStdio(t *testing.T) {
	c := loopback(t)
	c.Durable.Store.File = t.TempDir() + "/never-opened.db"
	rt, err := NewRuntime(context.Background(), c, Options{InProcess: true, NoContinuations: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.EphemeralKeys() {
		t.Fatal("EphemeralKeys without a continuation manager")
	}
	if err := rt.Ready(); err != nil {
		t.Fatal(err)
	}
	if names := strings.Join(rt.Registry.Names(), ","); !strings.Contains(names, ".") && names == "" {
		t.Fatal("no tools")
	}
}
