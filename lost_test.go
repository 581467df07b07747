package ptc_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// dyingServer serves a tool charge that, once called and once heard is
// closed, drops every connection of the server (gs.Stop, as a killed
// ptcd would) and waits for its call to end. It returns the address.
func dyingServer(t *testing.T, heard <-chan struct{}) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	charge := tools.Tool{Definition: tools.Definition{Name: "charge"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
		// Stop cancels the calls it cuts off, this one included; it
		// returns without waiting for their handlers.
		<-heard
		go gs.Stop()
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	reg := tools.NewRegistry()
	if err := reg.Register(charge); err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex))
	done := make(chan struct{})
	go func() { _ = gs.Serve(lis); close(done) }()
	t.Cleanup(func() {
		gs.Stop()
		<-done
		_ = ex.Close()
	})
	return lis.Addr().String()
}

// TestClientConnectionLost: a server that goes away after the script
// called a tool makes Execute and Run fail with a *ConnectionLostError
// naming the execution (the request's, or one the client made up) and,
// for Run, the call that started; a server never reached is a plain
// Unavailable.
func TestClientConnectionLost(t *testing.T) {
	const src = `await tools.charge({amount: 5}); return "charged"`
	tests := []struct {
		name string
		id   string
		call func(ctx context.Context, c *ptc.Client, req ptc.Request) error
		// wantStarted is the calls listed.
		wantStarted []string
	}{
		{"execute", "charge-1", func(ctx context.Context, c *ptc.Client, req ptc.Request) error {
			_, err := c.Execute(ctx, req)
			return err
		}, nil},
		{"execute without an id", "", func(ctx context.Context, c *ptc.Client, req ptc.Request) error {
			_, err := c.Execute(ctx, req)
			return err
		}, nil},
		{"run", "charge-2", func(ctx context.Context, c *ptc.Client, req ptc.Request) error {
			_, err := c.Run(ctx, req)
			return err
		}, []string{"charge"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The server dies once the client heard the call start (Run),
			// at once for Execute, which hears nothing.
			heard := make(chan struct{})
			var once sync.Once
			if tt.wantStarted == nil {
				close(heard)
			}
			c, err := ptc.Dial(dyingServer(t, heard))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req := ptc.Request{Source: src, ExecutionID: tt.id}
			if tt.wantStarted != nil {
				req.OnProgress = func(ptc.ProgressEvent) { once.Do(func() { close(heard) }) }
			}
			err = tt.call(context.Background(), c, req)
			var lost *ptc.ConnectionLostError
			if !errors.As(err, &lost) {
				t.Fatalf("%T %v, want a *ptc.ConnectionLostError", err, err)
			}
			if tt.id != "" && lost.ExecutionID != tt.id || tt.id == "" && !strings.HasPrefix(lost.ExecutionID, "ptc-") {
				t.Fatalf("execution id %q, want %q", lost.ExecutionID, tt.id)
			}
			var tools []string
			for _, c := range lost.StartedCalls {
				tools = append(tools, c.Tool)
			}
			if strings.Join(tools, ",") != strings.Join(tt.wantStarted, ",") {
				t.Fatalf("started calls %+v, want %v", lost.StartedCalls, tt.wantStarted)
			}
			if code := ptc.CodeOf(err); code != ptc.Unavailable && code != ptc.Internal && code != ptc.Unknown {
				t.Fatalf("code %v", code)
			}
			if !strings.Contains(err.Error(), "outcome is unknown") || !strings.Contains(err.Error(), lost.ExecutionID) {
				t.Fatalf("message %q", err)
			}
		})
	}

	t.Run("never reached", func(t *testing.T) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := lis.Addr().String()
		_ = lis.Close()
		c, err := ptc.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.Execute(context.Background(), ptc.Request{Source: src})
		var lost *ptc.ConnectionLostError
		if errors.As(err, &lost) || ptc.CodeOf(err) != ptc.Unavailable {
			t.Fatalf("%T %v, want a plain Unavailable", err, err)
		}
	})
}
