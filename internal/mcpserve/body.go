package mcpserve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Defaults of the HTTP handler's bounds on reading and writing.
const (
	// DefaultBodyReadTimeout bounds the reading of one request body, from
	// the end of its headers to its last byte.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultMaxBodyBytesInFlight bounds the request-body bytes the
	// handler holds at once, over all requests: four bodies of the
	// largest size.
	DefaultMaxBodyBytesInFlight = 4 * DefaultMaxBodyBytes
	// DefaultWriteTimeout bounds one write of a response (a JSON answer,
	// or one event of an event stream) to a client that does not read.
	DefaultWriteTimeout = 30 * time.Second
)

// readChunk is the most a body read reserves at once when its length is
// not announced (chunked, HTTP/2 without content-length).
const readChunk = 32 << 10

// bodyBudget counts the request-body bytes held by all requests; a read
// that would pass max is refused.
type bodyBudget struct {
	max int64

	mu   sync.Mutex
	used int64
	// changed is broadcast at each change of used (tests wait on it).
	changed *sync.Cond
}

func newBodyBudget(max int64) *bodyBudget {
	b := &bodyBudget{max: max}
	b.changed = sync.NewCond(&b.mu)
	return b
}

// take reserves n bytes; false when that would pass the bound.
func (b *bodyBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	b.changed.Broadcast()
	return true
}

// give returns n reserved bytes.
func (b *bodyBudget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.changed.Broadcast()
}

// waitFor waits until ok(used) holds.
func (b *bodyBudget) waitFor(ok func(used int64) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for !ok(b.used) {
		b.changed.Wait()
	}
}

// bodyError is a request body that could not be read: the HTTP status and
// the message of the JSON-RPC error that answers it.
type bodyError struct {
	status int
	// code is the JSON-RPC error code; 0 means codeRequestRefused.
	code int
	msg  string
	// retry is the Retry-After of a refusal for want of room; 0 for none.
	retry int
	// close ends the connection with the answer (its body was not read
	// to the end).
	close bool
}

// JSON-RPC error codes of refused HTTP requests (the implementation-defined
// server error range).
const (
	codeRequestRefused = -32000
)

// writeRefusal answers a request the handler refuses before the MCP layer
// sees it: status, and a JSON-RPC error (id null: the request was not
// read) whose message says what to change.
func writeRefusal(w http.ResponseWriter, e *bodyError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.retry > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retry))
	}
	if e.close {
		h.Set("Connection", "close")
	}
	code := e.code
	if code == 0 {
		code = codeRequestRefused
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": e.msg}})
	w.WriteHeader(e.status)
	_, _ = w.Write(append(b, '\n'))
}

// bodyReader reads request bodies under a deadline, a size bound and the
// server-wide budget.
type bodyReader struct {
	budget  *bodyBudget
	timeout time.Duration
}

// read reads r's body whole, at most limit bytes (tooLarge says what to do
// past it), within br.timeout of its start, reserving what it holds in
// the budget. release gives the reservation back; call it once the
// request is over (the body, decoded, lives as long as it). The read
// deadline is cleared at the end of the body, so that a response that
// lasts (an event stream) is not cut by it.
func (br *bodyReader) read(w http.ResponseWriter, r *http.Request, limit int64, tooLarge string) (body []byte, release func(), e *bodyError) {
	rc := http.NewResponseController(w)
	deadline := true
	if err := rc.SetReadDeadline(time.Now().Add(br.timeout)); err != nil {
		// A writer without deadlines (a test recorder) reads without one.
		deadline = false
	}
	var held int64
	release = func() { br.budget.give(held) }
	full := func() *bodyError {
		return &bodyError{status: http.StatusServiceUnavailable, retry: 1, close: true, msg: fmt.Sprintf(
			"the server holds too many request bodies being received (%d bytes in all, mcp.max_body_bytes_in_flight): retry shortly", br.budget.max)}
	}
	if r.ContentLength > limit {
		return nil, release, &bodyError{status: http.StatusRequestEntityTooLarge, close: true, msg: tooLarge}
	}
	// Room for the announced length at once; otherwise chunk by chunk.
	grow := int64(readChunk)
	if r.ContentLength >= 0 {
		grow = r.ContentLength + 1 // +1: the read that sees the end
	}
	buf := make([]byte, 0)
	for {
		if len(buf) == cap(buf) {
			n := min(max(grow, int64(cap(buf))), limit+1-int64(cap(buf)))
			if n <= 0 {
				return nil, release, &bodyError{status: http.StatusRequestEntityTooLarge, close: true, msg: tooLarge}
			}
			if !br.budget.take(n) {
				return nil, release, full()
			}
			held += n
			next := make([]byte, len(buf), int64(cap(buf))+n)
			copy(next, buf)
			buf = next
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, release, &bodyError{status: http.StatusRequestEntityTooLarge, close: true, msg: tooLarge}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var ne net.Error
			if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
				return nil, release, &bodyError{status: http.StatusRequestTimeout, close: true, msg: fmt.Sprintf(
					"the request body did not arrive within %s (mcp.body_read_timeout): send it at once", br.timeout)}
			}
			return nil, release, &bodyError{status: http.StatusBadRequest, close: true, msg: "the request body could not be read: the connection failed while sending it"}
		}
	}
	if deadline {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return buf, release, nil
}

// deadlineWriter bounds each write and flush of a response by timeout: a
// client that stops reading fails the write after timeout instead of
// holding the response (and what it carries) forever. Between writes no
// deadline is set, so that an event stream may stay quiet for long.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func newDeadlineWriter(w http.ResponseWriter, timeout time.Duration) *deadlineWriter {
	return &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}
}

// bounded runs f under the write deadline.
func (w *deadlineWriter) bounded(f func() error) error {
	set := w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) == nil
	err := f()
	if set {
		_ = w.rc.SetWriteDeadline(time.Time{})
	}
	return err
}

func (w *deadlineWriter) Write(b []byte) (n int, err error) {
	err = w.bounded(func() error {
		n, err = w.ResponseWriter.Write(b)
		return err
	})
	return n, err
}

// FlushError flushes under the deadline (http.ResponseController's Flush
// ends here).
func (w *deadlineWriter) FlushError() error {
	return w.bounded(func() error { return http.NewResponseController(w.ResponseWriter).Flush() })
}

// Flush keeps event streams working for callers that assert http.Flusher.
func (w *deadlineWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
