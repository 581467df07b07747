package adversarial

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// The transport family attacks ptcd's gRPC listener below the RPC layer,
// with raw HTTP/2 frames and no credentials: what can a caller that is not
// a tenant make ptcd hold before it is refused? Each case starts its own
// ptcd with authentication on (testdata/transport.yaml over the mode's
// file), floods it, and bounds the growth of its RSS.

const famTransport family = "transport" // floods before authentication

// transportToken is the tenant's bearer token in testdata/transport.yaml.
const transportToken = "adversarial-transport-token"

var transportPtcd = flag.String("transport-ptcd", "",
	"run the transport and exhaustion families against this ptcd binary (a build before their bounds existed, "+
		"with testdata/transport-baseline.yaml) to measure it")

// floodGuard aborts a flood once ptcd's RSS grew this much: the flood has
// shown what it shows, and the shared machine is spared.
const floodGuard = 1536 << 20

// authServer starts a ptcd of e's mode with authentication and the MCP
// endpoint on; stop ends it.
func authServer(e *env) (s *server, mcpAddr string, stop func(), err error) {
	base, err := os.ReadFile(filepath.Join("testdata", e.srv.mode.String()+".yaml"))
	if err != nil {
		return nil, "", nil, err
	}
	extraFile, bin := "transport.yaml", ptcdBinary
	if *transportPtcd != "" {
		extraFile, bin = "transport-baseline.yaml", *transportPtcd
	}
	extra, err := os.ReadFile(filepath.Join("testdata", extraFile))
	if err != nil {
		return nil, "", nil, err
	}
	dir, err := os.MkdirTemp("", "ptc-transport-")
	if err != nil {
		return nil, "", nil, err
	}
	cfg := filepath.Join(dir, "ptcd.yaml")
	if err := os.WriteFile(cfg, append(append(base, '\n'), extra...), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	// The binary is the server's own: the other mode's cases run in
	// parallel and start processes of their own meanwhile.
	s = &server{mode: e.srv.mode, dir: dir, cfg: cfg, bin: bin, log: newLogTail(1 << 20)}
	if err := s.start(); err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	for _, line := range strings.Split(s.startLog, "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "mcp listening" {
			mcpAddr = rec.Addr
		}
	}
	return s, mcpAddr, func() { s.stop(); os.RemoveAll(dir) }, nil
}

// grpcAddr is the gRPC address of a server.
func (s *server) grpcAddr() string { return s.connection().Target() }

// h2flood is one raw HTTP/2 connection that opens streams and sends
// bodies as fast as the server's flow control allows, and records how
// the server ends each stream.
type h2flood struct {
	conn net.Conn
	fr   *http2.Framer
	wmu  sync.Mutex // guards writes on fr
	hbuf bytes.Buffer
	henc *hpack.Encoder

	mu      sync.Mutex
	cond    *sync.Cond
	connWin int64
	initWin int64
	win     map[uint32]int64
	ended   map[uint32]string // how the server ended a stream
	dead    error             // the connection ended
	done    chan struct{}     // closed when the reader ends
}

// dialFlood opens a connection to addr and starts its reader, which ends
// when the connection does.
func dialFlood(addr string) (*h2flood, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	f := &h2flood{conn: conn, fr: http2.NewFramer(conn, conn), connWin: 65535, initWin: 65535,
		win: map[uint32]int64{}, ended: map[uint32]string{}, done: make(chan struct{})}
	f.cond = sync.NewCond(&f.mu)
	f.henc = hpack.NewEncoder(&f.hbuf)
	f.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	f.fr.MaxHeaderListSize = 1 << 20
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		conn.Close()
		return nil, err
	}
	if err := f.fr.WriteSettings(); err != nil {
		conn.Close()
		return nil, err
	}
	go f.read()
	return f, nil
}

// read handles the server's frames until the connection ends.
func (f *h2flood) read() {
	defer close(f.done)
	for {
		fr, err := f.fr.ReadFrame()
		f.mu.Lock()
		if err != nil {
			f.dead = err
			f.cond.Broadcast()
			f.mu.Unlock()
			return
		}
		switch fr := fr.(type) {
		case *http2.SettingsFrame:
			if !fr.IsAck() {
				if v, ok := fr.Value(http2.SettingInitialWindowSize); ok {
					d := int64(v) - f.initWin
					f.initWin = int64(v)
					for id := range f.win {
						f.win[id] += d
					}
				}
				f.write(func() error { return f.fr.WriteSettingsAck() })
			}
		case *http2.WindowUpdateFrame:
			if fr.StreamID == 0 {
				f.connWin += int64(fr.Increment)
			} else {
				f.win[fr.StreamID] += int64(fr.Increment)
			}
		case *http2.MetaHeadersFrame:
			for _, h := range fr.Fields {
				if h.Name == "grpc-status" {
					f.ended[fr.StreamID] = "grpc-status " + h.Value
				}
			}
		case *http2.RSTStreamFrame:
			if _, ok := f.ended[fr.StreamID]; !ok {
				f.ended[fr.StreamID] = "reset " + fr.ErrCode.String()
			}
		case *http2.PingFrame:
			if !fr.IsAck() {
				data := fr.Data
				f.write(func() error { return f.fr.WritePing(true, data) })
			}
		}
		f.cond.Broadcast()
		f.mu.Unlock()
	}
}

// write writes a frame under wmu; a failure ends nothing here (the
// reader sees the connection end).
func (f *h2flood) write(w func() error) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return w()
}

// open starts stream id for method with extra header fields (name, value
// pairs), without ending it.
func (f *h2flood) open(id uint32, method string, extra ...string) error {
	f.mu.Lock()
	f.win[id] = f.initWin
	f.mu.Unlock()
	return f.write(func() error {
		f.hbuf.Reset()
		fields := append([]string{":method", "POST", ":scheme", "http", ":path", method, ":authority", "ptcd",
			"content-type", "application/grpc", "te", "trailers"}, extra...)
		for i := 0; i+1 < len(fields); i += 2 {
			_ = f.henc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		block := f.hbuf.Bytes()
		const chunk = 16 << 10
		first := block[:min(chunk, len(block))]
		rest := block[len(first):]
		if err := f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(rest) == 0}); err != nil {
			return err
		}
		for len(rest) > 0 {
			n := min(chunk, len(rest))
			if err := f.fr.WriteContinuation(id, n == len(rest), rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
}

// zeros is the payload of every flooded body.
var zeros = make([]byte, 16<<10)

// send sends a gRPC message of size bytes on stream id as flow control
// allows, until it is sent, the stream ended, the connection died or ctx
// ended; it returns the bytes sent.
func (f *h2flood) send(ctx context.Context, id uint32, size int) int {
	prefix := make([]byte, 5)
	binary.BigEndian.PutUint32(prefix[1:], uint32(size-5))
	sent := 0
	for sent < size {
		f.mu.Lock()
		for f.dead == nil && f.ended[id] == "" && ctx.Err() == nil && (f.win[id] <= 0 || f.connWin <= 0) {
			f.cond.Wait()
		}
		if f.dead != nil || f.ended[id] != "" || ctx.Err() != nil {
			f.mu.Unlock()
			return sent
		}
		n := int(min(int64(len(zeros)), f.win[id], f.connWin, int64(size-sent)))
		f.win[id] -= int64(n)
		f.connWin -= int64(n)
		f.mu.Unlock()
		chunk := zeros[:n]
		if sent == 0 && n >= 5 {
			chunk = append(append([]byte{}, prefix...), zeros[:n-5]...)
		}
		last := sent+n == size
		if err := f.write(func() error { return f.fr.WriteData(id, last, chunk) }); err != nil {
			return sent
		}
		sent += n
	}
	return sent
}

// wake makes waiting senders look at ctx again.
func (f *h2flood) wake() {
	f.mu.Lock()
	f.cond.Broadcast()
	f.mu.Unlock()
}

// outcome waits until stream id ended, the connection died or ctx ended,
// and says which ("held" for the last).
func (f *h2flood) outcome(ctx context.Context, id uint32) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.dead == nil && f.ended[id] == "" && ctx.Err() == nil {
		f.cond.Wait()
	}
	switch {
	case f.ended[id] != "":
		return f.ended[id]
	case f.dead != nil:
		return "connection ended"
	}
	return "held"
}

// close ends the connection and waits for the reader.
func (f *h2flood) close() {
	_ = f.conn.Close()
	<-f.done
}

// floodSpec is one flood: conns connections with streams streams each,
// opened on method with extra headers, each sending body bytes (0: none,
// the stream left open).
type floodSpec struct {
	conns, streams int
	method         string
	extra          []string
	body           int
	// hold is how long, at most, the flood waits for ptcd to end every
	// stream; a stream still open then counts as held.
	hold time.Duration
}

// floodResult is what a flood saw.
type floodResult struct {
	outcomes       map[string]int // how the streams ended
	sent           int64          // body bytes sent
	before, peak   int64          // ptcd's RSS before and at its highest
	held, guardHit bool
}

// flood runs spec against ptcd s and measures its RSS.
func flood(ctx context.Context, s *server, spec floodSpec) (r floodResult, err error) {
	r = floodResult{outcomes: map[string]int{}}
	r.before, _ = rssOf(s.pid())
	sampler := sampleRSS(s.pid())
	fctx, cancel := context.WithTimeout(ctx, spec.hold)
	defer cancel()
	var guardHit atomic.Bool
	defer func() { r.guardHit = guardHit.Load() }()
	// The guard stops the flood when ptcd's RSS passes floodGuard above
	// where it started; it ends with fctx.
	go func() {
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-fctx.Done():
				return
			case <-tk.C:
				if v, err := rssOf(s.pid()); err == nil && v-r.before > floodGuard {
					guardHit.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	var floods []*h2flood
	defer func() {
		for _, f := range floods {
			f.close()
		}
	}()
	for range spec.conns {
		f, err := dialFlood(s.grpcAddr())
		if err != nil {
			return r, err
		}
		floods = append(floods, f)
	}
	// Wake the senders and waiters when the flood ends.
	stopWake := context.AfterFunc(fctx, func() {
		for _, f := range floods {
			f.wake()
		}
	})
	defer stopWake()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, f := range floods {
		for i := range spec.streams {
			id := uint32(2*i + 1)
			if err := f.open(id, spec.method, spec.extra...); err != nil {
				break // the server ended the connection: its streams say so
			}
			wg.Add(1)
			// Each stream's goroutine ends when its stream, its
			// connection or the flood ends.
			go func() {
				defer wg.Done()
				n := 0
				if spec.body > 0 {
					n = f.send(fctx, id, spec.body)
				}
				out := f.outcome(fctx, id)
				mu.Lock()
				r.outcomes[out]++
				r.sent += int64(n)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	r.held = r.outcomes["held"] > 0
	// RSS while every connection is still open: what ptcd holds for them.
	r.peak = sampler.stop()
	return r, nil
}

// String describes the outcomes, most frequent first.
func (r floodResult) String() string {
	var keys []string
	for k := range r.outcomes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return r.outcomes[keys[i]] > r.outcomes[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", r.outcomes[k], k))
	}
	return fmt.Sprintf("streams: %s; sent %s; ptcd RSS %s → peak %s (+%s)", strings.Join(parts, ", "),
		mib(r.sent), mib(r.before), mib(r.peak), mib(r.peak-r.before))
}

// floodCase is a case that floods an authenticating ptcd and expects
// every stream refused (an outcome in refusals) within the bound, and
// ptcd's RSS to grow by at most growth.
func floodCase(name string, fast bool, spec floodSpec, growth int64, refusals ...string) tcase {
	return tcase{
		name: name, family: famTransport, fast: fast, bound: spec.hold + 30*time.Second, want: checkedByDo,
		do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
			s, _, stop, err := authServer(e)
			if err != nil {
				e.fail("starting an authenticating ptcd: %v", err)
				return nil, nil
			}
			defer stop()
			r, err := flood(ctx, s, spec)
			if err != nil {
				e.fail("flood: %v", err)
				return nil, nil
			}
			e.note("%s", r)
			if r.guardHit {
				e.fail("ptcd's RSS grew past the %s guard: the flood was stopped (%s)", mib(floodGuard), r)
			}
			if grew := r.peak - r.before; grew > growth {
				e.fail("ptcd's RSS grew by %s under the flood, more than the %s allowed", mib(grew), mib(growth))
			}
			for out, n := range r.outcomes {
				if !slicesContains(refusals, out) {
					e.fail("%d streams ended %q, want one of %v", n, out, refusals)
				}
			}
			if err := trivialAuth(s); err != nil {
				e.fail("after the flood, an authenticated execution failed: %v", err)
			}
			return nil, nil
		},
	}
}

// slicesContains reports whether xs holds x.
func slicesContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// trivialAuth runs `return 1 + 1` with the tenant's token.
func trivialAuth(s *server) error {
	ctx, cancel := context.WithTimeout(withToken(context.Background()), 30*time.Second)
	defer cancel()
	res, err := s.rpc().Execute(ctx, jsReq("return 1 + 1"))
	if err != nil {
		return err
	}
	if res.GetResultJson() != "2" {
		return fmt.Errorf("answered %s", brief(res))
	}
	return nil
}

// unauthenticated is how a stream without credentials is refused at its
// start.
const unauthenticated = "grpc-status 16"

// transportCases are the floods before authentication.
func transportCases() []tcase {
	execute := "/ptc.v1.RunnerService/Execute"
	var pad []string
	for i := range 1024 {
		pad = append(pad, fmt.Sprintf("x-pad-%d", i), strings.Repeat("p", 1<<10))
	}
	return []tcase{
		// 1,000 streams without a token, each sending a 24 MiB request:
		// refused when their headers arrive, their bodies never buffered.
		floodCase("unauthenticated-24mib-bodies-1000-streams", false,
			floodSpec{conns: 10, streams: 100, method: execute, body: 24 << 20, hold: 60 * time.Second}, 64<<20, unauthenticated),
		floodCase("unauthenticated-24mib-bodies-100-streams", true,
			floodSpec{conns: 1, streams: 100, method: execute, body: 24 << 20, hold: 30 * time.Second}, 64<<20, unauthenticated),
		// A wrong token is refused alike.
		floodCase("wrong-token-24mib-bodies", false,
			floodSpec{conns: 4, streams: 50, method: execute, extra: []string{"authorization", "Bearer guessed"}, body: 24 << 20, hold: 30 * time.Second},
			64<<20, unauthenticated),
		// 20 streams each with 1 MiB of headers and no body: the header
		// bound ends them (the stream, or the connection as x/net/http2
		// does for a block this far over it).
		floodCase("1mib-header-lists-20-streams", false,
			floodSpec{conns: 20, streams: 1, method: execute, extra: pad, hold: 30 * time.Second}, 64<<20,
			"connection ended", "reset FRAME_SIZE_ERROR", "reset PROTOCOL_ERROR"),
		// 1,000 streams opened without a token and left open (no body, no
		// end): each is answered at once, none is held.
		floodCase("unauthenticated-streams-left-open-1000", false,
			floodSpec{conns: 10, streams: 100, method: execute, hold: 30 * time.Second}, 64<<20, unauthenticated),
		floodCase("unauthenticated-streams-left-open-100", true,
			floodSpec{conns: 1, streams: 100, method: execute, hold: 30 * time.Second}, 64<<20, unauthenticated),
	}
}
