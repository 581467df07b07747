package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// What the gRPC transport holds for a caller before its calls run. gRPC
// buffers a unary request whole before any interceptor sees it, so
// authentication in the interceptor chain comes too late to protect the
// server's memory: TransportOptions checks credentials when a stream
// starts (an InTapHandle runs once the headers are read and before any
// byte of the body is), bounds the headers, the streams of a connection,
// the streams of all connections still waiting for their first message,
// and how long they may wait. LimitListener bounds the connections.

// TransportConfig bounds what the gRPC transport holds before a call
// runs. A zero field keeps gRPC's own default (no bound for the pending
// streams and the first message).
type TransportConfig struct {
	// Admit checks a stream's credentials from its method and header
	// metadata when it starts, before its body is read; an error refuses
	// the stream with the error's status. It returns the caller's key
	// (the tenant), by which MaxPendingStreamsPerCaller counts; "" counts
	// under MaxPendingStreams only. nil admits every stream.
	Admit func(ctx context.Context, method string, md metadata.MD) (string, error)
	// MaxConcurrentStreams bounds the streams open at once on one
	// connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; a stream beyond
	// is reset with REFUSED_STREAM).
	MaxConcurrentStreams uint32
	// MaxHeaderListBytes bounds a stream's header list (HTTP/2
	// SETTINGS_MAX_HEADER_LIST_SIZE; a larger one resets the stream).
	MaxHeaderListBytes uint32
	// MaxPendingStreams bounds the admitted streams of all connections
	// that have not yet received their first message (each may be
	// buffering a request of up to the largest message size); a stream
	// beyond is refused with RESOURCE_EXHAUSTED.
	MaxPendingStreams int
	// MaxPendingStreamsPerCaller bounds those streams of one caller key,
	// so that one tenant cannot take every place of MaxPendingStreams; a
	// stream beyond is refused with RESOURCE_EXHAUSTED.
	MaxPendingStreamsPerCaller int
	// FirstMessageTimeout bounds how long an admitted stream may wait for
	// its first whole message; past it the stream ends with
	// DEADLINE_EXCEEDED.
	FirstMessageTimeout time.Duration
	// ConnectionTimeout bounds a new connection's handshake: TLS and the
	// HTTP/2 preface.
	ConnectionTimeout time.Duration
	// Refused, when set, is told of every stream refused at its start
	// (no interceptor sees those calls, so it is where they are logged).
	// It runs in the connection's reader and must not block.
	Refused func(ctx context.Context, method string, err error)
}

// ErrNoFirstMessage is the cause of a stream's context when the stream
// received no message within TransportConfig.FirstMessageTimeout.
var ErrNoFirstMessage = errors.New("no request message arrived in time")

// TransportOptions returns the server options that enforce c.
func TransportOptions(c TransportConfig) []grpc.ServerOption {
	g := &streamGuard{c: c}
	var opts []grpc.ServerOption
	if c.MaxConcurrentStreams > 0 {
		opts = append(opts, grpc.MaxConcurrentStreams(c.MaxConcurrentStreams))
	}
	if c.MaxHeaderListBytes > 0 {
		opts = append(opts, grpc.MaxHeaderListSize(c.MaxHeaderListBytes))
	}
	if c.ConnectionTimeout > 0 {
		opts = append(opts, grpc.ConnectionTimeout(c.ConnectionTimeout))
	}
	opts = append(opts, grpc.InTapHandle(g.tap))
	if c.MaxPendingStreams > 0 || c.MaxPendingStreamsPerCaller > 0 || c.FirstMessageTimeout > 0 {
		opts = append(opts, grpc.StatsHandler(firstMessage{}))
	}
	return opts
}

// streamGuard admits streams at their start.
type streamGuard struct {
	c TransportConfig
	// pending counts the admitted streams waiting for their first message.
	pending atomic.Int64

	mu sync.Mutex
	// byCaller counts them by caller key (only with
	// MaxPendingStreamsPerCaller).
	byCaller map[string]int
}

// take counts a pending stream of key, or says which bound refuses it.
func (g *streamGuard) take(key string) error {
	if n := g.pending.Add(1); g.c.MaxPendingStreams > 0 && n > int64(g.c.MaxPendingStreams) {
		g.pending.Add(-1)
		return status.Errorf(codes.ResourceExhausted,
			"too many calls are waiting for their request message (%d, grpc.max_pending_streams): send the request at once, and retry later",
			g.c.MaxPendingStreams)
	}
	if key == "" || g.c.MaxPendingStreamsPerCaller <= 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byCaller[key] >= g.c.MaxPendingStreamsPerCaller {
		g.pending.Add(-1)
		return status.Errorf(codes.ResourceExhausted,
			"too many of your calls are waiting for their request message (%d, grpc.max_pending_streams_per_tenant): send the request at once, and retry later",
			g.c.MaxPendingStreamsPerCaller)
	}
	if g.byCaller == nil {
		g.byCaller = map[string]int{}
	}
	g.byCaller[key]++
	return nil
}

// release forgets a pending stream of key.
func (g *streamGuard) release(key string) {
	g.pending.Add(-1)
	if key == "" || g.c.MaxPendingStreamsPerCaller <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byCaller[key]--; g.byCaller[key] <= 0 {
		delete(g.byCaller, key)
	}
}

// tap runs in the connection's reader, before the stream's body is read:
// it must not block.
func (g *streamGuard) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	key := ""
	if g.c.Admit != nil {
		var err error
		if key, err = g.c.Admit(ctx, info.FullMethodName, info.Header); err != nil {
			g.refused(ctx, info.FullMethodName, err)
			return nil, err
		}
	}
	if g.c.MaxPendingStreams <= 0 && g.c.MaxPendingStreamsPerCaller <= 0 && g.c.FirstMessageTimeout <= 0 {
		return ctx, nil
	}
	if err := g.take(key); err != nil {
		g.refused(ctx, info.FullMethodName, err)
		return nil, err
	}
	inner, cancel := context.WithCancelCause(ctx)
	p := &pendingCtx{Context: inner, cancel: cancel, guard: g, key: key}
	if g.c.FirstMessageTimeout > 0 {
		// The timer ends the stream's wait; it is stopped when the first
		// message (or the stream's end) arrives first.
		p.timer = time.AfterFunc(g.c.FirstMessageTimeout, p.expire)
	}
	// However the stream ends (gRPC cancels its context, also for streams
	// it answers without a handler), it stops being pending.
	context.AfterFunc(inner, p.arrived)
	return p, nil
}

// refused tells the Refused hook of a refusal.
func (g *streamGuard) refused(ctx context.Context, method string, err error) {
	if g.c.Refused != nil {
		g.c.Refused(ctx, method, err)
	}
}

// pendingKey finds a stream's pendingCtx.
type pendingKey struct{}

// pendingCtx is the context of an admitted stream: it counts as pending
// until its first message arrives, and is cancelled, with
// context.DeadlineExceeded as its error and ErrNoFirstMessage as its
// cause, when that does not happen within the first-message timeout.
// gRPC reads the stream's body under this very context, so a wait for the
// message ends with DEADLINE_EXCEEDED.
type pendingCtx struct {
	context.Context
	cancel context.CancelCauseFunc
	guard  *streamGuard
	key    string
	timer  *time.Timer

	once    sync.Once
	expired atomic.Bool
}

// Value returns the pendingCtx itself for pendingKey.
func (p *pendingCtx) Value(key any) any {
	if key == (pendingKey{}) {
		return p
	}
	return p.Context.Value(key)
}

// Err reports context.DeadlineExceeded once the first message is late.
func (p *pendingCtx) Err() error {
	err := p.Context.Err()
	if err != nil && p.expired.Load() {
		return context.DeadlineExceeded
	}
	return err
}

// arrived ends the stream's pending state: its first message (or its
// end) came.
func (p *pendingCtx) arrived() {
	p.once.Do(func() {
		if p.timer != nil {
			p.timer.Stop()
		}
		p.guard.release(p.key)
	})
}

// expire ends a stream whose first message is late.
func (p *pendingCtx) expire() {
	p.once.Do(func() {
		p.expired.Store(true)
		p.guard.release(p.key)
		p.cancel(ErrNoFirstMessage)
	})
}

// firstMessage is the stats handler that tells a stream's pendingCtx its
// first message or its end arrived.
type firstMessage struct{}

// TagRPC keeps the context.
func (firstMessage) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

// HandleRPC ends the pending state at the first message or the end.
func (firstMessage) HandleRPC(ctx context.Context, s stats.RPCStats) {
	switch s.(type) {
	case *stats.InPayload, *stats.End:
		if p, ok := ctx.Value(pendingKey{}).(*pendingCtx); ok {
			p.arrived()
		}
	}
}

// TagConn keeps the context.
func (firstMessage) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn does nothing.
func (firstMessage) HandleConn(context.Context, stats.ConnStats) {}
