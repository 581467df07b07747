// Package server implements the ptc.v1 RunnerService on top of the
// internal executor: unary Execute, ListTools, and the Session stream
// through which a harness serves its own tools. Every proto conversion goes
// through internal/wire; every request is prepared (validated and its
// limits clamped under the tenant's ceilings) once, by the executor.
//
// With the options it also enforces what production serving needs: the
// caller's tenant (tool set and limit ceilings, see internal/auth),
// admission control (internal/admission), execution metrics
// (internal/metrics); Interceptors builds the gRPC interceptor chain
// (recovery, metrics, logging, auth, rate limiting); TransportOptions and
// LimitListener bound what the transport holds before a call runs
// (credentials checked at stream start, streams, headers, connections).
//
// Run and Tools are the same service for front ends other than gRPC (the
// MCP server, internal/mcpserve): they read the caller's tenant from the
// context and answer in the internal model.
package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/idem"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/metrics"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// Server serves RunnerService. Create it with New.
type Server struct {
	ptcv1.UnimplementedRunnerServiceServer
	exec *executor.Executor
	log  *slog.Logger

	// base is cancelled when the server gives up on in-flight executions
	// at the end of a graceful shutdown.
	base   context.Context
	cancel context.CancelFunc

	adm     *admission.Controller
	slots   SlotStore // nil: no shared quota
	metrics *metrics.Metrics
	// mem gives memory back after large executions.
	mem     releaser
	tracing telemetry.Tracing

	// resultGrace bounds how long a Session's result waits for a client
	// that does not read (WithResultGrace).
	resultGrace time.Duration
	// halfCloseGrace bounds how long a Session's half-close waits for the
	// RPC's end before failing the client calls pending
	// (defaultHalfCloseGrace).
	halfCloseGrace time.Duration

	// idem keeps outcomes by execution_id (WithIdempotency); nil when off.
	idem *idem.Table[[]byte]
	// idemLinger is how long an Execute nobody waits for goes on.
	idemLinger time.Duration

	mu       sync.Mutex
	inflight int
	// detached counts the resumed executions running past their calls
	// (Resume); WaitDetached waits for them.
	detached sync.WaitGroup
}

// Option configures a Server.
type Option func(*Server)

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithAdmission makes every execution wait for a slot of c (and of its
// tenant's quota) before it runs.
func WithAdmission(c *admission.Controller) Option { return func(s *Server) { s.adm = c } }

// WithMetrics records every execution in m.
func WithMetrics(m *metrics.Metrics) Option { return func(s *Server) { s.metrics = m } }

// WithTracing makes a span of each wait for admission and tags the RPC's
// span with the tenant and execution id (the RPC spans themselves come from
// otelgrpc's stats handler, the execution's from the executor).
func WithTracing(t telemetry.Tracing) Option { return func(s *Server) { s.tracing = t } }

// WithResultGrace sets how long a Session waits, once its execution ended,
// for the client to read the next of the messages still queued, or the
// result (default 10 s), and six times that in all; past either the
// stream ends with DEADLINE_EXCEEDED. d <= 0 keeps the default.
func WithResultGrace(d time.Duration) Option {
	return func(s *Server) {
		if d > 0 {
			s.resultGrace = d
		}
	}
}

// New returns a Server that runs executions on ex.
func New(ex *executor.Executor, opts ...Option) *Server {
	s := &Server{exec: ex, log: slog.Default(), mem: newReleaser(ex), resultGrace: defaultResultGrace, halfCloseGrace: defaultHalfCloseGrace}
	s.base, s.cancel = context.WithCancel(context.Background())
	for _, o := range opts {
		o(s)
	}
	return s
}

// CancelAll cancels every in-flight execution (they end with CANCELLED);
// it is the last step of a graceful shutdown.
func (s *Server) CancelAll() { s.cancel() }

// WaitDetached waits for the resumed executions that run on after their
// Resume call ended (a graceful shutdown waits for them after the gRPC
// calls; CancelAll ends them), and for the Executes with an execution_id
// running on after their calls (WithIdempotency). Call it once no new
// call can arrive.
func (s *Server) WaitDetached() { s.detached.Wait() }

// InFlight returns the number of executions running or waiting for
// admission.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight
}

// execContext derives an execution's context from the RPC's, cancelled
// also by CancelAll. The returned func must be called when done.
func (s *Server) execContext(rpc context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(rpc)
	stop := context.AfterFunc(s.base, cancel)
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
	return ctx, func() {
		stop()
		cancel()
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
	}
}

// Execute runs one script against server tools. With WithIdempotency, a
// request with an execution_id runs once for every repeat of it
// (executeOnce).
func (s *Server) Execute(ctx context.Context, in *ptcv1.ExecuteRequest) (*ptcv1.ExecuteResponse, error) {
	if s.idem != nil && in.GetExecutionId() != "" {
		return s.executeOnce(ctx, in)
	}
	req, ferr := executeRequest(in)
	if ferr != nil {
		return nil, wire.Status(ferr)
	}
	res, ferr := s.Run(ctx, req)
	if ferr != nil {
		return nil, wire.Status(ferr)
	}
	return wire.ResultPB(res), nil
}

// executeRequest is the request an Execute carries, checked.
func executeRequest(in *ptcv1.ExecuteRequest) (core.Request, *fault.Error) {
	req, ferr := wire.RequestFromPB(in)
	if ferr != nil {
		return core.Request{}, ferr
	}
	if len(req.ClientTools) > 0 && !req.Resumable {
		return core.Request{}, fault.Reject(fault.CodeInvalidArgument,
			"client_tools in Execute need resumable (calls to them pause the execution); Session takes its client tools in SessionStart")
	}
	return req, nil
}

// Run runs one request for the tenant the context carries (see
// internal/auth), as Execute does: narrowed to the tenant's tools, its
// limits clamped under the tenant's ceilings, admitted, observed in the
// metrics. It is the entry point of front ends other than gRPC (the MCP
// server). A request that cannot run is a *fault.Error with a Code.
func (s *Server) Run(ctx context.Context, req core.Request) (*core.Result, *fault.Error) {
	tenant, ferr := s.applyTenant(ctx, &req)
	if ferr != nil {
		return nil, ferr
	}
	p, ferr := s.exec.PrepareContext(ctx, req, tenant.ceilings())
	if ferr != nil {
		return nil, ferr
	}
	ectx, done := s.execContext(ctx)
	defer done()
	release, ferr := s.admit(ectx, p, tenant)
	if ferr != nil {
		return nil, ferr
	}
	defer release()
	res := s.exec.Run(ectx, p)
	s.observe(ctx, req, p, res)
	s.mem.note(req, res)
	return res, nil
}

// Resume goes on with a paused execution. The execution runs detached
// from the call: the caller's deadline or cancellation ends only its
// wait, and a retry with the same continuation and answers gets the
// outcome (executor.StartResume). The resumed execution is admitted,
// counted in the metrics and in InFlight once, by the call that started
// it, until it ends; a retry is neither admitted nor counted again.
func (s *Server) Resume(ctx context.Context, in *ptcv1.ResumeRequest) (*ptcv1.ResumeResponse, error) {
	tok, answers, module, ferr := wire.ResumeFromPB(in)
	if ferr != nil {
		return nil, wire.Status(ferr)
	}
	tenant := tenantOf{}
	if t, ok := auth.FromContext(ctx); ok {
		tenant = tenantOf{t}
	}
	p, ferr := s.exec.PrepareResume(ctx, executor.Resume{Continuation: tok, Answers: answers,
		Tenant: tenant.name(), Ceilings: tenant.ceilings(), Module: module})
	if ferr != nil {
		return nil, wire.Status(ferr)
	}
	release, done := func() {}, func() {}
	if !p.Retry() {
		ectx, end := s.execContext(ctx)
		rel, ferr := s.admit(ectx, p, tenant)
		if ferr != nil {
			end()
			return nil, wire.Status(ferr)
		}
		s.detached.Add(1)
		release, done = rel, func() { end(); s.detached.Done() }
	}
	// The execution's end is this call's to account for, once, whether or
	// not the call still waits for it.
	r, ferr := s.exec.StartResume(ctx, p, executor.Detach{Stop: s.base, Ended: func(res *core.Result, ferr *fault.Error) {
		if ferr == nil {
			s.count(p.Request(), p, res)
		}
		release()
		done()
	}})
	if ferr != nil {
		release()
		done()
		return nil, wire.Status(ferr)
	}
	if !r.Started() {
		release()
		done()
	}
	res, ferr := r.Wait(ctx)
	if ferr != nil {
		return nil, wire.Status(ferr)
	}
	s.annotate(ctx, res)
	if r.Retry() {
		logging.AddFields(ctx, logging.Fields{"resume_retry", true})
	}
	return &ptcv1.ResumeResponse{Execution: wire.ResultPB(res)}, nil
}

// ListTools lists the server tools the caller's tenant may use: all of
// them, the named ones, or the ones most relevant to a query; with their
// TypeScript declarations when asked, the model-facing prompt, and an
// approximate token count.
func (s *Server) ListTools(ctx context.Context, in *ptcv1.ListToolsRequest) (*ptcv1.ListToolsResponse, error) {
	l, err := s.Tools(ctx, wire.ToolQueryFromPB(in))
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.ToolListPB(l), nil
}

// Tools answers a tool query for the tenant the context carries, as
// ListTools does; like Run, it serves front ends other than gRPC.
func (s *Server) Tools(ctx context.Context, q core.ToolQuery) (*core.ToolList, *fault.Error) {
	var allows func(string) bool
	var ceilings limits.Limits
	if t, ok := auth.FromContext(ctx); ok {
		ceilings = t.Ceilings
		if t.RestrictsTools() {
			allows = t.AllowsTool
		}
	}
	return s.exec.ListTools(q, allows, ceilings)
}
