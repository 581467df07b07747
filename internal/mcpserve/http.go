package mcpserve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/logsample"
)

// The rate of the records of refused requests: at most refusedPerSecond
// a second on average, refusedBurst at once.
const (
	refusedPerSecond = 10
	refusedBurst     = 50
)

// Defaults of an HTTPConfig.
const (
	// DefaultSessionTimeout closes a session that sent nothing for this
	// long (its client starts a new one).
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxBodyBytes bounds one HTTP request: the largest code (1 MiB,
	// up to 6 MiB once escaped in JSON) and the largest input (8 MiB).
	DefaultMaxBodyBytes = 16 << 20
	// DefaultMaxOpenBodyBytes bounds a request that opens a session (it
	// has no session id): an initialize, whose parameters — the client's
	// name and capabilities — are small, and which the session keeps for
	// its whole life.
	DefaultMaxOpenBodyBytes = 64 << 10
	// DefaultMaxSessionsPerCaller bounds the open sessions of one caller
	// identity (a tenant).
	DefaultMaxSessionsPerCaller = 100
	// DefaultMaxSessions bounds the open sessions of all callers.
	DefaultMaxSessions = 1000
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
	// MaxOpenBodyBytes bounds the body of a request without a session id
	// (one that opens a session; 413 beyond); zero means
	// DefaultMaxOpenBodyBytes.
	MaxOpenBodyBytes int64
	// MaxSessionsPerCaller bounds the open sessions of one caller: a new
	// one beyond is refused (429); zero means DefaultMaxSessionsPerCaller.
	MaxSessionsPerCaller int
	// MaxSessions bounds the open sessions of all callers: a new one
	// beyond is refused (503); zero means DefaultMaxSessions.
	MaxSessions int
	// BodyReadTimeout bounds the reading of one request body (408 and the
	// connection closed beyond); zero means DefaultBodyReadTimeout.
	BodyReadTimeout time.Duration
	// MaxBodyBytesInFlight bounds the request-body bytes held at once by
	// all requests, from their first byte until the request ends; a
	// request that would pass it is refused (503 with Retry-After, the
	// connection closed). Zero means DefaultMaxBodyBytesInFlight; it is
	// raised to MaxBodyBytes when below.
	MaxBodyBytesInFlight int64
	// WriteTimeout bounds each write of a response to a client that does
	// not read it; zero means DefaultWriteTimeout.
	WriteTimeout time.Duration
}

type callerKey struct{}

// sessionHeader is the streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// Handler returns the streamable HTTP handler (the MCP endpoint): every
// request authenticates; a request that opens a session is bounded by
// MaxOpenBodyBytes and refused past the session caps (429 for the
// caller's, 503 for the server's); a request that carries a session id must come
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
	if hc.MaxOpenBodyBytes <= 0 {
		hc.MaxOpenBodyBytes = DefaultMaxOpenBodyBytes
	}
	if hc.MaxSessionsPerCaller <= 0 {
		hc.MaxSessionsPerCaller = DefaultMaxSessionsPerCaller
	}
	if hc.MaxSessions <= 0 {
		hc.MaxSessions = DefaultMaxSessions
	}
	if hc.BodyReadTimeout <= 0 {
		hc.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if hc.MaxBodyBytesInFlight <= 0 {
		hc.MaxBodyBytesInFlight = DefaultMaxBodyBytesInFlight
	}
	hc.MaxBodyBytesInFlight = max(hc.MaxBodyBytesInFlight, hc.MaxBodyBytes+1, hc.MaxOpenBodyBytes+1)
	if hc.WriteTimeout <= 0 {
		hc.WriteTimeout = DefaultWriteTimeout
	}
	bodies := &bodyReader{budget: newBodyBudget(hc.MaxBodyBytesInFlight), timeout: hc.BodyReadTimeout}
	s.bodies = bodies.budget
	gate := &sessionGate{perCaller: hc.MaxSessionsPerCaller, total: hc.MaxSessions, timeout: hc.SessionTimeout, opening: map[string]int{}}
	inner := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		c, ok := r.Context().Value(callerKey{}).(Caller)
		if !ok {
			return nil
		}
		return s.serverFor(c).mcp
	}, &sdk.StreamableHTTPOptions{SessionTimeout: hc.SessionTimeout, MaxRequestBodyBytes: hc.MaxBodyBytes, Logger: s.log})
	// A caller decides how many requests are refused: their records are
	// sampled, the next one written counting those left out.
	refused := logsample.New(refusedPerSecond, refusedBurst)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The headers that carry what the tracing middleware needs are
		// the handler's own.
		r.Header.Del(requestIDHeader)
		r.Header.Set(transportHeader, "tcp")
		c, err := hc.Authenticate(r)
		if err != nil {
			if write, suppressed := refused.Allow(); write {
				s.log.LogAttrs(r.Context(), slog.LevelWarn, "mcp request refused: authentication failed",
					slog.String("remote", r.RemoteAddr), slog.String("err", err.Error()), slog.Int64("suppressed", suppressed))
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="ptc"`)
			// The connection ends with the answer: a caller without
			// credentials cannot keep it open.
			w.Header().Set("Connection", "close")
			http.Error(w, "unauthenticated: "+err.Error(), http.StatusUnauthorized)
			return
		}
		id := r.Header.Get(sessionHeader)
		if id != "" && !strings.HasPrefix(id, sessionTag(c.Key)) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		w = newDeadlineWriter(w, hc.WriteTimeout)
		if r.Method == http.MethodPost {
			// The body is read here, whole, under a deadline, a size
			// bound and the server-wide budget, before the MCP layer
			// decodes it.
			limit, tooLarge := hc.MaxBodyBytes, fmt.Sprintf("a request on an MCP session is limited to %d bytes: send a shorter program or input", hc.MaxBodyBytes)
			if id == "" {
				// A request that opens a session: small.
				limit, tooLarge = hc.MaxOpenBodyBytes, fmt.Sprintf("a request that opens an MCP session (no Mcp-Session-Id) is limited to %d bytes: initialize with a shorter client name and capabilities", hc.MaxOpenBodyBytes)
			}
			body, release, berr := bodies.read(w, r, limit, tooLarge)
			defer release()
			if berr != nil {
				s.log.LogAttrs(r.Context(), slog.LevelWarn, "mcp request refused: its body could not be read",
					slog.String("caller", c.Key), slog.String("remote", r.RemoteAddr), slog.Int("status", berr.status))
				writeRefusal(w, berr)
				return
			}
			if batchLen(body) > maxBatchMessages {
				writeRefusal(w, &bodyError{status: http.StatusBadRequest, code: codeInvalidRequest, msg: msgBatchTooLong})
				return
			}
			// Messages that name a member twice are not read as the
			// SDK would (the last one wins): an answer becomes an error
			// answer (an approval is denied), anything else is refused.
			body, refuse := screenBody(body)
			if refuse {
				writeRefusal(w, &bodyError{status: http.StatusBadRequest, code: codeInvalidRequest, msg: msgAmbiguousRequest})
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			if s.cfg.Tracing.Enabled() {
				if id := bodyRequestID(body); id != "" {
					r.Header.Set(requestIDHeader, id)
				}
			}
		}
		if id == "" && r.Method == http.MethodPost {
			// A request that opens a session: within the caps.
			done, ok := s.admit(gate, w, c)
			if !ok {
				s.log.LogAttrs(r.Context(), slog.LevelWarn, "mcp session refused: too many open sessions",
					slog.String("caller", c.Key), slog.String("remote", r.RemoteAddr))
				return
			}
			// The reservation ends when the response starts: the
			// session it opened is among the server's sessions by
			// then, and a client that opens its next session as soon
			// as it reads this answer must not find this one counted
			// twice (once opening, once open).
			rw := &releasingWriter{ResponseWriter: w, release: sync.OnceFunc(done)}
			defer rw.release()
			w = rw
		}
		if r.Method != http.MethodGet {
			// A drain waits for these (a call's answer is written before
			// its POST ends), not for event streams, which last.
			s.beginPost()
			defer s.endPost()
		}
		// What the SDK writes is classified: none of its Go error text
		// reaches the client.
		w = &classifyingWriter{ResponseWriter: w}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
	return http.NewCrossOriginProtection().Handler(h)
}

// releasingWriter calls release when its response starts (the header or
// the first bytes are written, or it is flushed).
type releasingWriter struct {
	http.ResponseWriter
	release func()
}

func (w *releasingWriter) WriteHeader(code int) {
	w.release()
	w.ResponseWriter.WriteHeader(code)
}

func (w *releasingWriter) Write(b []byte) (int, error) {
	w.release()
	return w.ResponseWriter.Write(b)
}

// Flush keeps event streams working through the wrapper.
func (w *releasingWriter) Flush() {
	w.release()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *releasingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
