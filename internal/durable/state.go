package durable

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/core"
	dp "github.com/ptcrun/ptc/internal/durableproto"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// State is a paused execution: everything needed to re-run it up to its
// pause and go on. It holds no WebAssembly module, only its digest.
type State struct {
	ExecutionID string
	Script      core.Script
	Input       json.RawMessage
	// Limits are the effective limits.
	Limits             limits.Limits
	AllowedTools       []string
	NoServerTools      bool
	ClientTools        []tools.Definition
	RequireApproval    []string
	ResultSchema       json.RawMessage
	IncludeToolResults bool
	Seed               uint64
	ClockStart         time.Time
	Usage              Usage
	Journal            core.Journal
	PausedAt           time.Time
}

// Usage is what an execution used across its segments, paused time apart.
type Usage struct {
	// Wall is the time it ran; CPU the compute time it used.
	Wall, CPU time.Duration
	// Pauses counts its pauses; Paused is the time it waited paused
	// before the current pause.
	Pauses int32
	Paused time.Duration
	// LogEntries counts the console entries kept so far (a re-run writes
	// them again; they are not returned twice).
	LogEntries int32
}

// marshal encodes s.
func (s *State) marshal() ([]byte, error) {
	m := &dp.State{
		ExecutionId:         s.ExecutionID,
		Language:            int32(s.Script.Language),
		Source:              s.Script.Source,
		ModuleSha256:        s.Script.ModuleSHA256,
		InputJson:           s.Input,
		Limits:              s.Limits.Values(),
		AllowedTools:        s.AllowedTools,
		NoServerTools:       s.NoServerTools,
		RequireApproval:     s.RequireApproval,
		ResultSchemaJson:    s.ResultSchema,
		IncludeToolResults:  s.IncludeToolResults,
		Seed:                s.Seed,
		ClockStartUnixNanos: unixNanos(s.ClockStart),
		PausedAtUnixNanos:   unixNanos(s.PausedAt),
		Usage: &dp.Usage{WallNanos: int64(s.Usage.Wall), CpuNanos: int64(s.Usage.CPU), Pauses: s.Usage.Pauses,
			PausedNanos: int64(s.Usage.Paused), LogEntries: s.Usage.LogEntries},
	}
	for _, d := range s.ClientTools {
		m.ClientTools = append(m.ClientTools, &dp.Tool{Name: d.Name, Description: d.Description,
			InputSchemaJson: d.InputSchema, OutputSchemaJson: d.OutputSchema})
	}
	m.Calls = make([]*dp.Call, len(s.Journal.Calls))
	for i := range s.Journal.Calls {
		e := &s.Journal.Calls[i]
		c := &dp.Call{Seq: e.Seq, Tool: e.Tool, ArgsSha256: e.ArgsSHA256[:], ArgsJson: e.Args,
			StartedAfterNanos: int64(e.StartedAfter), DurationNanos: int64(e.Duration)}
		if f := e.Failure; f != nil {
			c.Failure = &dp.Failure{Name: f.Name, Code: f.Code, Message: f.Message, Limit: f.Limit, Observed: f.Observed}
			for _, v := range f.Violations {
				c.Failure.Violations = append(c.Failure.Violations, &dp.Violation{Path: v.Path, Keyword: v.Keyword, Message: v.Message})
			}
		} else {
			c.ResultJson = e.Result
		}
		m.Calls[i] = c
	}
	for _, a := range s.Journal.Pending {
		m.Pending = append(m.Pending, &dp.Pending{Seq: a.Seq, Kind: int32(a.Kind), Tool: a.Tool, ArgsJson: a.Arguments, Reason: a.Reason})
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// unmarshal decodes a state. The bytes come from a verified continuation
// (or from this server's store), but are checked all the same.
func unmarshal(b []byte) (*State, error) {
	var m dp.State
	if err := proto.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	lim, err := limits.FromValues(m.GetLimits())
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	lang := core.Language(m.GetLanguage())
	if !lang.Valid() {
		return nil, fmt.Errorf("state: unknown language %d", m.GetLanguage())
	}
	u := m.GetUsage()
	s := &State{
		ExecutionID:        m.GetExecutionId(),
		Script:             core.Script{Language: lang, Source: m.GetSource(), ModuleSHA256: m.GetModuleSha256()},
		Input:              json.RawMessage(m.GetInputJson()),
		Limits:             lim,
		AllowedTools:       m.GetAllowedTools(),
		NoServerTools:      m.GetNoServerTools(),
		RequireApproval:    m.GetRequireApproval(),
		ResultSchema:       json.RawMessage(m.GetResultSchemaJson()),
		IncludeToolResults: m.GetIncludeToolResults(),
		Seed:               m.GetSeed(),
		ClockStart:         fromUnixNanos(m.GetClockStartUnixNanos()),
		PausedAt:           fromUnixNanos(m.GetPausedAtUnixNanos()),
		Usage: Usage{Wall: time.Duration(u.GetWallNanos()), CPU: time.Duration(u.GetCpuNanos()), Pauses: u.GetPauses(),
			Paused: time.Duration(u.GetPausedNanos()), LogEntries: u.GetLogEntries()},
	}
	if len(s.Input) == 0 {
		s.Input = nil
	}
	if len(s.ResultSchema) == 0 {
		s.ResultSchema = nil
	}
	for _, t := range m.GetClientTools() {
		s.ClientTools = append(s.ClientTools, tools.Definition{Name: t.GetName(), Description: t.GetDescription(),
			InputSchema: rawOrNil(t.GetInputSchemaJson()), OutputSchema: rawOrNil(t.GetOutputSchemaJson())})
	}
	s.Journal.Calls = make([]core.JournalEntry, len(m.GetCalls()))
	for i, c := range m.GetCalls() {
		e := &s.Journal.Calls[i]
		if len(c.GetArgsSha256()) != 32 {
			return nil, fmt.Errorf("state: call #%d has no argument digest", c.GetSeq())
		}
		*e = core.JournalEntry{Seq: c.GetSeq(), Tool: c.GetTool(), Args: rawOrNil(c.GetArgsJson()), Result: rawOrNil(c.GetResultJson()),
			StartedAfter: time.Duration(c.GetStartedAfterNanos()), Duration: time.Duration(c.GetDurationNanos())}
		copy(e.ArgsSHA256[:], c.GetArgsSha256())
		if f := c.GetFailure(); f != nil {
			e.Failure = &core.CallFailure{Name: f.GetName(), Code: f.GetCode(), Message: f.GetMessage(), Limit: f.GetLimit(), Observed: f.GetObserved()}
			for _, v := range f.GetViolations() {
				e.Failure.Violations = append(e.Failure.Violations, tools.Violation{Path: v.GetPath(), Keyword: v.GetKeyword(), Message: v.GetMessage()})
			}
		} else if e.Result == nil {
			e.Result = json.RawMessage("null")
		}
	}
	for _, p := range m.GetPending() {
		k := core.ActionKind(p.GetKind())
		if k != core.ActionClientTool && k != core.ActionApproval {
			return nil, fmt.Errorf("state: pending call #%d has unknown kind %d", p.GetSeq(), p.GetKind())
		}
		s.Journal.Pending = append(s.Journal.Pending, core.Action{CallID: core.CallID(p.GetSeq()), Kind: k, Seq: p.GetSeq(),
			Tool: p.GetTool(), Arguments: json.RawMessage(p.GetArgsJson()), Reason: p.GetReason(),
			IdempotencyKey: s.ExecutionID + "/" + fmt.Sprint(p.GetSeq())})
	}
	return s, nil
}

func rawOrNil(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
