package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/policy"
)

// Error codes of MCP tool calls.
const (
	// CodeUnavailable: the server is not connected (it failed to start, died,
	// or is being reconnected).
	CodeUnavailable = "unavailable"
	// CodeToolError: the server answered the call with isError.
	CodeToolError = "tool_error"
	// CodeProtocolError: the server answered the call with a JSON-RPC error.
	CodeProtocolError = "mcp_error"
)

// MetaIdempotencyKey is the _meta key that carries a call's idempotency key.
const MetaIdempotencyKey = "ptc/idempotency_key"

// Defaults of a Config.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultReconnectMin   = 500 * time.Millisecond
	DefaultReconnectMax   = 30 * time.Second
	DefaultStopGrace      = 2 * time.Second
	// DefaultMaxTools bounds how many tools one server may list.
	DefaultMaxTools = 1000
	// MaxErrorMessageBytes bounds the message of a tool_error.
	MaxErrorMessageBytes = 2048
)

// Config configures one MCP server source. Exactly one of Command (stdio)
// and URL (streamable HTTP) is set.
type Config struct {
	// Name is the source's name, the first segment of its tools' names.
	Name string
	// Command is the executable of a stdio server; Args are its arguments.
	Command string
	Args    []string
	// Dir is the stdio server's working directory ("" is ptcd's).
	Dir string
	// StopGrace is how long Close waits, after closing a stdio server's
	// stdin, before it sends SIGTERM; 0 means DefaultStopGrace.
	StopGrace time.Duration
	// Env is the stdio server's environment beyond PATH, HOME, TMPDIR and
	// LANG, which it inherits; nothing else of ptcd's environment leaks.
	Env map[string]string
	// URL is the endpoint of a streamable HTTP server.
	URL string
	// Headers are sent with every HTTP request (e.g. Authorization). The
	// caller resolves them from environment variables.
	Headers map[string]string
	// HTTPClient sends the HTTP requests; nil means http.DefaultClient's
	// transport with Headers added.
	HTTPClient *http.Client
	// Required makes Start fail when the server cannot be reached; when
	// false the source starts unavailable and keeps trying.
	Required bool
	// Allow, when not empty, lists the server's tool names (path.Match
	// patterns) that are offered; Deny lists names that never are. Deny
	// wins.
	Allow []string
	Deny  []string
	// Policy applies to every tool of the source.
	Policy policy.Config
	// Approval says which of the server's tools need approval before a
	// call runs, from their annotations: "" or "none" (none), "all",
	// "not_read_only" (every tool without readOnlyHint) or "destructive"
	// (every tool without readOnlyHint whose destructiveHint is not false).
	// Annotations are the server's own claims: trust them as much as the
	// server.
	Approval string
	// ConnectTimeout bounds connecting and listing tools; 0 means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the backoff between connection
	// attempts; zero means the defaults.
	ReconnectMin, ReconnectMax time.Duration
	// MaxTools bounds the tools read from the server; 0 means DefaultMaxTools.
	MaxTools int
	// Logger receives connection events and skipped tools; nil discards.
	Logger *slog.Logger
	// TracerProvider makes the span of each tools/call; nil means the
	// OpenTelemetry global one (which makes none unless the program set
	// one).
	TracerProvider trace.TracerProvider
	// Propagator writes the trace context into each call's _meta (and
	// HTTP headers); nil means the OpenTelemetry global one.
	Propagator propagation.TextMapPropagator

	// transport, when set (in tests), replaces Command and URL.
	transport func() sdk.Transport
}

// Validate reports a config that cannot work.
func (c *Config) Validate() error {
	if err := tools.ValidateName(c.Name); err != nil {
		return fmt.Errorf("mcp source: %w", err)
	}
	switch c.Approval {
	case "", "none", "all", "not_read_only", "destructive":
	default:
		return fmt.Errorf("mcp source %s: approval %q is unknown: use none, all, not_read_only or destructive", c.Name, c.Approval)
	}
	if strings.Contains(c.Name, ".") {
		return fmt.Errorf("mcp source %s: name must not contain dots", c.Name)
	}
	if c.transport == nil && (c.Command == "") == (c.URL == "") {
		return fmt.Errorf("mcp source %s: set either command (stdio) or url (streamable HTTP)", c.Name)
	}
	if c.URL != "" && !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
		return fmt.Errorf("mcp source %s: url %q must start with http:// or https://", c.Name, c.URL)
	}
	for _, p := range slices.Concat(c.Allow, c.Deny) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("mcp source %s: tool pattern %q is invalid: %v", c.Name, p, err)
		}
	}
	if c.ConnectTimeout < 0 || c.ReconnectMin < 0 || c.ReconnectMax < 0 || c.MaxTools < 0 || c.StopGrace < 0 {
		return fmt.Errorf("mcp source %s: timeouts and max_tools must not be negative", c.Name)
	}
	if err := c.Policy.Validate(); err != nil {
		return fmt.Errorf("mcp source %s: %w", c.Name, err)
	}
	return nil
}

// allowed reports whether the server's tool name passes the lists.
func (c *Config) allowed(name string) bool {
	for _, p := range c.Deny {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	if len(c.Allow) == 0 {
		return true
	}
	for _, p := range c.Allow {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Source is one MCP server's tools. It is safe for concurrent use.
type Source struct {
	cfg    Config
	tracer trace.Tracer
	log    *slog.Logger
	client *sdk.Client

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the run goroutine returns
	// refresh asks the run goroutine to re-read the tool list.
	refresh chan struct{}

	mu        sync.Mutex
	session   *sdk.ClientSession // nil while unavailable
	cmd       *exec.Cmd          // the stdio server of session
	listed    bool               // a tool list was read at least once
	toolList  []tools.Tool
	handlers  map[string]tools.Handler // by server tool name; kept across refreshes
	lastErr   error
	listeners []func()
	// listChanged counts notifications/tools/list_changed received.
	listChanged int
}

// Start connects to the server and reads its tools. When that fails, a
// required source returns the error; an optional one returns a Source that
// is unavailable and keeps reconnecting. ctx bounds only the first attempt;
// the source lives until Close.
func Start(ctx context.Context, cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.ReconnectMin == 0 {
		cfg.ReconnectMin = DefaultReconnectMin
	}
	if cfg.ReconnectMax == 0 {
		cfg.ReconnectMax = DefaultReconnectMax
	}
	cfg.ReconnectMax = max(cfg.ReconnectMax, cfg.ReconnectMin)
	if cfg.MaxTools == 0 {
		cfg.MaxTools = DefaultMaxTools
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.Propagator == nil {
		cfg.Propagator = otel.GetTextMapPropagator()
	}
	s := &Source{
		cfg:      cfg,
		tracer:   cfg.TracerProvider.Tracer(scopeName),
		log:      log.With("source", cfg.Name),
		done:     make(chan struct{}),
		refresh:  make(chan struct{}, 1),
		handlers: map[string]tools.Handler{},
	}
	s.client = sdk.NewClient(&sdk.Implementation{Name: "ptc", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			s.mu.Lock()
			s.listChanged++
			s.mu.Unlock()
			select {
			case s.refresh <- struct{}{}:
			default:
			}
		},
	})
	s.ctx, s.cancel = context.WithCancel(context.Background())

	sess, cmd, err := s.connect(ctx)
	if err != nil {
		if cfg.Required {
			s.cancel()
			close(s.done)
			return nil, fmt.Errorf("mcp source %s: cannot start: %w (%s)", cfg.Name, err, startHint(cfg, err))
		}
		s.log.Warn("mcp server unavailable, retrying in the background", "err", err)
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
	} else {
		s.mu.Lock()
		s.session, s.cmd = sess, cmd
		s.mu.Unlock()
	}
	// run owns the connection from here on; it returns when Close cancels
	// s.ctx, and closes s.done.
	go s.run(sess, cmd)
	return s, nil
}

// Name returns the source's name.
func (s *Source) Name() string { return s.cfg.Name }

// Tools returns a snapshot of the source's tools. Before the server's tool
// list was ever read, the exact names of the allow list are offered with a
// permissive schema, so that calls answer "unavailable" rather than
// "unknown tool".
func (s *Source) Tools() []tools.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listed {
		return slices.Clone(s.toolList)
	}
	var out []tools.Tool
	for _, name := range s.cfg.Allow {
		if strings.ContainsAny(name, `*?[\`) || !s.cfg.allowed(name) {
			continue
		}
		full := s.cfg.Name + "." + name
		if tools.ValidateName(full) != nil {
			continue
		}
		out = append(out, tools.Tool{
			Definition: tools.Definition{Name: full, Description: "(server unavailable)"},
			Handler:    s.handlerLocked(name),
		})
	}
	return out
}

// OnChange registers fn to be called, from the source's own goroutine,
// after the tool set or the availability changes. fn must not block for
// long and must not call Close.
func (s *Source) OnChange(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, fn)
}

// Available reports whether the server is connected.
func (s *Source) Available() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session != nil
}

// Err returns the last connection error, nil while connected.
func (s *Source) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return nil
	}
	return s.lastErr
}

// Close disconnects, stops the stdio server and waits for the source's
// goroutines. It is safe to call more than once.
func (s *Source) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// run keeps the source connected until s.ctx ends.
func (s *Source) run(sess *sdk.ClientSession, cmd *exec.Cmd) {
	defer close(s.done)
	delay := s.cfg.ReconnectMin
	for {
		if sess == nil {
			if !wait(s.ctx, jitter(delay)) {
				return
			}
			delay = min(delay*2, s.cfg.ReconnectMax)
			var err error
			sess, cmd, err = s.connect(s.ctx)
			if err != nil {
				if s.ctx.Err() != nil {
					return
				}
				s.log.Debug("mcp reconnect failed", "err", err)
				s.mu.Lock()
				s.lastErr = err
				s.mu.Unlock()
				continue
			}
			s.log.Info("mcp server reconnected")
		}
		delay = s.cfg.ReconnectMin
		s.serve(sess, cmd)
		sess, cmd = nil, nil
		if s.ctx.Err() != nil {
			return
		}
	}
}

// serve publishes a connected session and follows it until it ends or the
// source closes; it then closes the session and marks the source
// unavailable.
func (s *Source) serve(sess *sdk.ClientSession, cmd *exec.Cmd) {
	ended := make(chan struct{})
	// This goroutine ends when the session closes: by the server's exit, a
	// broken connection, or the sess.Close below.
	go func() {
		_ = sess.Wait()
		close(ended)
	}()
	s.mu.Lock()
	s.session, s.cmd, s.lastErr = sess, cmd, nil
	s.mu.Unlock()
	s.notify()
	for {
		select {
		case <-s.refresh:
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ConnectTimeout)
			list, err := s.listTools(ctx, sess)
			cancel()
			if err != nil {
				s.log.Warn("mcp tools/list failed", "err", err)
				continue
			}
			if s.setTools(list) {
				s.notify()
			}
			continue
		case <-ended:
			s.log.Warn("mcp server connection ended")
		case <-s.ctx.Done():
		}
		break
	}
	_ = sess.Close()
	<-ended
	s.mu.Lock()
	if s.session == sess {
		s.session, s.cmd = nil, nil
		if s.lastErr == nil {
			s.lastErr = errors.New("connection to the server ended")
		}
	}
	s.mu.Unlock()
	if s.ctx.Err() == nil {
		s.notify()
	}
}

// connect starts the transport, initialises the session and reads the
// tool list, all within ConnectTimeout.
func (s *Source) connect(ctx context.Context) (*sdk.ClientSession, *exec.Cmd, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	t, cmd := s.newTransport()
	sess, err := s.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	list, err := s.listTools(ctx, sess)
	if err != nil {
		_ = sess.Close()
		return nil, nil, fmt.Errorf("tools/list: %w", err)
	}
	s.setTools(list)
	return sess, cmd, nil
}

func (s *Source) newTransport() (sdk.Transport, *exec.Cmd) {
	if s.cfg.transport != nil {
		return requestIDTransport{s.cfg.transport()}, nil
	}
	if s.cfg.Command != "" {
		// The process is stopped by the session's Close (stdin closed, then
		// SIGTERM) and dies with ptcd (bindLifetime).
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Dir = s.cfg.Dir
		cmd.Env = childEnv(s.cfg.Env)
		cmd.Stderr = &logWriter{log: s.log}
		// Bounds Wait when the server leaves children holding stderr open.
		cmd.WaitDelay = s.cfg.StopGrace
		bindLifetime(cmd)
		return requestIDTransport{&sdk.CommandTransport{Command: cmd, TerminateDuration: s.cfg.StopGrace}}, cmd
	}
	client := s.cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	c := *client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if len(s.cfg.Headers) > 0 {
		base = &headerTransport{base: base, headers: s.cfg.Headers}
	}
	c.Transport = s.traceTransport(base)
	client = &c
	return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: client, MaxRetries: 2}, nil
}

// listTools reads the server's tools and turns them into ptc tools.
func (s *Source) listTools(ctx context.Context, sess *sdk.ClientSession) ([]tools.Tool, error) {
	var out []tools.Tool
	n := 0
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if n++; n > s.cfg.MaxTools {
			s.log.Warn("mcp server lists too many tools, ignoring the rest", "max", s.cfg.MaxTools)
			break
		}
		if t == nil || !s.cfg.allowed(t.Name) {
			continue
		}
		def, err := s.definition(t)
		if err != nil {
			s.log.Warn("mcp tool skipped", "tool", t.Name, "err", err)
			continue
		}
		if slices.ContainsFunc(out, func(o tools.Tool) bool { return o.Name == def.Name }) {
			continue
		}
		s.mu.Lock()
		h := s.handlerLocked(t.Name)
		s.mu.Unlock()
		out = append(out, tools.Tool{Definition: def, Handler: h})
	}
	slices.SortFunc(out, func(a, b tools.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// definition converts an MCP tool and checks that ptc can use it.
func (s *Source) definition(t *sdk.Tool) (tools.Definition, error) {
	def := tools.Definition{Name: s.cfg.Name + "." + t.Name, Description: t.Description, RequiresApproval: needsApproval(s.cfg.Approval, t.Annotations)}
	if def.Description == "" {
		def.Description = t.Title
	}
	var err error
	if t.InputSchema != nil {
		if def.InputSchema, err = json.Marshal(t.InputSchema); err != nil {
			return def, fmt.Errorf("input schema: %v", err)
		}
	}
	if t.OutputSchema != nil {
		if def.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
			return def, fmt.Errorf("output schema: %v", err)
		}
	}
	if err := def.Check(); err != nil {
		return def, err
	}
	return def, nil
}

// setTools stores a new tool list and reports whether it differs.
func (s *Source) setTools(list []tools.Tool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	same := s.listed && slices.EqualFunc(s.toolList, list, func(a, b tools.Tool) bool {
		return a.Name == b.Name && a.Description == b.Description &&
			string(a.InputSchema) == string(b.InputSchema) && string(a.OutputSchema) == string(b.OutputSchema)
	})
	s.toolList, s.listed = list, true
	return !same
}

func (s *Source) notify() {
	s.mu.Lock()
	fns := slices.Clone(s.listeners)
	s.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// handlerLocked returns the one handler of the server tool name, wrapped
// in the source's policy, so that call budgets and concurrency caps
// survive tool list refreshes. s.mu must be held.
func (s *Source) handlerLocked(name string) tools.Handler {
	if h, ok := s.handlers[name]; ok {
		return h
	}
	full := s.cfg.Name + "." + name
	h := policy.Wrap(tools.Tool{Definition: tools.Definition{Name: full}, Handler: func(ctx context.Context, call tools.Call) (json.RawMessage, error) {
		return s.call(ctx, name, full, call)
	}}, s.cfg.Policy).Handler
	s.handlers[name] = h
	return h
}

// call runs one tools/call.
func (s *Source) call(ctx context.Context, name, full string, call tools.Call) (json.RawMessage, error) {
	s.mu.Lock()
	sess := s.session
	s.mu.Unlock()
	if sess == nil {
		return nil, policy.MarkTransient(tools.Errorf(CodeUnavailable,
			"MCP server %s is unavailable: try again later", s.cfg.Name))
	}
	args := call.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	params := &sdk.CallToolParams{Name: name, Arguments: args, Meta: sdk.Meta{}}
	if call.IdempotencyKey != "" {
		params.Meta[MetaIdempotencyKey] = call.IdempotencyKey
	}
	ctx, span := s.startSpan(ctx, sess, name, full, params.Meta)
	if len(params.Meta) == 0 {
		params.Meta = nil
	}
	res, err := sess.CallTool(ctx, params)
	defer func() { endSpan(ctx, span, res, err) }()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var we *sdkWireError
		if errors.As(err, &we) && !isLocalWireCode(we.Code) {
			return nil, tools.Errorf(CodeProtocolError, "%s failed: %s", full, trim(we.Message))
		}
		// The connection is broken: drop it so run reconnects.
		s.log.Warn("mcp call failed, reconnecting", "tool", full, "err", err)
		_ = sess.Close()
		return nil, &policy.TransientError{Err: &unavailableError{
			tool: tools.Errorf(CodeUnavailable, "MCP server %s is unavailable: try again later", s.cfg.Name), err: err}}
	}
	return result(full, res)
}

// unavailableError keeps the transport's error as a cause while scripts see
// only the *tools.Error.
type unavailableError struct {
	tool *tools.Error
	err  error
}

func (u *unavailableError) Error() string   { return u.tool.Error() }
func (u *unavailableError) Unwrap() []error { return []error{u.tool, u.err} }

// result maps a tools/call result to JSON, or to a *tools.Error with code
// CodeToolError when the result has isError. tool names the tool in
// messages.
func result(tool string, res *sdk.CallToolResult) (json.RawMessage, error) {
	if res == nil {
		return json.RawMessage("null"), nil
	}
	if res.IsError {
		return nil, tools.Errorf(CodeToolError, "%s failed: %s", tool, trim(contentText(res.Content)))
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, tools.Errorf(CodeProtocolError, "%s answered structured content that is not JSON", tool)
		}
		return b, nil
	}
	switch {
	case len(res.Content) == 0:
		return json.RawMessage("null"), nil
	case len(res.Content) == 1:
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			txt := strings.TrimSpace(tc.Text)
			if txt != "" && json.Valid([]byte(txt)) {
				return json.RawMessage(txt), nil
			}
			b, _ := json.Marshal(tc.Text)
			return b, nil
		}
	}
	b, err := json.Marshal(struct {
		Content []sdk.Content `json:"content"`
	}{res.Content})
	if err != nil {
		return nil, tools.Errorf(CodeProtocolError, "%s answered content that cannot be encoded", tool)
	}
	return b, nil
}

// contentText joins the text blocks of an error result.
func contentText(cs []sdk.Content) string {
	var parts []string
	for _, c := range cs {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	if len(parts) == 0 {
		return "(no message)"
	}
	return strings.Join(parts, "\n")
}

// trim bounds a server-provided message.
func trim(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxErrorMessageBytes {
		return s
	}
	s = s[:MaxErrorMessageBytes]
	return strings.ToValidUTF8(s, "") + "…"
}

// childEnv is the environment of a stdio server: a few variables a command
// needs to run, plus the configured ones.
func childEnv(extra map[string]string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			if _, override := extra[k]; !override {
				env = append(env, k+"="+v)
			}
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// logWriter logs a stdio server's stderr, a bounded line at a time.
type logWriter struct{ log *slog.Logger }

func (w *logWriter) Write(p []byte) (int, error) {
	msg := string(p)
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	w.log.Debug("mcp server stderr", "text", strings.TrimSpace(strings.ToValidUTF8(msg, "\uFFFD")))
	return len(p), nil
}

var _ io.Writer = (*logWriter)(nil)

// wait waits d or until ctx ends; it reports whether d passed.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// jitter returns a duration in [d/2, d].
func jitter(d time.Duration) time.Duration { return d/2 + rand.N(d/2+1) }

// needsApproval applies an approval policy to a tool's annotations.
func needsApproval(policy string, a *sdk.ToolAnnotations) bool {
	readOnly := a != nil && a.ReadOnlyHint
	switch policy {
	case "all":
		return true
	case "not_read_only":
		return !readOnly
	case "destructive":
		return !readOnly && (a == nil || a.DestructiveHint == nil || *a.DestructiveHint)
	}
	return false
}

// startHint says what to do about a server that could not start: for a
// stdio command that does not exist, where a relative one was looked for.
func startHint(cfg Config, err error) string {
	if cfg.Command == "" || !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound)) {
		return "fix the server or set required: false"
	}
	if filepath.IsAbs(cfg.Command) {
		return "check the command's path"
	}
	if !strings.ContainsRune(cfg.Command, filepath.Separator) {
		return "install the command or put its directory on PATH"
	}
	wd := cfg.Dir
	if wd == "" {
		wd, _ = os.Getwd()
	}
	return fmt.Sprintf("a relative command is looked for from the working directory, %s, not from the configuration file's directory: "+
		"start ptc where the configuration expects, set the working directory in the MCP client's entry for the server (cwd), "+
		"or give the source an absolute command or a dir", wd)
}
