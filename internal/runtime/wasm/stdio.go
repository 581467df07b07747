package wasm

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ptcrun/ptc/internal/runtime"
)

// errOutputFull is what a guest's write to stdout gets once the result is
// over the output limit (the guest sees EIO).
var errOutputFull = errors.New("stdout is over the output limit")

// outputWriter collects stdout up to max bytes. The first write past max
// calls onFull once (which ends the execution) and fails.
type outputWriter struct {
	max    int
	onFull func()
	// trap stops the guest when it passes max (a trap from the write):
	// without loop checks (Config.NoLoopChecks) a cancelled context does
	// not stop it, and a guest that ignores failed writes would write on
	// until its deadline.
	trap bool

	mu   sync.Mutex
	buf  bytes.Buffer
	full bool
	// attempted counts every byte the guest wrote or tried to write.
	attempted int64
	// limit is the output limit proper (max less the slack for
	// whitespace); over is attempted after the first write that took it
	// past limit (0 while it has not): the observed value of a breach.
	limit int64
	over  int64
}

// Write implements io.Writer.
func (w *outputWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.attempted += int64(len(p))
	if w.over == 0 && w.attempted > w.limit {
		w.over = w.attempted
	}
	if w.full {
		return 0, errOutputFull
	}
	if w.buf.Len()+len(p) > w.max {
		w.full = true
		if w.onFull != nil {
			w.onFull()
		}
		if w.trap {
			trapf("the module wrote more than %d bytes to stdout", w.max)
		}
		return 0, errOutputFull
	}
	w.buf.Write(p)
	return len(p), nil
}

// written returns the bytes the guest wrote or tried to write to stdout,
// up to the write that first took them past the limit: what a breach
// observed.
func (w *outputWriter) written() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over > 0 {
		return w.over
	}
	return w.attempted
}

func (w *outputWriter) result() ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Bytes(), w.full
}

// tailBytes is how much of the end of stderr a failure message quotes.
const tailBytes = 512

// maxLineBytes bounds the part of a log line held while waiting for its
// newline; a longer line is emitted in pieces.
const maxLineBytes = 64 << 10

// logWriter turns stderr into log entries, one per line, and keeps the last
// tailBytes of stderr for failure messages. Writes never fail: once the log
// buffer is full the rest is dropped (and the buffer marked truncated).
// Every line is an entry that costs its overhead against the log limits, so
// a flood of empty lines fills them like any other output.
type logWriter struct {
	logs *runtime.LogBuffer

	mu      sync.Mutex
	pending []byte
	tail    []byte
	// crash is the last "panic: ..." or "fatal error: ..." line, which a Go
	// guest prints before its stack dump.
	crash string
}

// Write implements io.Writer.
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keepTail(p)
	if w.logs.Full() {
		// The logs are at their cap: nothing more is kept, so a flood of
		// newlines costs no splitting either.
		w.pending = w.pending[:0]
		return len(p), nil
	}
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			room := maxLineBytes - len(w.pending)
			if len(rest) < room {
				w.pending = append(w.pending, rest...)
				break
			}
			w.pending = append(w.pending, rest[:room]...)
			rest = rest[room:]
			w.emit()
			continue
		}
		w.pending = append(w.pending, rest[:i]...)
		rest = rest[i+1:]
		w.emit()
	}
	return len(p), nil
}

func (w *logWriter) emit() {
	line := bytes.TrimRight(w.pending, "\r")
	if bytes.HasPrefix(line, []byte("panic: ")) || bytes.HasPrefix(line, []byte("fatal error: ")) {
		w.crash = validText(cutBytes(line, tailBytes))
	}
	// A line is text: bytes that are not valid UTF-8 are logged as U+FFFD
	// rather than dropped (a log message crosses gRPC as a string).
	w.logs.Write("log", validText(line))
	w.pending = w.pending[:0]
}

// flush emits a last line that had no newline.
func (w *logWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) > 0 {
		w.emit()
	}
}

func (w *logWriter) keepTail(p []byte) {
	if len(p) >= tailBytes {
		w.tail = append(w.tail[:0], p[len(p)-tailBytes:]...)
		return
	}
	if over := len(w.tail) + len(p) - tailBytes; over > 0 {
		w.tail = append(w.tail[:0], w.tail[over:]...)
	}
	w.tail = append(w.tail, p...)
}

// cutBytes returns at most n bytes of b without splitting a UTF-8 sequence.
func cutBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && b[n]&0xC0 == 0x80 {
		n--
	}
	return b[:n]
}

// tailText returns what a failure message should quote of stderr: a Go
// guest's panic line if there was one, else the end of stderr, trimmed.
func (w *logWriter) tailText() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.crash != "" {
		return w.crash
	}
	t := bytes.TrimSpace(w.tail)
	// Do not start in the middle of a UTF-8 sequence.
	for len(t) > 0 && t[0]&0xC0 == 0x80 {
		t = t[1:]
	}
	return validText(t)
}

// validText returns b as a string with each run of bytes that is not valid
// UTF-8 replaced by U+FFFD.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// setLogs sends the lines written from now on to logs: an instance
// started ahead of its job gets the job's logs when the job begins.
func (w *logWriter) setLogs(logs *runtime.LogBuffer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.logs = logs
}
