package cassette

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// Version is the cassette format version this package reads and writes.
const Version = 1

// Bounds that protect a reader from a hostile or broken file.
const (
	// MaxLineBytes bounds one line: a tool result may be up to
	// bridge.MaxResultBytes, plus room for the rest of the record.
	MaxLineBytes = bridge.MaxResultBytes + 1<<20
	// MaxCalls bounds the calls of one cassette.
	MaxCalls = 1 << 20
)

// Line types, in the "type" field of every line.
const (
	TypeRequest = "request"
	TypeCall    = "call"
	TypeResult  = "result"
)

// Cassette is one recorded execution.
type Cassette struct {
	Request Request
	// Calls are the tool calls in seq order (Calls[i].Seq == i+1).
	Calls []Call
	Final Final
}

// Request is the first line: what ran and under which conditions.
type Request struct {
	V    int    `json:"v"`
	Type string `json:"type"`
	// ExecutionID is the recorded execution's id (tool idempotency keys
	// derive from it).
	ExecutionID string `json:"execution_id,omitempty"`
	// Language is "javascript", "typescript", "wasm" or "python".
	Language string `json:"language"`
	// ScriptSHA256 is the hex SHA-256 of the source (or module bytes).
	ScriptSHA256 string `json:"script_sha256"`
	// Script is the source of a JavaScript or TypeScript script.
	Script string `json:"script,omitempty"`
	// Module is a WASM module (base64 in JSON).
	Module []byte `json:"module,omitempty"`
	// ScriptPath is the path the script was read from, for people.
	ScriptPath string `json:"script_path,omitempty"`
	// Input is the input JSON value.
	Input json.RawMessage `json:"input"`
	// Limits are the effective limits of the recorded execution, in the
	// JSON form of limits.Limits (durations as strings such as "5s").
	Limits limits.Limits `json:"limits"`
	// Seed seeded Math.random; ClockStart started the virtual clock.
	Seed       uint64    `json:"seed"`
	ClockStart time.Time `json:"clock_start"`
	// AllowedTools is the request's allowlist, empty for all.
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// ResultSchema is the request's result schema, if any.
	ResultSchema json.RawMessage `json:"result_schema,omitempty"`
	// TruncateResult is the overflow policy truncate.
	TruncateResult bool `json:"truncate_result,omitempty"`
	// Tools are the definitions of every tool the script could call.
	Tools []tools.Definition `json:"tools"`
}

// Call is one tool call, in seq order.
type Call struct {
	Type string `json:"type"`
	Seq  int32  `json:"seq"`
	Tool string `json:"tool"`
	// Arguments is the JSON arguments (a truncation stub for arguments
	// larger than bridge.MaxTracedArgumentBytes).
	Arguments json.RawMessage `json:"arguments"`
	// Result is the answer of a call that succeeded.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the failure of a call that failed.
	Error *CallError `json:"error,omitempty"`
	// StartedAfterUS and DurationUS are the recorded timing in
	// microseconds (informative: replay answers at once).
	StartedAfterUS int64 `json:"started_after_us"`
	DurationUS     int64 `json:"duration_us"`
}

// CallError is a failed call's code and message.
type CallError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Final is the last line: the execution's result or failure.
type Final struct {
	Type string `json:"type"`
	// Result is the result JSON of a successful execution.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the failure of one that failed.
	Error *Failure `json:"error,omitempty"`
}

// Failure is a recorded execution failure.
type Failure struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Tool    string `json:"tool,omitempty"`
}

// LanguageName returns the cassette spelling of a language.
func LanguageName(l ptc.Language) string {
	return core.Language(l).Or(core.LanguageJavaScript).String()
}

// ParseLanguage parses a cassette language name.
func ParseLanguage(s string) (ptc.Language, error) {
	l, err := core.ParseLanguage(s)
	return ptc.Language(l), err
}

// ParseKind parses an error kind name such as "SCRIPT_ERROR".
func ParseKind(s string) (ptc.ErrorKind, bool) {
	for _, k := range fault.Kinds() {
		if k.String() == s {
			return ptc.ErrorKind(k), true
		}
	}
	return 0, false
}

// ScriptSHA256 returns the hex SHA-256 of a request's script (source or
// module).
func ScriptSHA256(req ptc.Request) string {
	var sum [32]byte
	if req.Language == ptc.LanguageWASM {
		sum = sha256.Sum256(req.Module)
	} else {
		sum = sha256.Sum256([]byte(req.Source))
	}
	return hex.EncodeToString(sum[:])
}

// New builds a cassette from a deterministic request, the definitions of
// the tools it could call, and its result, whose trace must carry tool
// results (Request.IncludeToolResults). scriptPath is informative.
func New(req ptc.Request, defs []tools.Definition, scriptPath string, res *ptc.Result) (*Cassette, error) {
	if !req.Deterministic {
		return nil, errors.New("record a deterministic execution: set Request.Deterministic (and a Seed)")
	}
	if req.Seed == 0 {
		return nil, errors.New("record with an explicit seed: a zero Request.Seed is derived from the execution id, which replay cannot see")
	}
	input := req.Input
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("null")
	}
	clock := req.ClockStart
	if clock.IsZero() {
		clock = time.Unix(0, 0)
	}
	c := &Cassette{Request: Request{
		V: Version, Type: TypeRequest,
		ExecutionID:  res.ExecutionID,
		Language:     LanguageName(req.Language),
		ScriptSHA256: ScriptSHA256(req),
		ScriptPath:   scriptPath,
		Input:        compactRaw(input),
		Limits:       limits.Limits(res.EffectiveLimits),
		Seed:         req.Seed,
		ClockStart:   clock.UTC(),
		AllowedTools: req.AllowedTools,
		Tools:        defs,

		TruncateResult: req.TruncateResult,
	}}
	if len(req.ResultSchema) > 0 {
		c.Request.ResultSchema = compactRaw(req.ResultSchema)
	}
	if req.Language == ptc.LanguageWASM {
		c.Request.Module = req.Module
	} else {
		c.Request.Script = req.Source
	}
	for i, r := range res.Trace {
		if r.Seq != int32(i+1) {
			return nil, fmt.Errorf("trace record %d has seq %d: the trace is not in call order", i, r.Seq)
		}
		call := Call{Type: TypeCall, Seq: r.Seq, Tool: r.Tool, Arguments: compactRaw(r.Arguments),
			StartedAfterUS: r.StartedAfter.Microseconds(), DurationUS: r.Duration.Microseconds()}
		if len(call.Arguments) == 0 {
			call.Arguments = json.RawMessage("{}")
		}
		switch {
		case r.OK && r.Result == nil:
			return nil, fmt.Errorf("call #%d (%s) has no result in the trace: run with IncludeToolResults", r.Seq, r.Tool)
		case r.OK && int64(len(r.Result)) < r.ResultBytes && bytes.HasPrefix(r.Result, []byte(`{"$truncated":true`)):
			return nil, fmt.Errorf("call #%d (%s) returned %d bytes, past the %d MiB of tool results a trace keeps in all: this run cannot be recorded",
				r.Seq, r.Tool, r.ResultBytes, bridge.MaxKeptResultBytes>>20)
		case r.OK:
			call.Result = compactRaw(r.Result)
		default:
			call.Error = &CallError{Code: r.ErrorCode, Message: r.ErrorMessage}
		}
		c.Calls = append(c.Calls, call)
	}
	c.Final = FinalOf(res)
	return c, nil
}

// FinalOf returns the final line for a result.
func FinalOf(res *ptc.Result) Final {
	f := Final{Type: TypeResult}
	if res.Error != nil {
		e := res.Error
		f.Error = &Failure{Kind: e.Kind.String(), Message: e.Message, Line: e.Line, Column: e.Column, Tool: e.Tool}
	} else {
		f.Result = compactRaw(res.Result)
	}
	return f
}

// Replay returns the request that replays the cassette: the recorded
// script, input, limits, seed, clock and result schema, deterministic,
// with tool results kept in the trace. It names no tools: replay serves
// them (see Replayer.Tools).
func (c *Cassette) Replay() (ptc.Request, error) {
	r := c.Request
	lang, err := ParseLanguage(r.Language)
	if err != nil {
		return ptc.Request{}, err
	}
	if err := r.Limits.Check(); err != nil {
		return ptc.Request{}, err
	}
	req := ptc.Request{
		ExecutionID:        r.ExecutionID,
		Language:           lang,
		Source:             r.Script,
		Module:             r.Module,
		Input:              r.Input,
		Limits:             ptc.Limits(r.Limits),
		ResultSchema:       r.ResultSchema,
		TruncateResult:     r.TruncateResult,
		IncludeToolResults: true,
		Deterministic:      true,
		Seed:               r.Seed,
		ClockStart:         r.ClockStart,
	}
	return req, nil
}

// Write writes the cassette as JSONL: the request, the calls, the result.
func (c *Cassette) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	req := c.Request
	req.V, req.Type = Version, TypeRequest
	if req.Tools == nil {
		req.Tools = []tools.Definition{}
	}
	if err := enc.Encode(req); err != nil {
		return fmt.Errorf("cassette request: %w", err)
	}
	for _, call := range c.Calls {
		call.Type = TypeCall
		if err := enc.Encode(call); err != nil {
			return fmt.Errorf("cassette call #%d: %w", call.Seq, err)
		}
	}
	f := c.Final
	f.Type = TypeResult
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("cassette result: %w", err)
	}
	return bw.Flush()
}

// Read parses a cassette strictly. Errors name the line.
func Read(r io.Reader) (*Cassette, error) { return read(r, MaxLineBytes, MaxCalls) }

func read(r io.Reader, maxLine, maxCalls int) (*Cassette, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64<<10, maxLine)), maxLine)
	c := &Cassette{}
	n, final := 0, false
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			return nil, fmt.Errorf("line %d is empty: a cassette has one JSON object per line", n)
		}
		if final {
			return nil, fmt.Errorf("line %d follows the result line, which must be last", n)
		}
		var head struct {
			V    *int   `json:"v"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, fmt.Errorf("line %d is not a JSON object: %v", n, err)
		}
		if n == 1 {
			if head.Type != TypeRequest {
				return nil, fmt.Errorf("line 1 has type %q: a cassette starts with its %q line", head.Type, TypeRequest)
			}
			if head.V == nil || *head.V != Version {
				return nil, fmt.Errorf("line 1: unsupported cassette version (want \"v\": %d); record it again with this version of ptc", Version)
			}
			if err := strict(line, &c.Request); err != nil {
				return nil, fmt.Errorf("line 1: %v", err)
			}
			if err := c.Request.check(); err != nil {
				return nil, fmt.Errorf("line 1: %v", err)
			}
			continue
		}
		switch head.Type {
		case TypeCall:
			var call Call
			if err := strict(line, &call); err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			if len(c.Calls) >= maxCalls {
				return nil, fmt.Errorf("line %d: more than %d calls", n, maxCalls)
			}
			if call.Seq != int32(len(c.Calls)+1) {
				return nil, fmt.Errorf("line %d: call has seq %d, want %d: calls are in seq order from 1", n, call.Seq, len(c.Calls)+1)
			}
			if err := call.check(); err != nil {
				return nil, fmt.Errorf("line %d: call #%d: %v", n, call.Seq, err)
			}
			c.Calls = append(c.Calls, call)
		case TypeResult:
			if err := strict(line, &c.Final); err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			if err := c.Final.check(); err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			final = true
		default:
			return nil, fmt.Errorf("line %d has type %q: want %q or %q", n, head.Type, TypeCall, TypeResult)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d is longer than %d bytes", n+1, maxLine)
		}
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("the cassette is empty")
	}
	if !final {
		return nil, fmt.Errorf("the cassette has no %q line: it ends after line %d", TypeResult, n)
	}
	return c, nil
}

// strict decodes one line, refusing unknown fields.
func strict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			return fmt.Errorf("unknown field %s", rest)
		}
		return errors.New(strings.TrimPrefix(msg, "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON object")
	}
	return nil
}

func (r *Request) check() error {
	lang, err := ParseLanguage(r.Language)
	if err != nil {
		return err
	}
	if lang == ptc.LanguageWASM {
		if len(r.Module) == 0 {
			return errors.New("a wasm cassette needs its module")
		}
	} else if r.Script == "" {
		return errors.New("script is empty")
	}
	if len(r.Input) == 0 {
		r.Input = json.RawMessage("null")
	}
	if !json.Valid(r.Input) {
		return errors.New("input is not valid JSON")
	}
	if err := r.Limits.Check(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, d := range r.Tools {
		if seen[d.Name] {
			return fmt.Errorf("tool %q is defined twice", d.Name)
		}
		seen[d.Name] = true
	}
	return nil
}

func (c *Call) check() error {
	if c.Tool == "" {
		return errors.New("tool is empty")
	}
	if len(c.Arguments) == 0 || !json.Valid(c.Arguments) {
		return errors.New("arguments are missing or not valid JSON")
	}
	if (c.Result == nil) == (c.Error == nil) {
		return errors.New("a call has exactly one of result and error")
	}
	if c.Error != nil && c.Error.Code == "" {
		return errors.New("error.code is empty")
	}
	return nil
}

func (f *Final) check() error {
	if (f.Result == nil) == (f.Error == nil) {
		return errors.New("the result line has exactly one of result and error")
	}
	if f.Error != nil {
		if _, ok := ParseKind(f.Error.Kind); !ok {
			return fmt.Errorf("error.kind %q is not an error kind such as SCRIPT_ERROR", f.Error.Kind)
		}
	}
	return nil
}
