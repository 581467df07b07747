package wire

import (
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// RequestFromPB converts an ExecuteRequest. It refuses only what the
// contract forbids at the wire (a missing script or language, values that
// cannot be converted); every other check happens once, in the executor's
// Prepare. StreamLogs and StreamProgress are the caller's to read from the
// message.
func RequestFromPB(in *ptcv1.ExecuteRequest) (core.Request, *fault.Error) {
	if in == nil {
		return core.Request{}, fault.Reject(fault.CodeInvalidArgument, "request is empty")
	}
	lim, err := LimitsFromPB(in.GetLimits())
	if err != nil {
		return core.Request{}, fault.Reject(fault.CodeInvalidArgument, "%v", err)
	}
	sc := in.GetScript()
	if sc == nil {
		return core.Request{}, fault.Reject(fault.CodeInvalidArgument, "script is missing")
	}
	if sc.GetLanguage() == ptcv1.Language_LANGUAGE_UNSPECIFIED {
		// The Go API runs an unset language as JavaScript; on the wire the
		// contract asks callers to say which language they send.
		return core.Request{}, fault.Reject(fault.CodeInvalidArgument, "script.language is required (LANGUAGE_JAVASCRIPT, LANGUAGE_TYPESCRIPT or LANGUAGE_WASM)")
	}
	req := core.Request{
		ExecutionID: in.GetExecutionId(),
		Script: core.Script{
			Language:     core.Language(sc.GetLanguage()),
			Source:       sc.GetSource(),
			Module:       sc.GetWasmModule(),
			ModuleSHA256: sc.GetModuleSha256(),
		},
		Limits:             lim,
		AllowedTools:       in.GetAllowedTools(),
		NoServerTools:      in.GetNoServerTools(),
		IncludeToolResults: in.GetIncludeToolResults(),
		Determinism:        core.Determinism{Deterministic: in.GetDeterministic(), Seed: in.GetSeed()},
		Overflow:           core.OverflowPolicy(in.GetOverflowPolicy()),
		ProgressValues:     in.GetProgressValues(),
		Resumable:          in.GetResumable(),
		RequireApproval:    in.GetRequireApproval(),
	}
	// The executor checks the client tools and compiles their schemas
	// (through its cache, and within its bound on their values together).
	for _, d := range in.GetClientTools() {
		req.ClientTools = append(req.ClientTools, tools.Tool{Definition: DefinitionFromPB(d)})
	}
	if cs := in.GetClockStart(); cs != nil {
		if err := cs.CheckValid(); err != nil {
			return core.Request{}, fault.Reject(fault.CodeInvalidArgument, "clock_start: %v", err)
		}
		req.ClockStart, req.ClockStartSet = cs.AsTime(), true
	}
	if s := in.GetInputJson(); s != "" {
		req.Input = json.RawMessage(s)
	}
	if s := in.GetResultSchemaJson(); s != "" {
		req.ResultSchema = json.RawMessage(s)
	}
	return req, nil
}

// RequestPB converts a request; an unspecified language is sent as
// JavaScript, StreamLogs is set when the request has OnLog and
// StreamProgress when it has an Observer. The client tools of a resumable
// request travel in it; other client tools travel in SessionStart (see
// DefinitionPB).
func RequestPB(r core.Request) *ptcv1.ExecuteRequest {
	out := requestPB(r)
	if r.Resumable {
		for _, t := range r.ClientTools {
			out.ClientTools = append(out.ClientTools, DefinitionPB(t.Definition))
		}
	}
	return out
}

func requestPB(r core.Request) *ptcv1.ExecuteRequest {
	return &ptcv1.ExecuteRequest{
		Script: &ptcv1.Script{
			Language:     ptcv1.Language(r.Language.Or(core.LanguageJavaScript)),
			Source:       r.Source,
			WasmModule:   r.Module,
			ModuleSha256: r.ModuleSHA256,
		},
		InputJson:          string(r.Input),
		Limits:             LimitsPB(r.Limits),
		AllowedTools:       r.AllowedTools,
		NoServerTools:      r.NoServerTools,
		ResultSchemaJson:   string(r.ResultSchema),
		ExecutionId:        r.ExecutionID,
		IncludeToolResults: r.IncludeToolResults,
		Deterministic:      r.Deterministic,
		Seed:               r.Seed,
		ClockStart:         clockStartPB(r.Determinism),
		StreamLogs:         r.OnLog != nil,
		StreamProgress:     r.Observer != nil,
		ProgressValues:     r.Observer != nil && r.ProgressValues,
		OverflowPolicy:     ptcv1.OverflowPolicy(r.Overflow),
		Resumable:          r.Resumable,
		RequireApproval:    r.RequireApproval,
	}
}

// clockStartPB is the clock start of d, nil when none was given.
func clockStartPB(d core.Determinism) *timestamppb.Timestamp {
	if !d.ClockStartSet {
		return nil
	}
	return timestamppb.New(d.ClockStart)
}

// timestampPB is t on the wire; nil for the zero time (an unset deadline
// or expiry).
func timestampPB(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
