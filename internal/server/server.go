// Package server implements the ptc.v1 RunnerService on top of a
// ptc.Runner: unary Execute, ListTools, and the Session stream through
// which a harness serves its own tools.
//
// With the options it also enforces what production serving needs: the
// caller's tenant (tool set and limit ceilings, see internal/auth),
// admission control (internal/admission), execution metrics
// (internal/metrics); Interceptors builds the gRPC interceptor chain
// (recovery, metrics, logging, auth, rate limiting).
package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/metrics"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools/prompt"
	"github.com/ptcrun/ptc/tools/rank"
	"github.com/ptcrun/ptc/tools/tsdecl"
)

// Server serves RunnerService. Create it with New.
type Server struct {
	ptcv1.UnimplementedRunnerServiceServer
	runner *ptc.Runner
	log    *slog.Logger

	// base is cancelled when the server gives up on in-flight executions
	// at the end of a graceful shutdown.
	base   context.Context
	cancel context.CancelFunc

	adm     *admission.Controller
	metrics *metrics.Metrics

	mu       sync.Mutex
	inflight int
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

// New returns a Server that runs executions on r.
func New(r *ptc.Runner, opts ...Option) *Server {
	s := &Server{runner: r, log: slog.Default()}
	s.base, s.cancel = context.WithCancel(context.Background())
	for _, o := range opts {
		o(s)
	}
	return s
}

// CancelAll cancels every in-flight execution (they end with CANCELLED);
// it is the last step of a graceful shutdown.
func (s *Server) CancelAll() { s.cancel() }

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

// Execute runs one script against server tools.
func (s *Server) Execute(ctx context.Context, in *ptcv1.ExecuteRequest) (*ptcv1.ExecuteResponse, error) {
	req, err := RequestFromPB(in)
	if err != nil {
		return nil, err
	}
	tenant, err := s.applyTenant(ctx, &req)
	if err != nil {
		return nil, err
	}
	p, err := s.runner.Prepare(req)
	if err != nil {
		return nil, statusOf(err)
	}
	ectx, done := s.execContext(ctx)
	defer done()
	release, err := s.admit(ectx, p, tenant)
	if err != nil {
		return nil, err
	}
	defer release()
	res := s.runner.Run(ectx, p)
	s.observe(ctx, req, res)
	return ResultPB(res), nil
}

// ListTools lists the server tools: all of them, the named ones, or the
// ones most relevant to a query; with their TypeScript declarations when
// asked, the model-facing prompt, and an approximate token count.
func (s *Server) ListTools(ctx context.Context, in *ptcv1.ListToolsRequest) (*ptcv1.ListToolsResponse, error) {
	defs := s.runner.Tools()
	if t, ok := auth.FromContext(ctx); ok && t.RestrictsTools() {
		mine := defs[:0:0]
		for _, d := range defs {
			if t.AllowsTool(d.Name) {
				mine = append(mine, d)
			}
		}
		defs = mine
	}
	if names := in.GetNames(); len(names) > 0 {
		byName := make(map[string]ptc.Definition, len(defs))
		for _, d := range defs {
			byName[d.Name] = d
		}
		sel := make([]ptc.Definition, 0, len(names))
		for _, n := range names {
			d, ok := byName[n]
			if !ok {
				return nil, status.Errorf(codes.InvalidArgument, "names: unknown tool %q", n)
			}
			sel = append(sel, d)
		}
		defs = sel
	}
	limit := int(in.GetLimit())
	if limit < 0 {
		return nil, status.Error(codes.InvalidArgument, "limit is negative")
	}
	if len(in.GetQuery()) > rank.MaxQueryBytes {
		return nil, status.Errorf(codes.InvalidArgument, "query is longer than %d bytes", rank.MaxQueryBytes)
	}
	out := &ptcv1.ListToolsResponse{}
	if q := in.GetQuery(); q != "" {
		byName := make(map[string]ptc.Definition, len(defs))
		for _, d := range defs {
			byName[d.Name] = d
		}
		ranked := make([]ptc.Definition, 0, len(defs))
		for _, m := range rank.Rank(defs, q, limit) {
			ranked = append(ranked, byName[m.Name])
			out.Matches = append(out.Matches, &ptcv1.ToolMatch{Name: m.Name, Score: float32(m.Score)})
		}
		defs = ranked
	} else if limit > 0 && limit < len(defs) {
		defs = defs[:limit]
	}
	for _, d := range defs {
		out.Tools = append(out.Tools, wire.DefinitionPB(d))
	}
	pol := s.runner.Policy()
	if t, ok := auth.FromContext(ctx); ok {
		pol = t.Policy(pol)
	}
	lim := pol.Resolve(ptc.Limits{})
	out.Prompt = prompt.Prompt(prompt.Options{TypeScript: in.GetIncludeTypescript(), Timeout: lim.Timeout,
		MaxToolCalls: int(lim.MaxToolCalls), MaxOutputBytes: lim.MaxOutputBytes})
	modelText := out.Prompt
	if in.GetIncludeTypescript() {
		ts, err := tsdecl.Generate(defs, tsdecl.Options{})
		if err != nil {
			return nil, status.Errorf(codes.Internal, "typescript declarations: %v", err)
		}
		out.Typescript = ts
		modelText += ts
	} else {
		for _, t := range out.Tools {
			modelText += t.GetName() + t.GetDescription() + t.GetInputSchemaJson() + t.GetOutputSchemaJson()
		}
	}
	out.ApproxTokens = int32(prompt.ApproxTokens(modelText))
	return out, nil
}

// RequestFromPB converts and checks the proto fields of a request. Checks
// that need the runner (tools, schemas, sizes) happen in Runner.Prepare.
func RequestFromPB(in *ptcv1.ExecuteRequest) (ptc.Request, error) {
	if in == nil {
		return ptc.Request{}, status.Error(codes.InvalidArgument, "request is empty")
	}
	lim, err := wire.LimitsFromPB(in.GetLimits())
	if err != nil {
		return ptc.Request{}, status.Error(codes.InvalidArgument, err.Error())
	}
	sc := in.GetScript()
	if sc == nil {
		return ptc.Request{}, status.Error(codes.InvalidArgument, "script is missing")
	}
	if sc.GetLanguage() == ptcv1.Language_LANGUAGE_UNSPECIFIED {
		// The Go API runs an unset language as JavaScript; on the wire the
		// contract asks callers to say which language they send.
		return ptc.Request{}, status.Error(codes.InvalidArgument, "script.language is required (LANGUAGE_JAVASCRIPT, LANGUAGE_TYPESCRIPT or LANGUAGE_WASM)")
	}
	req := ptc.Request{
		ExecutionID:        in.GetExecutionId(),
		Language:           ptc.Language(sc.GetLanguage()),
		Source:             sc.GetSource(),
		Module:             sc.GetWasmModule(),
		ModuleSHA256:       sc.GetModuleSha256(),
		Limits:             lim,
		AllowedTools:       in.GetAllowedTools(),
		IncludeToolResults: in.GetIncludeToolResults(),
		Deterministic:      in.GetDeterministic(),
		Seed:               in.GetSeed(),
	}
	if cs := in.GetClockStart(); cs != nil {
		if err := cs.CheckValid(); err != nil {
			return ptc.Request{}, status.Errorf(codes.InvalidArgument, "clock_start: %v", err)
		}
		req.ClockStart = cs.AsTime()
	}
	if s := in.GetInputJson(); s != "" {
		req.Input = json.RawMessage(s)
	}
	if s := in.GetResultSchemaJson(); s != "" {
		req.ResultSchema = json.RawMessage(s)
	}
	return req, nil
}

// ResultPB converts a result.
func ResultPB(r *ptc.Result) *ptcv1.ExecuteResponse {
	out := &ptcv1.ExecuteResponse{
		ExecutionId:     r.ExecutionID,
		ResultJson:      string(r.Result),
		Error:           wire.ErrorPB(r.Error),
		ModelMessage:    r.ModelMessage,
		LogsTruncated:   r.LogsTruncated,
		EffectiveLimits: wire.LimitsPB(r.EffectiveLimits),
		Stats: &ptcv1.ExecutionStats{
			Duration:        wire.DurationPB(r.Stats.Duration),
			CpuTime:         wire.DurationPB(r.Stats.CPUTime),
			PeakMemoryBytes: r.Stats.PeakMemoryBytes,
			ToolCalls:       r.Stats.ToolCalls,
			ToolResultBytes: r.Stats.ToolResultBytes,
			OutputBytes:     r.Stats.OutputBytes,
			QueueTime:       wire.DurationPB(r.Stats.QueueTime),
			LogBytes:        r.Stats.LogBytes,
		},
	}
	for _, l := range r.Logs {
		out.Logs = append(out.Logs, wire.LogPB(l))
	}
	for _, t := range r.Trace {
		out.Trace = append(out.Trace, wire.RecordPB(t))
	}
	return out
}

// statusOf maps a request error to a gRPC status.
func statusOf(err error) error {
	var re *ptc.RequestError
	if !errors.As(err, &re) {
		return status.Error(codes.Internal, "internal error")
	}
	code := codes.Internal
	switch re.Code {
	case ptc.InvalidArgument:
		code = codes.InvalidArgument
	case ptc.Unimplemented:
		code = codes.Unimplemented
	case ptc.ResourceExhausted:
		code = codes.ResourceExhausted
	case ptc.FailedPrecondition:
		code = codes.FailedPrecondition
	case ptc.PermissionDenied:
		code = codes.PermissionDenied
	case ptc.Unavailable:
		code = codes.Unavailable
	}
	return status.Error(code, re.Message)
}
