package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/durable"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// ForwardedHeader marks a Resume forwarded by another replica: its value
// is the hex HMAC-SHA256 of the continuation under a key derived from a
// continuation key (ForwardKey), which every replica that can resume the
// continuation holds. A replica never forwards a call that carries it.
const ForwardedHeader = "ptc-forwarded"

// forwardLabel separates the forwarding key from a continuation key's
// other uses.
const forwardLabel = "ptc resume forwarding v1"

// ForwardKey derives the key that signs forwarded Resumes from a
// continuation key's secret.
func ForwardKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(forwardLabel))
	return m.Sum(nil)
}

// OwnerDirectory says which replica parked a paused execution
// (cluster.Owners).
type OwnerDirectory interface {
	Owner(ctx context.Context, pauseID string) (string, error)
}

// ForwardConfig configures resume forwarding.
type ForwardConfig struct {
	// Self is this replica's advertised address: Resumes of executions it
	// parked are run here.
	Self string
	// Owners says which replica parked an execution.
	Owners OwnerDirectory
	// Keys sign forwarded calls (the first) and verify them (all):
	// ForwardKey of each continuation key, in the same order.
	Keys [][]byte
	// Timeout bounds a forwarded call (the caller's own deadline, when
	// sooner, applies too).
	Timeout time.Duration
	// ConnectTimeout bounds the wait for a connection to the owner; an
	// owner not reached by then is taken for gone, and the Resume runs
	// here (a re-run).
	ConnectTimeout time.Duration
	// Creds are the transport credentials to reach other replicas
	// (insecure, h2c, when nil).
	Creds credentials.TransportCredentials
	// Log receives forwarding failures.
	Log *slog.Logger
}

// Forwarder sends a Resume reaching this replica to the replica that
// parked its execution, when that replica is another one and alive, so
// that the execution goes on from memory there rather than being re-run
// here. One hop only: a forwarded call is never forwarded again.
type Forwarder struct {
	cfg ForwardConfig

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// NewForwarder returns a Forwarder; Close closes its connections.
func NewForwarder(cfg ForwardConfig) *Forwarder {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = time.Second
	}
	if cfg.Creds == nil {
		cfg.Creds = insecure.NewCredentials()
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Forwarder{cfg: cfg, conns: map[string]*grpc.ClientConn{}}
}

// Close closes the connections to other replicas.
func (f *Forwarder) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for a, c := range f.conns {
		_ = c.Close()
		delete(f.conns, a)
	}
	return nil
}

// sign is the ForwardedHeader value of a continuation under key.
func sign(key []byte, continuation string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(continuation))
	return hex.EncodeToString(m.Sum(nil))
}

// forwarded reports whether the call carries a valid ForwardedHeader; a
// header that does not verify is UNAUTHENTICATED.
func (f *Forwarder) forwarded(ctx context.Context, continuation string) (bool, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(ForwardedHeader)
	if len(v) == 0 {
		return false, nil
	}
	if len(v) == 1 {
		got, err := hex.DecodeString(v[0])
		for _, k := range f.cfg.Keys {
			want, _ := hex.DecodeString(sign(k, continuation))
			if err == nil && hmac.Equal(got, want) {
				return true, nil
			}
		}
	}
	return false, status.Error(codes.Unauthenticated, "the "+ForwardedHeader+" header does not verify: only ptcd replicas sharing the continuation keys forward a Resume; send the call without it")
}

// Unary is the interceptor: it forwards RunnerService.Resume calls, and
// passes everything else on. It runs after authentication, before rate
// limits: a forwarded call counts against its tenant where it runs.
func (f *Forwarder) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	in, ok := req.(*ptcv1.ResumeRequest)
	if !ok || info.FullMethod != ptcv1.RunnerService_Resume_FullMethodName {
		return handler(ctx, req)
	}
	fwd, err := f.forwarded(ctx, in.GetContinuation())
	if err != nil {
		return nil, err
	}
	if fwd {
		return handler(ctx, req)
	}
	owner := f.owner(ctx, in.GetContinuation())
	if owner == "" || owner == f.cfg.Self {
		return handler(ctx, req)
	}
	conn := f.reach(ctx, owner)
	if conn == nil {
		// The owner is gone: re-run here, as without forwarding.
		return handler(ctx, req)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	out := metadata.MD{ForwardedHeader: []string{sign(f.cfg.Keys[0], in.GetContinuation())}}
	if a := md.Get("authorization"); len(a) > 0 {
		out["authorization"] = a
	}
	fctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(ctx, out), f.cfg.Timeout)
	defer cancel()
	return ptcv1.NewRunnerServiceClient(conn).Resume(fctx, in)
}

// owner is the replica that parked the continuation's execution, "" when
// none is recorded or the directory fails.
func (f *Forwarder) owner(ctx context.Context, continuation string) string {
	id, ok := durable.PauseIDOf(continuation)
	if !ok {
		return ""
	}
	octx, cancel := context.WithTimeout(ctx, f.cfg.ConnectTimeout)
	defer cancel()
	owner, err := f.cfg.Owners.Owner(octx, id)
	if err != nil {
		f.cfg.Log.WarnContext(ctx, "the owner directory failed: the resume runs here", "err", err)
		return ""
	}
	return owner
}

// reach returns a ready connection to addr, or nil when none is ready
// within ConnectTimeout.
func (f *Forwarder) reach(ctx context.Context, addr string) *grpc.ClientConn {
	f.mu.Lock()
	c := f.conns[addr]
	if c == nil {
		var err error
		c, err = grpc.NewClient(addr, grpc.WithTransportCredentials(f.cfg.Creds))
		if err != nil {
			f.mu.Unlock()
			f.cfg.Log.WarnContext(ctx, "the owner of a paused execution has an unusable address: the resume runs here", "owner", addr, "err", err)
			return nil
		}
		f.conns[addr] = c
	}
	f.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, f.cfg.ConnectTimeout)
	defer cancel()
	c.Connect()
	for s := c.GetState(); s != connectivity.Ready; s = c.GetState() {
		if s == connectivity.Shutdown || s == connectivity.TransientFailure || !c.WaitForStateChange(wctx, s) {
			return nil
		}
	}
	return c
}
