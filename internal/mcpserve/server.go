package mcpserve

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/telemetry"
)

// Backend runs executions and answers tool queries for the caller the
// context carries (ptcd's tenant; nothing for a local or remote runner).
type Backend interface {
	// Tools answers a tool query with the tools the caller may use.
	Tools(ctx context.Context, q core.ToolQuery) (*core.ToolList, *fault.Error)
	// Run runs one request; a request that cannot run is a *fault.Error
	// with a Code, a program that fails is a Result with Error set.
	Run(ctx context.Context, req core.Request) (*core.Result, *fault.Error)
}

// Defaults of a Config.
const (
	// DefaultDescriptionBytes bounds the tool declarations in execute's
	// description: about 4,300 tokens, the compact declarations of some
	// 25 to 45 tools (see docs/RATIONALE.md). Past it the description
	// names the tools and points to search.
	DefaultDescriptionBytes = 16 << 10
	// DefaultMaxCodeBytes bounds the code argument, as the executor bounds
	// a script's source by default.
	DefaultMaxCodeBytes = 1 << 20
	// MaxSearchResults bounds the tools one search returns.
	MaxSearchResults = 50
	// DefaultSearchResults is how many tools a search returns when the
	// call does not say.
	DefaultSearchResults = 10
	// MaxSearchBytes bounds the declarations one search returns; the least
	// relevant matches are left out to stay under it.
	MaxSearchBytes = 64 << 10
)

// Config configures a Server.
type Config struct {
	// Backend runs the executions. Required.
	Backend Backend
	// Version is the server version reported at initialization.
	Version string
	// DescriptionBytes bounds the declarations in execute's description;
	// zero means DefaultDescriptionBytes, negative means never include
	// them (always point to search).
	DescriptionBytes int
	// MaxCodeBytes bounds the code argument; zero means
	// DefaultMaxCodeBytes. Keep it at the backend's source bound or below.
	MaxCodeBytes int
	// Limit, when set, is asked before each tool call with the caller's
	// context (ptcd: the tenant's request rate); its error refuses the
	// call.
	Limit func(ctx context.Context) error
	// Logger receives one record per tool call and the server's problems;
	// nil discards.
	Logger *slog.Logger
	// Tracing makes a SERVER span of each request a session receives,
	// the parent of what the request does (for execute: the admission
	// wait, the execution, its tool calls), in the caller's trace when
	// it sends one (params._meta or the HTTP traceparent header). The zero
	// value traces nothing.
	Tracing telemetry.Tracing
}

// Caller is who an MCP session serves: Key names the identity (a tenant),
// and Bind adds it to the context of each of its calls (for the Backend).
type Caller struct {
	Key  string
	Bind func(context.Context) context.Context
}

// localCaller is the one caller of a stdio server.
var localCaller = Caller{Key: "local", Bind: func(ctx context.Context) context.Context { return ctx }}

// ErrDraining refuses executions once Drain has started.
var ErrDraining = errors.New("the server is shutting down: retry on another replica or after it restarts")

// Server serves ptc's search and execute tools over MCP, one MCP server
// per caller identity. Create it with New; it is safe for concurrent use.
type Server struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	byCaller map[string]*callerServer
	draining bool
	// running counts tool calls in progress, posts HTTP requests other
	// than event streams (a call's answer is written before its POST
	// ends).
	running, posts int
	idle           chan struct{} // closed when draining and both are 0
	// bodies counts the request bodies the HTTP handler holds (set by
	// Handler).
	bodies *bodyBudget
}

// callerServer is the MCP server of one caller and the descriptions its
// tools were last added with.
type callerServer struct {
	once           sync.Once // the first describe
	caller         Caller
	mcp            *sdk.Server
	execDesc       string
	searchDesc     string
	sessionTag     string
	describedTools int
	// stale: the last describe could not list the tools; calls retry it.
	stale bool
}

// New returns a Server over cfg.Backend.
func New(cfg Config) *Server {
	if cfg.Backend == nil {
		panic("mcpserve: Config.Backend is required")
	}
	if cfg.DescriptionBytes == 0 {
		cfg.DescriptionBytes = DefaultDescriptionBytes
	}
	if cfg.MaxCodeBytes <= 0 {
		cfg.MaxCodeBytes = DefaultMaxCodeBytes
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, log: log, byCaller: map[string]*callerServer{}}
}

// Run serves one MCP session over t (stdio for `ptc mcp`) until the
// client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	return s.serverFor(localCaller).mcp.Run(ctx, strictTransport{t})
}

// serverFor returns the caller's MCP server, creating it on first use.
func (s *Server) serverFor(c Caller) *callerServer {
	s.mu.Lock()
	cs, ok := s.byCaller[c.Key]
	if !ok {
		cs = &callerServer{caller: c, sessionTag: sessionTag(c.Key)}
		cs.mcp = sdk.NewServer(&sdk.Implementation{Name: "ptc", Title: "ptc: programmatic tool calling", Version: s.cfg.Version},
			&sdk.ServerOptions{
				Instructions: instructions,
				Logger:       s.log,
				// Tools only: no logging capability (ptc sends no log
				// messages; console output travels in _meta).
				Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
				// Sessions speak the handshake revisions of the protocol,
				// where a server may ask the client mid-call (elicitation)
				// and report progress; see docs/RATIONALE.md.
				SupportedProtocolVersions: protocolVersions,
				GetSessionID:              func() string { return cs.sessionTag + newSessionID() },
				// Each caller sees its own tools: lists are private.
				SetCacheable: func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) { c.CacheScope = "private" },
			})
		if s.cfg.Tracing.Enabled() {
			cs.mcp.AddReceivingMiddleware(s.traced)
		}
		s.byCaller[c.Key] = cs
	}
	s.mu.Unlock()
	cs.once.Do(func() { s.describe(cs) })
	return cs
}

// Refresh re-reads every caller's tools and updates the descriptions of
// search and execute where they changed; sessions are told with
// notifications/tools/list_changed. Call it when the backend's tools
// change (a tool source reconnected or listed new tools).
func (s *Server) Refresh() {
	s.mu.Lock()
	all := make([]*callerServer, 0, len(s.byCaller))
	for _, cs := range s.byCaller {
		all = append(all, cs)
	}
	s.mu.Unlock()
	for _, cs := range all {
		s.describe(cs)
	}
}

// describe (re)adds the caller's tools with descriptions of its current
// tool set, when they changed.
func (s *Server) describe(cs *callerServer) {
	d := s.descriptions(cs.caller.Bind(context.Background()))
	s.mu.Lock()
	changed := d.execute != cs.execDesc || d.search != cs.searchDesc
	cs.execDesc, cs.searchDesc, cs.describedTools, cs.stale = d.execute, d.search, d.tools, d.failed
	s.mu.Unlock()
	if !changed {
		return
	}
	cs.mcp.AddTool(searchTool(d.search), s.searchHandler(cs))
	cs.mcp.AddTool(executeTool(d.execute), s.executeHandler(cs))
}

// redescribeIfStale retries the descriptions of a caller whose tools could
// not be listed (a remote ptcd that was down); sessions are told when they
// change.
func (s *Server) redescribeIfStale(cs *callerServer) {
	s.mu.Lock()
	stale := cs.stale
	s.mu.Unlock()
	if stale {
		s.describe(cs)
	}
}

// begin registers a running tool call; it fails once draining.
func (s *Server) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return ErrDraining
	}
	s.running++
	return nil
}

// end unregisters a tool call begun with begin.
func (s *Server) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	s.checkIdle()
}

// beginPost and endPost count an HTTP request other than an event stream.
func (s *Server) beginPost() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posts++
}

func (s *Server) endPost() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posts--
	s.checkIdle()
}

// checkIdle ends a drain when nothing runs; s.mu is held.
func (s *Server) checkIdle() {
	if s.draining && s.running == 0 && s.posts == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// Drain refuses new tool calls (they answer isError with ErrDraining's
// message) and waits until the running ones have ended and their answers
// are written (every HTTP request but event streams is over), or ctx is
// done. It is the first step of a graceful shutdown; closing the HTTP
// server (or ending Run's context), then CloseSessions, are the next.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	if s.running == 0 && s.posts == 0 {
		s.mu.Unlock()
		return nil
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CloseSessions ends every open session (their clients must start new
// ones): the end of a shutdown, after Drain and once the HTTP server is
// closed, so that no session outlives its transport.
func (s *Server) CloseSessions() {
	s.mu.Lock()
	all := make([]*callerServer, 0, len(s.byCaller))
	for _, cs := range s.byCaller {
		all = append(all, cs)
	}
	s.mu.Unlock()
	for _, cs := range all {
		for ss := range cs.mcp.Sessions() {
			_ = ss.Close()
		}
	}
}

// Running returns the number of tool calls in progress.
func (s *Server) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}
