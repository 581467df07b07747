package adversarial

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"sync"
)

// logTail keeps the last bytes of ptcd's standard error.
type logTail struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total int64 // bytes ever written
}

func newLogTail(max int) *logTail { return &logTail{max: max} }

// consume reads r line by line until EOF, sending the listen address
// from the "ptcd listening" record to ready.
func (l *logTail) consume(r io.Reader, ready chan<- string) {
	br := bufio.NewReaderSize(r, 64<<10)
	sent := false
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if !sent && strings.Contains(string(line), `"ptcd listening"`) {
				var rec struct{ Addr string }
				if json.Unmarshal(line, &rec) == nil && rec.Addr != "" {
					ready <- rec.Addr
					sent = true
				}
			}
			l.write(line)
		}
		if err != nil {
			return
		}
	}
}

func (l *logTail) write(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total += int64(len(p))
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - l.max; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
}

// mark returns a position for since.
func (l *logTail) mark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// since returns what was logged after mark (as much as is kept).
func (l *logTail) since(mark int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.total - mark
	if n > int64(len(l.buf)) {
		n = int64(len(l.buf))
	}
	return string(l.buf[int64(len(l.buf))-n:])
}

// crashSummary picks from a log what says why a process died: the lines
// around Go's "fatal error:" or "panic:" and the first goroutine's stack
// head, else the last lines.
func crashSummary(log string) string {
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "runtime: ") {
			end := min(i+16, len(lines))
			return strings.Join(lines[i:end], "\n")
		}
	}
	return strings.Join(lines[max(0, len(lines)-12):], "\n")
}
