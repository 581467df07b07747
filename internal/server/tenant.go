package server

import (
	"context"
	"errors"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/metrics"
)

// applyTenant narrows req to the caller's tenant (when the context carries
// one): every allowed tool must be in the tenant's set, an empty
// allowed_tools becomes the tenant's set, and the limits are resolved
// under the tenant's ceilings.
func (s *Server) applyTenant(ctx context.Context, req *ptc.Request) (*auth.Tenant, error) {
	t, ok := auth.FromContext(ctx)
	if !ok {
		return nil, nil
	}
	if t.Ceilings != (limits.Limits{}) && req.Limits.CheckRequest() == nil {
		// Negative limits are left for Prepare to refuse.
		req.Limits = t.Policy(s.runner.Policy()).Resolve(req.Limits)
	}
	if !t.RestrictsTools() {
		return t, nil
	}
	if len(req.AllowedTools) > 0 {
		for _, n := range req.AllowedTools {
			if !t.AllowsTool(n) {
				return nil, status.Errorf(codes.PermissionDenied, "allowed_tools: tool %q is not among tenant %s's tools: call ListTools to see yours", n, t.Name)
			}
		}
		return t, nil
	}
	all := s.runner.Tools()
	for _, d := range all {
		if t.AllowsTool(d.Name) {
			req.AllowedTools = append(req.AllowedTools, d.Name)
		}
	}
	if len(req.AllowedTools) == 0 {
		// The tenant may use none of the server's tools: its script may
		// still call its own client tools.
		req.NoServerTools = true
	}
	return t, nil
}

// admit waits for an admission slot for p. The release func must be
// called when the execution ends.
func (s *Server) admit(ctx context.Context, p *ptc.Prepared, t *auth.Tenant) (func(), error) {
	if s.adm == nil {
		return func() {}, nil
	}
	name, quota := "", 0
	if t != nil {
		name, quota = t.Name, t.MaxConcurrent
	}
	release, waited, err := s.adm.Acquire(ctx, name, quota)
	if err != nil {
		var r *admission.Rejected
		if errors.As(err, &r) {
			if s.metrics != nil {
				s.metrics.ObserveRejected(r.Reason)
			}
			return nil, RejectedStatus(r)
		}
		return nil, status.FromContextError(err).Err()
	}
	p.SetQueueTime(waited)
	if s.metrics != nil {
		s.metrics.ObserveAdmitted(waited)
	}
	return release, nil
}

// RejectedStatus is the RESOURCE_EXHAUSTED status of a request refused by
// admission control, with a google.rpc.RetryInfo detail.
func RejectedStatus(r *admission.Rejected) error {
	st := status.New(codes.ResourceExhausted, r.Error())
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(r.RetryAfter)}); err == nil {
		st = d
	}
	return st.Err()
}

// observe records a finished execution in the metrics and its id and
// outcome in the call's log record.
func (s *Server) observe(ctx context.Context, req ptc.Request, res *ptc.Result) {
	outcome := metrics.OutcomeOK
	if res.Error != nil {
		outcome = res.Error.Kind.String()
	}
	logging.AddFields(ctx, logging.Fields{"execution_id", res.ExecutionID, "outcome", outcome})
	if s.metrics == nil {
		return
	}
	lang := req.Language
	if lang == ptc.LanguageUnspecified {
		lang = ptc.LanguageJavaScript
	}
	client := make(map[string]bool, len(req.ClientTools))
	for _, t := range req.ClientTools {
		client[t.Name] = true
	}
	e := metrics.Execution{
		Language:        lang.String(),
		Outcome:         outcome,
		Duration:        res.Stats.Duration,
		CPUTime:         res.Stats.CPUTime,
		ToolResultBytes: res.Stats.ToolResultBytes,
		OutputBytes:     res.Stats.OutputBytes,
		LogsTruncated:   res.LogsTruncated,
		Calls:           make([]metrics.ToolCall, 0, len(res.Trace)),
	}
	for _, c := range res.Trace {
		// Label values stay bounded: scripts and callers choose other names.
		tool := c.Tool
		if client[tool] {
			tool = metrics.ClientTool
		} else if _, ok := s.runner.Registry().Lookup(tool); !ok {
			tool = metrics.UnknownTool
		}
		o := metrics.OutcomeOK
		if !c.OK {
			o = callOutcome(c.ErrorCode)
		}
		e.Calls = append(e.Calls, metrics.ToolCall{Tool: tool, Outcome: o, Duration: c.Duration})
	}
	s.metrics.ObserveExecution(e)
}

// bridgeCodes are the tool error codes ptc itself produces; other codes
// come from tools (any string) and count as tool_failed.
var bridgeCodes = map[string]bool{
	bridge.CodeUnknownTool: true, bridge.CodeInvalidArguments: true, bridge.CodeCallLimit: true,
	bridge.CodeToolFailed: true, bridge.CodeInvalidOutput: true, bridge.CodeCancelled: true,
	bridge.CodeTimeout: true, bridge.CodePanic: true,
}

func callOutcome(code string) string {
	if bridgeCodes[code] {
		return code
	}
	return bridge.CodeToolFailed
}
