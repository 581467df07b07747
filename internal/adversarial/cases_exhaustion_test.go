package adversarial

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// The exhaustion family holds ptcd's connections and streams open and
// idle: keep-alive connections to the MCP endpoint after their 401, or
// after a request, and authenticated streams that never send their first
// message (Session start, a unary request). Every one must be closed by
// ptcd within its configured bound (testdata/transport.yaml: 2 s), and
// holding them must not grow ptcd beyond a bound.

const famExhaustion family = "exhaustion" // connection and stream exhaustion

// withToken adds the tenant's bearer token to ctx.
func withToken(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+transportToken)
}

// idleWait bounds how long a case waits for ptcd to close what it holds:
// far beyond the 2 s bounds of testdata/transport.yaml, so that only a
// connection ptcd does not close at all reaches it.
const idleWait = 30 * time.Second

// closedByServer waits until the server closes c (true) or idleWait
// passes (false).
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(idleWait))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// mcpConns opens n connections to the MCP endpoint, sends each the
// request req (an HTTP/1.1 request with keep-alive), reads the answer,
// and reports how many connections ptcd closed and ptcd's RSS growth
// while they were open.
func mcpConns(e *env, n int, req string, wantStatus int) {
	s, mcpAddr, stop, err := authServer(e)
	if err != nil {
		e.fail("starting an authenticating ptcd: %v", err)
		return
	}
	defer stop()
	if mcpAddr == "" {
		e.fail("ptcd logged no MCP address")
		return
	}
	before, _ := rssOf(s.pid())
	sampler := sampleRSS(s.pid())
	var wg sync.WaitGroup
	var mu sync.Mutex
	closed, statuses := 0, map[int]int{}
	for range n {
		wg.Add(1)
		// Each connection's goroutine ends when ptcd closed it or
		// idleWait passed.
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", mcpAddr)
			if err != nil {
				mu.Lock()
				statuses[-1]++
				mu.Unlock()
				return
			}
			defer c.Close()
			_, _ = io.WriteString(c, req)
			_ = c.SetReadDeadline(time.Now().Add(idleWait))
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			code := -1
			if err == nil {
				code = res.StatusCode
				_ = res.Body.Close()
			}
			gone := closedByServer(c)
			mu.Lock()
			statuses[code]++
			if gone {
				closed++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	peak := sampler.stop()
	e.note("%d connections: answers %v; %d closed by ptcd; ptcd RSS %s → peak %s (+%s)", n, statuses, closed, mib(before), mib(peak), mib(peak-before))
	if statuses[wantStatus] != n {
		e.fail("answers %v, want %d × %d", statuses, n, wantStatus)
	}
	if closed != n {
		e.fail("%d of %d connections stayed open %v after their answer", n-closed, n, idleWait)
	}
	if err := trivialAuth(s); err != nil {
		e.fail("after the connections, an authenticated execution failed: %v", err)
	}
}

// idleSessions opens n authenticated Session streams over conns
// connections that never send start, and reports how ptcd ended them and
// its RSS growth meanwhile.
func idleSessions(ctx context.Context, e *env, n, conns int, growth int64) {
	s, _, stop, err := authServer(e)
	if err != nil {
		e.fail("starting an authenticating ptcd: %v", err)
		return
	}
	defer stop()
	var cs []*grpc.ClientConn
	defer func() {
		for _, c := range cs {
			_ = c.Close()
		}
	}()
	for range conns {
		c, err := grpc.NewClient(s.grpcAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			e.fail("dial: %v", err)
			return
		}
		cs = append(cs, c)
	}
	before, _ := rssOf(s.pid())
	sampler := sampleRSS(s.pid())
	sctx, cancel := context.WithTimeout(withToken(ctx), idleWait)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for i := range n {
		wg.Add(1)
		// Each stream's goroutine ends when ptcd ends the stream or
		// idleWait passes.
		go func() {
			defer wg.Done()
			st, err := ptcv1.NewRunnerServiceClient(cs[i%conns]).Session(sctx)
			if err == nil {
				_, err = st.Recv()
			}
			code := status.Code(err).String()
			if sctx.Err() != nil {
				code = "held"
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	peak := sampler.stop()
	e.note("%d Session streams without start: %v; ptcd RSS %s → peak %s (+%s)", n, codes, mib(before), mib(peak), mib(peak-before))
	for code, k := range codes {
		if code != "DeadlineExceeded" && code != "ResourceExhausted" {
			e.fail("%d streams ended %s, want DeadlineExceeded (grpc.first_message_timeout) or ResourceExhausted (grpc.max_pending_streams)", k, code)
		}
	}
	if grew := peak - before; grew > growth {
		e.fail("ptcd's RSS grew by %s while the streams waited, more than the %s allowed", mib(grew), mib(growth))
	}
	if err := trivialAuth(s); err != nil {
		e.fail("after the streams, an authenticated execution failed: %v", err)
	}
}

// exhaustionCases are the idle connections and streams.
func exhaustionCases() []tcase {
	unauth := "POST /mcp HTTP/1.1\r\nHost: ptcd\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Content-Length: 40\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	elsewhere := "GET /elsewhere HTTP/1.1\r\nHost: ptcd\r\n\r\n"
	mcpCase := func(name string, fast bool, n int, req string, code int) tcase {
		return tcase{name: name, family: famExhaustion, fast: fast, bound: idleWait + 30*time.Second, want: checkedByDo,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				mcpConns(e, n, req, code)
				return nil, nil
			}}
	}
	return []tcase{
		// 50 keep-alive connections that got their 401 and stay: ptcd
		// closes each with its answer.
		mcpCase("mcp-keepalive-after-401-50", true, 50, unauth, http.StatusUnauthorized),
		// 50 keep-alive connections idle after a request: closed after
		// mcp.idle_timeout.
		mcpCase("mcp-keepalive-idle-after-request-50", false, 50, elsewhere, http.StatusNotFound),
		// 2,000 authenticated Session streams that never send start: a
		// bounded number waits (grpc.max_pending_streams), each at most
		// grpc.first_message_timeout; the rest are refused.
		{name: "sessions-without-start-2000", family: famExhaustion, bound: idleWait + 30*time.Second, want: checkedByDo,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				idleSessions(ctx, e, 2000, 20, 32<<20)
				return nil, nil
			}},
		{name: "sessions-without-start-200", family: famExhaustion, fast: true, bound: idleWait + 30*time.Second, want: checkedByDo,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				idleSessions(ctx, e, 200, 2, 32<<20)
				return nil, nil
			}},
		// 500 authenticated unary calls whose request never comes (raw
		// HTTP/2: headers with the token, no body, the stream left open).
		{name: "authenticated-unary-without-request-500", family: famExhaustion, bound: idleWait + 30*time.Second, want: checkedByDo,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				s, _, stop, err := authServer(e)
				if err != nil {
					e.fail("starting an authenticating ptcd: %v", err)
					return nil, nil
				}
				defer stop()
				r, err := flood(ctx, s, floodSpec{conns: 5, streams: 100, method: "/ptc.v1.RunnerService/Execute",
					extra: []string{"authorization", "Bearer " + transportToken}, hold: idleWait})
				if err != nil {
					e.fail("flood: %v", err)
					return nil, nil
				}
				e.note("%s", r)
				for out, n := range r.outcomes {
					if out != "grpc-status 4" && out != "grpc-status 8" {
						e.fail("%d streams ended %q, want DEADLINE_EXCEEDED (4) or RESOURCE_EXHAUSTED (8)", n, out)
					}
				}
				if grew := r.peak - r.before; grew > 32<<20 {
					e.fail("ptcd's RSS grew by %s, more than the %s allowed", mib(grew), mib(32<<20))
				}
				if err := trivialAuth(s); err != nil {
					e.fail("after the streams, an authenticated execution failed: %v", err)
				}
				return nil, nil
			}},
	}
}
