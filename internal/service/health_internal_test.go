package service

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestHealthWatchBounded: one client address holds at most
// maxHealthWatchesPerPeer Watch streams; the next is refused with
// RESOURCE_EXHAUSTED, Check still answers, and a closed stream frees its
// place.
func TestHealthWatchBounded(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, newBoundedHealth(hs))
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := healthpb.NewHealthClient(conn)

	// watch opens a Watch stream and waits for its first status, so the
	// server holds the stream; it returns the stream's cancel.
	watch := func() (context.CancelFunc, error) {
		ctx, cancel := context.WithCancel(context.Background())
		w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv()
		}
		if err != nil {
			cancel()
			return nil, err
		}
		return cancel, nil
	}
	var open []context.CancelFunc
	defer func() {
		for _, cancel := range open {
			cancel()
		}
	}()
	for range maxHealthWatchesPerPeer {
		cancel, err := watch()
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, cancel)
	}
	if _, err := watch(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a Watch past the bound: %v, want RESOURCE_EXHAUSTED", err)
	}
	if r, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check: %v %v", r, err)
	}
	// A closed stream frees its place once the server has seen it end.
	open[0]()
	open = open[1:]
	for {
		cancel, err := watch()
		if err == nil {
			open = append(open, cancel)
			break
		}
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatal(err)
		}
	}
}
