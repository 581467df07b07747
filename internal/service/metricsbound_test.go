package service

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// get sends GET /healthz on conn and reads the answer's status.
func get(conn net.Conn) (int, error) {
	if _, err := fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: ptcd\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// TestMetricsConnectionsBounded: the metrics port, which answers without
// credentials, holds at most metricsConnectionsPerPeer connections from
// one address: past them a connection is closed unread, and one closed
// makes room again.
func TestMetricsConnectionsBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, loopback(t), Options{InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { cancel(); _ = s.Wait(ctx) })
	addr := s.lns.metrics.Addr().String()
	dial := func() net.Conn {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(time.Minute))
		return conn
	}
	// metricsConnectionsPerPeer connections that answered a request and
	// stay open (kept alive; the idle timeout is a minute).
	var held []net.Conn
	for range metricsConnectionsPerPeer {
		conn := dial()
		held = append(held, conn)
		if code, err := get(conn); err != nil || code != http.StatusOK {
			t.Fatalf("connection %d: %d %v", len(held), code, err)
		}
	}
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	over := dial()
	defer over.Close()
	if code, err := get(over); err == nil {
		t.Fatalf("connection %d past the bound answered %d", metricsConnectionsPerPeer+1, code)
	}
	// Closing one makes room; the server sees the close when it reads.
	_ = held[0].Close()
	held = held[1:]
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn := dial()
		code, err := get(conn)
		_ = conn.Close()
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room after a connection closed: %v", err)
		}
	}
}
