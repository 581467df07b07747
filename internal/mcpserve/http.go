package mcpserve

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of an HTTPConfig.
const (
	// DefaultSessionTimeout closes a session that sent nothing for this
	// long (its client starts a new one).
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxBodyBytes bounds one HTTP request: the largest code (1 MiB,
	// up to 6 MiB once escaped in JSON) and the largest input (8 MiB).
	DefaultMaxBodyBytes = 16 << 20
)

// HTTPConfig configures the streamable HTTP handler.
type HTTPConfig struct {
	// Authenticate identifies the caller of every request; its error
	// answers 401 with the error's message. Required.
	Authenticate func(r *http.Request) (Caller, error)
	// SessionTimeout closes sessions idle this long; zero means
	// DefaultSessionTimeout.
	SessionTimeout time.Duration
	// MaxBodyBytes bounds a request body (413 beyond); zero means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

type callerKey struct{}

// sessionHeader is the streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// Handler returns the streamable HTTP handler (the MCP endpoint): every
// request authenticates; a request that carries a session id must come
// from the identity that opened the session (else 404, as for a session
// that ended, and the client starts a new one); browsers' cross-origin
// requests are refused.
func (s *Server) Handler(hc HTTPConfig) http.Handler {
	if hc.Authenticate == nil {
		panic("mcpserve: HTTPConfig.Authenticate is required")
	}
	if hc.SessionTimeout <= 0 {
		hc.SessionTimeout = DefaultSessionTimeout
	}
	if hc.MaxBodyBytes <= 0 {
		hc.MaxBodyBytes = DefaultMaxBodyBytes
	}
	inner := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		c, ok := r.Context().Value(callerKey{}).(Caller)
		if !ok {
			return nil
		}
		return s.serverFor(c).mcp
	}, &sdk.StreamableHTTPOptions{SessionTimeout: hc.SessionTimeout, MaxRequestBodyBytes: hc.MaxBodyBytes, Logger: s.log})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := hc.Authenticate(r)
		if err != nil {
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "mcp request refused: authentication failed",
				slog.String("remote", r.RemoteAddr), slog.String("err", err.Error()))
			w.Header().Set("WWW-Authenticate", `Bearer realm="ptc"`)
			http.Error(w, "unauthenticated: "+err.Error(), http.StatusUnauthorized)
			return
		}
		if id := r.Header.Get(sessionHeader); id != "" && !strings.HasPrefix(id, sessionTag(c.Key)) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet {
			// A drain waits for these (a call's answer is written before
			// its POST ends), not for event streams, which last.
			s.beginPost()
			defer s.endPost()
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
	return http.NewCrossOriginProtection().Handler(h)
}
