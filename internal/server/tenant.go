package server

import (
	"context"
	"errors"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/metrics"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/tools"
)

// tenantOf is the caller's tenant, nil without one.
type tenantOf struct{ *auth.Tenant }

// ceilings are the tenant's limit ceilings, an input of Prepare (zero
// without a tenant: the server's policy alone applies).
func (t tenantOf) ceilings() limits.Limits {
	if t.Tenant == nil {
		return limits.Limits{}
	}
	return t.Ceilings
}

// name is the tenant's name, "" without one: continuations are bound to
// it.
func (t tenantOf) name() string {
	if t.Tenant == nil {
		return ""
	}
	return t.Name
}

// applyTenant narrows req's tools to the caller's tenant (when the context
// carries one): every allowed tool must be in the tenant's set, and an
// empty allowed_tools becomes the tenant's set. The tenant's limit
// ceilings are applied by Prepare.
func (s *Server) applyTenant(ctx context.Context, req *core.Request) (tenantOf, *fault.Error) {
	t, ok := auth.FromContext(ctx)
	if !ok {
		return tenantOf{}, nil
	}
	req.Tenant = t.Name
	if !t.RestrictsTools() || req.NoServerTools {
		return tenantOf{t}, nil
	}
	if len(req.AllowedTools) > 0 {
		for _, n := range req.AllowedTools {
			if !t.AllowsTool(n) {
				return tenantOf{}, fault.Reject(fault.CodePermissionDenied,
					"allowed_tools: tool %q is not among tenant %s's tools: call ListTools to see yours", core.Clip(n, core.QuotedBytes), t.Name)
			}
		}
		return tenantOf{t}, nil
	}
	for _, d := range s.exec.Registry().Definitions() {
		if t.AllowsTool(d.Name) {
			req.AllowedTools = append(req.AllowedTools, d.Name)
		}
	}
	if len(req.AllowedTools) == 0 {
		// The tenant may use none of the server's tools: its script may
		// still call its own client tools.
		req.NoServerTools = true
	}
	return tenantOf{t}, nil
}

// admit waits for an admission slot for p. The release func must be
// called when the execution ends. A request not admitted is
// RESOURCE_EXHAUSTED with a retry delay, or the error of ctx ending first.
func (s *Server) admit(ctx context.Context, p *executor.Prepared, t tenantOf) (func(), *fault.Error) {
	if s.adm == nil {
		return func() {}, nil
	}
	name, quota := "", 0
	if t.Tenant != nil {
		name, quota = t.Name, t.MaxConcurrent
	}
	var span trace.Span
	if s.tracing.Enabled() {
		_, span = s.tracing.Tracer().Start(ctx, telemetry.SpanAdmission)
	}
	release, waited, err := s.adm.Acquire(ctx, name, quota)
	if span != nil {
		span.SetAttributes(telemetry.KeyAdmissionWaitMS.Float64(float64(waited.Microseconds()) / 1000))
		if err != nil {
			span.SetStatus(codes.Error, "not admitted")
		}
		span.End()
	}
	if err != nil {
		var r *admission.Rejected
		if errors.As(err, &r) {
			if s.metrics != nil {
				s.metrics.ObserveRejected(r.Reason)
			}
			return nil, &fault.Error{Code: fault.CodeResourceExhausted, Message: r.Error(), RetryAfter: r.RetryAfter}
		}
		return nil, fault.FromContext(err)
	}
	shared, ferr := s.sharedSlot(ctx, name, quota)
	if ferr != nil {
		release()
		return nil, ferr
	}
	p.SetQueueTime(waited)
	if s.metrics != nil {
		s.metrics.ObserveAdmitted(waited)
	}
	return func() { shared(); release() }, nil
}

// OutcomePaused is the outcome label of a resumable execution that paused
// for its caller.
const OutcomePaused = telemetry.OutcomeRequiresAction

// observe records a finished execution in the metrics and its id and
// outcome in the call's log record.
func (s *Server) observe(ctx context.Context, req core.Request, p *executor.Prepared, res *core.Result) {
	s.annotate(ctx, res)
	s.count(req, p, res)
}

// outcomeOf is the outcome label of a result: the execution span's.
func outcomeOf(res *core.Result) string { return telemetry.Outcome(res) }

// annotate adds an execution's id and outcome to the call's log line and
// span.
func (s *Server) annotate(ctx context.Context, res *core.Result) {
	outcome := outcomeOf(res)
	logging.AddFields(ctx, logging.Fields{"execution_id", res.ExecutionID, "outcome", outcome})
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(telemetry.KeyExecutionID.String(res.ExecutionID), telemetry.KeyOutcome.String(outcome))
		if t, ok := auth.FromContext(ctx); ok {
			span.SetAttributes(telemetry.KeyTenant.String(t.Name))
		}
	}
}

// count records an execution (or a segment of a resumable one) in the
// metrics, once.
func (s *Server) count(req core.Request, p *executor.Prepared, res *core.Result) {
	if s.metrics == nil {
		return
	}
	outcome := outcomeOf(res)
	client := make(map[string]bool, len(req.ClientTools))
	for _, t := range req.ClientTools {
		client[t.Name] = true
	}
	e := metrics.Execution{
		Language:        p.Language().String(),
		Outcome:         outcome,
		Paused:          outcome == OutcomePaused,
		Duration:        res.Stats.Duration,
		CPUTime:         res.Stats.CPUTime,
		ToolResultBytes: res.Stats.ToolResultBytes,
		OutputBytes:     res.Stats.OutputBytes,
		LogsTruncated:   res.LogsTruncated,
		Calls:           make([]metrics.ToolCall, 0, len(res.Trace)),
	}
	// A resumed segment's trace and tool result bytes cover the whole
	// execution; only the calls this segment made are counted, once.
	var resultBytes int64
	for _, c := range res.Trace {
		if !p.MadeNow(c.Seq) {
			continue
		}
		resultBytes += c.ResultBytes
		// Label values stay bounded: scripts and callers choose other names.
		tool := c.Tool
		if client[tool] {
			tool = metrics.ClientTool
		} else if _, ok := s.exec.Registry().Lookup(tool); !ok {
			tool = metrics.UnknownTool
		}
		o := metrics.OutcomeOK
		if !c.OK {
			o = callOutcome(c.ErrorCode)
		}
		e.Calls = append(e.Calls, metrics.ToolCall{Tool: tool, Outcome: o, Duration: c.Duration})
	}
	if p.Resumed() {
		e.ToolResultBytes = resultBytes
	}
	s.metrics.ObserveExecution(e)
}

// callOutcome is the metrics label of a failed call: one of the tool error
// codes ptc itself produces; other codes come from tools (any string) and
// count as tool_failed.
func callOutcome(code string) string {
	switch code {
	case tools.CodeUnknownTool, tools.CodeInvalidArguments, tools.CodeCallLimit, tools.CodeToolFailed,
		tools.CodeInvalidOutput, tools.CodeCancelled, tools.CodeTimeout, tools.CodePanic:
		return code
	}
	return tools.CodeToolFailed
}
