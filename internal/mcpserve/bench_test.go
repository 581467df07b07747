package mcpserve_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/mcpserve"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// BenchmarkExecute runs the same program through one server (in-process
// engine, the demo tools, authentication on the anonymous tenant) over
// gRPC with the Go client, over MCP streamable HTTP and over MCP stdio
// (OS pipes), each with a client of its own protocol:
//
//	go test -run '^$' -bench Execute ./internal/mcpserve/
func BenchmarkExecute(b *testing.B) {
	srv := newBackend(b)
	authn, err := auth.New(false, nil)
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	src, _ := example(b)
	programs := []struct{ name, code string }{
		{"program=trivial", "return 1"},
		{"program=expenses", src},
	}

	// gRPC: ptcd's interceptor chain and the Go client over TCP.
	gs := grpc.NewServer(server.Interceptors(server.ChainConfig{Log: quiet, Auth: authn.Authenticate})...)
	ptcv1.RegisterRunnerServiceServer(gs, srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	// The serve goroutine ends at Stop.
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	client, err := ptc.Dial(lis.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()

	// MCP over streamable HTTP.
	m := mcpserve.New(mcpserve.Config{Backend: srv, Logger: quiet})
	hs := httptest.NewServer(m.Handler(mcpserve.HTTPConfig{Authenticate: func(r *http.Request) (mcpserve.Caller, error) {
		t, err := authn.AuthenticateHTTP(r)
		if err != nil {
			return mcpserve.Caller{}, err
		}
		return mcpserve.Caller{Key: t.Name, Bind: func(ctx context.Context) context.Context { return auth.WithTenant(ctx, t) }}, nil
	}}))
	defer hs.Close()
	httpSession, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer httpSession.Close()

	// MCP over stdio: the server reads one pipe and writes another.
	stdioSession := stdioPipes(b, m)

	for _, p := range programs {
		b.Run("transport=grpc/"+p.name, func(b *testing.B) {
			for b.Loop() {
				res, err := client.Execute(context.Background(), ptc.Request{Source: p.code})
				if err != nil || res.Error != nil {
					b.Fatal(err, res.Error)
				}
			}
		})
		for _, mt := range []struct {
			name string
			cs   *sdk.ClientSession
		}{{"mcp-http", httpSession}, {"mcp-stdio", stdioSession}} {
			b.Run("transport="+mt.name+"/"+p.name, func(b *testing.B) {
				params := &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{"code": p.code}}
				for b.Loop() {
					res, err := mt.cs.CallTool(context.Background(), params)
					if err != nil || res.IsError {
						b.Fatal(err, text(res))
					}
				}
			})
		}
	}
}

// stdioPipes serves m over a pair of OS pipes, as `ptc mcp` serves its
// stdin and stdout, and returns a client session on the other ends.
func stdioPipes(b *testing.B, m *mcpserve.Server) *sdk.ClientSession {
	b.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// The server goroutine ends when the client closes its end of the pipe.
	go func() {
		_ = m.Run(ctx, &sdk.IOTransport{Reader: inR, Writer: outW})
		close(done)
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}
