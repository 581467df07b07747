package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools/demo"
)

// hangGuard bounds a raw connection's wait for an answer: a server that
// never answers fails the test instead of hanging it. It decides nothing
// when the server answers.
const hangGuard = 30 * time.Second

// h2 is a raw HTTP/2 client connection, to send what a gRPC client would
// not: streams without a body, oversized headers.
type h2 struct {
	t    *testing.T
	conn net.Conn
	fr   *http2.Framer
	// settings is the server's first SETTINGS frame.
	settings map[http2.SettingID]uint32
}

// dialH2 opens a connection to addr and exchanges the prefaces.
func dialH2(t *testing.T, addr string) *h2 {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(hangGuard))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.MaxHeaderListSize = 1 << 20
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	c := &h2{t: t, conn: conn, fr: fr, settings: map[http2.SettingID]uint32{}}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's settings: %v", err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			_ = sf.ForeachSetting(func(s http2.Setting) error { c.settings[s.ID] = s.Val; return nil })
			if err := fr.WriteSettingsAck(); err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
}

// open starts stream id for a gRPC method with extra headers, without a
// body and without ending the stream.
func (c *h2) open(id uint32, method string, extra ...string) {
	c.t.Helper()
	if err := c.tryOpen(id, method, extra...); err != nil {
		c.t.Fatal(err)
	}
}

// tryOpen is open that returns a write error.
func (c *h2) tryOpen(id uint32, method string, extra ...string) error {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	fields := []string{":method", "POST", ":scheme", "http", ":path", method, ":authority", "ptc",
		"content-type", "application/grpc", "te", "trailers"}
	fields = append(fields, extra...)
	for i := 0; i < len(fields); i += 2 {
		_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	block := buf.Bytes()
	const chunk = 16 << 10
	first := block[:min(chunk, len(block))]
	rest := block[len(first):]
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(rest) == 0}); err != nil {
		return err
	}
	for len(rest) > 0 {
		n := min(chunk, len(rest))
		if err := c.fr.WriteContinuation(id, n == len(rest), rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// answer is how the server ended a stream: its grpc-status and message,
// or the code of a RST_STREAM.
type answer struct {
	status  string
	message string
	reset   http2.ErrCode
}

// answer reads frames until stream id is answered with a grpc-status or
// reset.
func (c *h2) answer(id uint32) answer {
	c.t.Helper()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.t.Fatalf("stream %d: no answer from the server: %v", id, err)
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if st := headerValue(f, "grpc-status"); f.StreamID == id && st != "" {
				msg, _ := url.PathUnescape(headerValue(f, "grpc-message"))
				return answer{status: st, message: msg}
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return answer{reset: f.ErrCode}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = c.fr.WritePing(true, f.Data)
			}
		case *http2.GoAwayFrame:
			c.t.Fatalf("stream %d: the server sent GOAWAY (%v)", id, f.ErrCode)
		}
	}
}

func headerValue(f *http2.MetaHeadersFrame, name string) string {
	for _, h := range f.Fields {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

// guarded serves the demo runner and the echo service behind
// TransportOptions(c) and returns the listener's address.
func guarded(t *testing.T, c server.TransportConfig) (string, *grpc.ClientConn) {
	t.Helper()
	gs := grpc.NewServer(server.TransportOptions(c)...)
	ptcv1.RegisterRunnerServiceServer(gs, server.New(newExecutor(t, demo.Tools()...)))
	testgrpc.RegisterTestServiceServer(gs, echoService{})
	conn := serve(t, gs)
	return conn.Target(), conn
}

// authenticator accepts the bearer tokens "secret" (tenant acme) and
// "other" (tenant other).
func authenticator(t *testing.T) *auth.Authenticator {
	t.Helper()
	a, err := auth.New(true, []auth.Tenant{{Name: "acme", TokenHashes: []string{auth.HashToken("secret")}},
		{Name: "other", TokenHashes: []string{auth.HashToken("other")}}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestTransportRefusesAtStreamStart: a stream without valid credentials
// is refused as soon as its headers arrive, before the server waits for
// (and buffers) its body; the client sent headers only, so a server that
// waited for the body would never answer.
func TestTransportRefusesAtStreamStart(t *testing.T) {
	refusals := make(chan string, 16)
	addr, _ := guarded(t, server.TransportConfig{Admit: authenticator(t).Admit,
		Refused: func(_ context.Context, method string, err error) {
			refusals <- method + " " + status.Code(err).String()
		}})
	for _, tc := range []struct {
		name   string
		method string
		extra  []string
		want   string
	}{
		{"no token", "/ptc.v1.RunnerService/Execute", nil, "credentials are missing"},
		{"wrong token", "/ptc.v1.RunnerService/Execute", []string{"authorization", "Bearer nope"}, "the bearer token is not valid"},
		{"malformed header", "/ptc.v1.RunnerService/Session", []string{"authorization", "Basic abc"}, "must be \"Bearer <token>\""},
		{"two headers", "/ptc.v1.RunnerService/ListTools", []string{"authorization", "Bearer a", "authorization", "Bearer b"}, "one authorization header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialH2(t, addr)
			c.open(1, tc.method, tc.extra...)
			a := c.answer(1)
			if a.status != "16" || !strings.Contains(a.message, tc.want) {
				t.Fatalf("answer = %+v, want UNAUTHENTICATED (16) saying %q", a, tc.want)
			}
			// The refusal is reported (ptcd logs it: no interceptor sees it).
			if got := <-refusals; got != tc.method+" Unauthenticated" {
				t.Errorf("refusal reported as %q", got)
			}
			// The connection goes on serving: the refused stream's body,
			// sent late, is dropped, and a valid stream is admitted.
			if err := c.fr.WriteData(1, false, make([]byte, 16<<10)); err != nil {
				t.Fatal(err)
			}
			c.open(3, "/grpc.testing.TestService/UnaryCall", "authorization", "Bearer secret")
			if err := c.fr.WriteData(3, true, []byte{0, 0, 0, 0, 0}); err != nil {
				t.Fatal(err)
			}
			if a := c.answer(3); a.status != "0" {
				t.Fatalf("authenticated call after the refusal: %+v, want OK", a)
			}
		})
	}
}

// TestTransportHealthNeedsNoCredentials: the health service stays open to
// load balancers at stream start too.
func TestTransportHealthNeedsNoCredentials(t *testing.T) {
	addr, _ := guarded(t, server.TransportConfig{Admit: authenticator(t).Admit})
	c := dialH2(t, addr)
	c.open(1, auth.HealthService+"Check")
	if err := c.fr.WriteData(1, true, []byte{0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	// No health service is registered here: UNIMPLEMENTED, not
	// UNAUTHENTICATED, shows the stream was admitted.
	if a := c.answer(1); a.status != "12" {
		t.Fatalf("answer = %+v, want UNIMPLEMENTED (12)", a)
	}
}

// TestTransportHeaderListLimit: headers beyond the bound are not held:
// the stream is reset or, as x/net/http2 does for a header block this far
// over the bound, the connection ends. Headers within it are served.
func TestTransportHeaderListLimit(t *testing.T) {
	addr, _ := guarded(t, server.TransportConfig{MaxHeaderListBytes: 16 << 10})
	var many []string
	for i := range 1024 {
		many = append(many, fmt.Sprintf("x-pad-%d", i), strings.Repeat("a", 1<<10))
	}
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"one 1 MiB field", []string{"x-pad", strings.Repeat("a", 1<<20)}},
		{"1024 fields of 1 KiB", many},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialH2(t, addr)
			if got := c.settings[http2.SettingMaxHeaderListSize]; got != 16<<10 {
				t.Errorf("SETTINGS_MAX_HEADER_LIST_SIZE = %d, want %d", got, 16<<10)
			}
			if err := c.tryOpen(1, "/grpc.testing.TestService/UnaryCall", tc.extra...); err != nil {
				return // the server ended the connection while the headers were sent
			}
			for {
				f, err := c.fr.ReadFrame()
				if isTimeout(err) {
					t.Fatal("the stream was held: no reset, no end of the connection")
				}
				if err != nil {
					return // the connection ended
				}
				switch f := f.(type) {
				case *http2.RSTStreamFrame:
					return // the stream was reset
				case *http2.GoAwayFrame:
					return
				case *http2.MetaHeadersFrame:
					t.Fatalf("oversized headers were answered as a call: %v", f.Fields)
				}
			}
		})
	}
	// Headers within the bound are served.
	c := dialH2(t, addr)
	c.open(1, "/grpc.testing.TestService/UnaryCall", "x-pad", strings.Repeat("a", 8<<10))
	if err := c.fr.WriteData(1, true, []byte{0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if a := c.answer(1); a.status != "0" {
		t.Fatalf("call within the bound: %+v, want OK", a)
	}
}

// TestTransportConcurrentStreamLimit: a connection's streams beyond the
// bound are refused (REFUSED_STREAM), and the bound is advertised.
func TestTransportConcurrentStreamLimit(t *testing.T) {
	addr, _ := guarded(t, server.TransportConfig{MaxConcurrentStreams: 3})
	c := dialH2(t, addr)
	if got := c.settings[http2.SettingMaxConcurrentStreams]; got != 3 {
		t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want 3", got)
	}
	for id := uint32(1); id <= 5; id += 2 {
		c.open(id, "/grpc.testing.TestService/FullDuplexCall")
	}
	c.open(7, "/grpc.testing.TestService/FullDuplexCall")
	if a := c.answer(7); a.reset != http2.ErrCodeRefusedStream {
		t.Fatalf("fourth stream: %+v, want REFUSED_STREAM", a)
	}
}

// TestTransportPendingStreamLimit: admitted streams still waiting for their
// first message are bounded across the server; one beyond is refused with
// RESOURCE_EXHAUSTED, and a stream whose message arrived no longer counts.
func TestTransportPendingStreamLimit(t *testing.T) {
	var refused atomic.Int32
	addr, conn := guarded(t, server.TransportConfig{MaxPendingStreams: 2, FirstMessageTimeout: time.Hour,
		Refused: func(_ context.Context, _ string, err error) {
			if status.Code(err) == codes.ResourceExhausted {
				refused.Add(1)
			}
		}})
	// Calls that send their message at once never hold a place for long:
	// many in a row pass the bound of 2.
	echo := testgrpc.NewTestServiceClient(conn)
	for i := range 20 {
		if _, err := echo.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	c := dialH2(t, addr)
	c.open(1, "/grpc.testing.TestService/FullDuplexCall")
	c.open(3, "/grpc.testing.TestService/FullDuplexCall")
	c.open(5, "/grpc.testing.TestService/UnaryCall")
	a := c.answer(5)
	if a.status != "8" || !strings.Contains(a.message, "max_pending_streams") {
		t.Fatalf("third waiting stream: %+v, want RESOURCE_EXHAUSTED (8) naming grpc.max_pending_streams", a)
	}
	if n := refused.Load(); n != 1 {
		t.Errorf("%d refusals reported, want 1", n)
	}
	// The first stream's message frees its place.
	if err := c.fr.WriteData(1, false, []byte{0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == 1 {
			break // the echo: the message was received
		}
	}
	c.open(7, "/grpc.testing.TestService/UnaryCall")
	if err := c.fr.WriteData(7, true, []byte{0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if a := c.answer(7); a.status != "0" {
		t.Fatalf("stream after a place was freed: %+v, want OK", a)
	}
}

// TestTransportPendingStreamsPerCaller: one tenant's streams waiting for
// their first message are bounded below the server's bound, so another
// tenant still gets a place.
func TestTransportPendingStreamsPerCaller(t *testing.T) {
	addr, _ := guarded(t, server.TransportConfig{Admit: authenticator(t).Admit, MaxPendingStreams: 10,
		MaxPendingStreamsPerCaller: 2, FirstMessageTimeout: time.Hour})
	c := dialH2(t, addr)
	acme := []string{"authorization", "Bearer secret"}
	c.open(1, "/grpc.testing.TestService/FullDuplexCall", acme...)
	c.open(3, "/grpc.testing.TestService/FullDuplexCall", acme...)
	c.open(5, "/grpc.testing.TestService/UnaryCall", acme...)
	a := c.answer(5)
	if a.status != "8" || !strings.Contains(a.message, "max_pending_streams_per_tenant") {
		t.Fatalf("acme's third waiting stream: %+v, want RESOURCE_EXHAUSTED (8) naming grpc.max_pending_streams_per_tenant", a)
	}
	c.open(7, "/grpc.testing.TestService/UnaryCall", "authorization", "Bearer other")
	if err := c.fr.WriteData(7, true, []byte{0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if a := c.answer(7); a.status != "0" {
		t.Fatalf("another tenant's call: %+v, want OK", a)
	}
	// acme's place frees when one of its streams ends.
	if err := c.fr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	for id := uint32(9); ; id += 2 {
		c.open(id, "/grpc.testing.TestService/UnaryCall", acme...)
		if err := c.fr.WriteData(id, true, []byte{0, 0, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
		a := c.answer(id)
		if a.status == "0" {
			break
		}
		// The server may see the reset after this stream: retried.
		if a.status != "8" || id > 2000 {
			t.Fatalf("acme after a stream ended: %+v, want OK", a)
		}
	}
}

// TestTransportFirstMessageTimeout: a stream that sends no message within
// the bound ends with DEADLINE_EXCEEDED — a unary call and a Session that
// never sends start alike; a Session that sent start runs on past the
// bound.
func TestTransportFirstMessageTimeout(t *testing.T) {
	const bound = 200 * time.Millisecond
	addr, conn := guarded(t, server.TransportConfig{MaxPendingStreams: 10, FirstMessageTimeout: bound})

	c := dialH2(t, addr)
	c.open(1, "/ptc.v1.RunnerService/Execute")
	if a := c.answer(1); a.status != "4" {
		t.Fatalf("unary call without a message: %+v, want DEADLINE_EXCEEDED (4)", a)
	}

	rpc := ptcv1.NewRunnerServiceClient(conn)
	s, err := rpc.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err = s.Recv(); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Session without start: %v, want DEADLINE_EXCEEDED", err)
	}

	// A Session that sent start holds its stream while a client tool call
	// waits longer than the bound.
	s, err = rpc.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	def := &ptcv1.ToolDefinition{Name: "wait", InputSchemaJson: `{"type":"object"}`}
	if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{
		Execute: jsReq(`return await tools.wait({})`), ClientTools: []*ptcv1.ToolDefinition{def}}}}); err != nil {
		t.Fatal(err)
	}
	m, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	call := m.GetToolCall()
	if call == nil {
		t.Fatalf("want a tool call, got %v", m)
	}
	<-time.After(3 * bound) // the stream outlives the first-message bound
	if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{
		CallId: call.GetCallId(), Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: `"done"`}}}}); err != nil {
		t.Fatal(err)
	}
	m, err = s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if res := m.GetResult(); res.GetResultJson() != `"done"` {
		t.Fatalf("result = %v, want \"done\"", m)
	}
}

// TestTransportAuthenticatedStreamsPass: with every bound on, ordinary
// authenticated calls run as before.
func TestTransportAuthenticatedStreamsPass(t *testing.T) {
	_, conn := guarded(t, server.TransportConfig{Admit: authenticator(t).Admit, MaxConcurrentStreams: 4,
		MaxHeaderListBytes: 16 << 10, MaxPendingStreams: 4, FirstMessageTimeout: time.Minute, ConnectionTimeout: time.Minute})
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer secret")
	res, err := ptcv1.NewRunnerServiceClient(conn).Execute(ctx, jsReq("return 1 + 1"))
	if err != nil || res.GetResultJson() != "2" {
		t.Fatalf("Execute = %v, %v; want 2", res, err)
	}
	_, err = ptcv1.NewRunnerServiceClient(conn).Execute(context.Background(), jsReq("return 1 + 1"))
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("without a token: %v, want UNAUTHENTICATED", err)
	}
}

// TestLimitListener: connections beyond the per-peer and the total bound
// are closed at once; a closed connection frees its place.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := server.LimitListener(inner, 2, 3)
	done := make(chan struct{})
	// The accept loop ends when the listener is closed. Each accepted
	// connection is greeted with one byte and held until the client
	// closes it.
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				_, _ = c.Write([]byte{'k'})
				_, _ = io.Copy(io.Discard, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() { _ = l.Close(); <-done })

	// held dials from local and reports whether the server holds the
	// connection (it greets it) or closed it (EOF).
	held := func(local string) (net.Conn, bool) {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c, err := d.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetReadDeadline(time.Now().Add(hangGuard))
		n, err := c.Read(make([]byte, 1))
		if n == 0 && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("dial from %s: neither greeted nor closed: %v", local, err)
		}
		return c, n == 1
	}
	a1, ok1 := held("127.0.0.1")
	_, ok2 := held("127.0.0.1")
	if !ok1 || !ok2 {
		t.Fatal("a connection within the bounds was closed")
	}
	if _, ok := held("127.0.0.1"); ok {
		t.Fatal("a third connection of one peer was held, want it closed (per-peer bound 2)")
	}
	if _, ok := held("127.0.0.2"); !ok {
		t.Fatal("another peer's first connection was closed")
	}
	if _, ok := held("127.0.0.2"); ok {
		t.Fatal("a fourth connection was held, want it closed (total bound 3)")
	}
	_ = a1.Close()
	// The place frees once the server's side of a1 is closed (its copy
	// reaches EOF): retried until then.
	for i := 0; ; i++ {
		if _, ok := held("127.0.0.1"); ok {
			break
		}
		if i == 1000 {
			t.Fatal("a closed connection never gave its place back")
		}
	}
}

// isTimeout reports a read that hit the hang guard.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
