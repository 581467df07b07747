// Package policy wraps a tool handler with an operator's per-tool policy: a
// timeout per attempt, retries with exponential backoff and jitter for
// transient failures only, a maximum number of calls per execution, and a
// concurrency cap shared by every execution that calls the tool.
//
// It works for every tool source (Go functions, MCP servers, HTTP
// endpoints). Sources mark a failure as worth retrying with MarkTransient;
// everything else (a *tools.Error such as a 4xx answer, a schema problem) is
// returned at once.
//
// Package policy imports only package tools.
package policy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/ptcrun/ptc/tools"
)

// Defaults of a Config's zero fields.
const (
	// DefaultBackoffBase and DefaultBackoffMax bound the backoff between
	// retries.
	DefaultBackoffBase = 100 * time.Millisecond
	DefaultBackoffMax  = 5 * time.Second
	// DefaultMaxExecutions is how many executions a wrapper tracks for
	// MaxCallsPerExecution before it forgets the oldest.
	DefaultMaxExecutions = 4096
)

// Config is the policy of one tool. The zero value adds nothing: no
// timeout, no retries, no call budget, no concurrency cap.
type Config struct {
	// Timeout bounds one attempt of the call; 0 means no bound beyond the
	// caller's context.
	Timeout time.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Retries is how many times a transient failure is retried (0: never).
	Retries int `yaml:"retries,omitempty" json:"retries,omitempty"`
	// BackoffBase is the delay before the first retry; each further retry
	// doubles it, up to BackoffMax. Zero means DefaultBackoffBase.
	BackoffBase time.Duration `yaml:"backoff_base,omitempty" json:"backoff_base,omitempty"`
	// BackoffMax caps the delay between retries. Zero means DefaultBackoffMax.
	BackoffMax time.Duration `yaml:"backoff_max,omitempty" json:"backoff_max,omitempty"`
	// MaxCallsPerExecution bounds the calls one execution (Call.ExecutionID)
	// may make to the tool; 0 means no bound.
	MaxCallsPerExecution int `yaml:"max_calls_per_execution,omitempty" json:"max_calls_per_execution,omitempty"`
	// MaxConcurrent bounds the calls of the tool in flight at once, across
	// all executions; further calls wait (honouring their context). 0 means
	// no bound.
	MaxConcurrent int `yaml:"max_concurrent,omitempty" json:"max_concurrent,omitempty"`
	// MaxExecutions bounds how many executions are tracked for
	// MaxCallsPerExecution; the oldest is forgotten beyond it. Zero means
	// DefaultMaxExecutions.
	MaxExecutions int `yaml:"-" json:"-"`
}

// Validate reports negative fields.
func (c Config) Validate() error {
	switch {
	case c.Timeout < 0:
		return errors.New("policy timeout is negative: use 0 for none or a positive duration")
	case c.Retries < 0:
		return errors.New("policy retries is negative: use 0 for none")
	case c.Retries > 20:
		return errors.New("policy retries is above 20: use a smaller number")
	case c.BackoffBase < 0 || c.BackoffMax < 0:
		return errors.New("policy backoff is negative: use a positive duration")
	case c.MaxCallsPerExecution < 0:
		return errors.New("policy max_calls_per_execution is negative: use 0 for no bound")
	case c.MaxConcurrent < 0:
		return errors.New("policy max_concurrent is negative: use 0 for no bound")
	case c.MaxExecutions < 0:
		return errors.New("policy max executions is negative")
	}
	return nil
}

// IsZero reports whether c adds nothing to a handler.
func (c Config) IsZero() bool {
	return c.Timeout == 0 && c.Retries == 0 && c.MaxCallsPerExecution == 0 && c.MaxConcurrent == 0
}

// TransientError marks its cause as a failure that may succeed when tried
// again (a timeout, a 429 or 5xx answer, a reset connection). It unwraps to
// the cause, so errors.As still finds a *tools.Error inside.
type TransientError struct {
	Err error
	// RetryAfter, when positive, is the delay the remote side asked for.
	RetryAfter time.Duration
}

// Error implements the error interface.
func (e *TransientError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *TransientError) Unwrap() error { return e.Err }

// MarkTransient wraps err as a TransientError; it returns nil for nil.
func MarkTransient(err error) error {
	if err == nil {
		return nil
	}
	return &TransientError{Err: err}
}

// IsTransient reports whether err is worth retrying: it is or wraps a
// TransientError, a network timeout, or a reset, refused or cut connection.
// A *tools.Error that is not marked transient never is.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	var te *TransientError
	if errors.As(err, &te) {
		return true
	}
	var toolErr *tools.Error
	if errors.As(err, &toolErr) {
		return false
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Wrap returns t with its handler run under cfg. Every call of the returned
// tool shares one concurrency cap and one per-execution call count. cfg is
// assumed valid (see Config.Validate); negative values count as zero.
func Wrap(t tools.Tool, cfg Config) tools.Tool {
	if cfg.IsZero() || t.Handler == nil {
		return t
	}
	w := newWrapper(t.Name, t.Handler, cfg)
	t.Handler = w.handle
	return t
}

type wrapper struct {
	name  string
	next  tools.Handler
	cfg   Config
	sem   chan struct{} // nil when there is no concurrency cap
	calls *callCounter  // nil when there is no call budget
	// sleep waits d or until ctx ends; replaced in tests that count delays.
	sleep func(ctx context.Context, d time.Duration) error
}

func newWrapper(name string, next tools.Handler, cfg Config) *wrapper {
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = DefaultBackoffBase
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = DefaultBackoffMax
	}
	if cfg.BackoffMax < cfg.BackoffBase {
		cfg.BackoffMax = cfg.BackoffBase
	}
	w := &wrapper{name: name, next: next, cfg: cfg, sleep: sleepCtx}
	if cfg.MaxConcurrent > 0 {
		w.sem = make(chan struct{}, cfg.MaxConcurrent)
	}
	if cfg.MaxCallsPerExecution > 0 {
		n := cfg.MaxExecutions
		if n <= 0 {
			n = DefaultMaxExecutions
		}
		w.calls = newCallCounter(n)
	}
	return w
}

func (w *wrapper) handle(ctx context.Context, call tools.Call) (json.RawMessage, error) {
	if w.calls != nil && w.calls.add(call.ExecutionID) > w.cfg.MaxCallsPerExecution {
		return nil, tools.Errorf(tools.CodeCallLimit,
			"tool %s allows %d calls per execution: make fewer calls, e.g. batch the work", w.name, w.cfg.MaxCallsPerExecution)
	}
	if w.sem != nil {
		select {
		case w.sem <- struct{}{}:
			defer func() { <-w.sem }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for attempt := 0; ; attempt++ {
		out, err := w.attempt(ctx, call)
		if err == nil {
			return out, nil
		}
		if attempt >= w.cfg.Retries || !IsTransient(err) || ctx.Err() != nil {
			return nil, err
		}
		if serr := w.sleep(ctx, w.delay(attempt, err)); serr != nil {
			return nil, err
		}
	}
}

// attempt runs the handler once under the per-attempt timeout. A timeout of
// the attempt (not of the caller's context) becomes a transient
// *tools.Error with code tools.CodeTimeout.
func (w *wrapper) attempt(ctx context.Context, call tools.Call) (json.RawMessage, error) {
	if w.cfg.Timeout <= 0 {
		return w.next(ctx, call)
	}
	actx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	out, err := w.next(actx, call)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		return nil, &TransientError{Err: tools.Errorf(tools.CodeTimeout,
			"tool %s did not answer within %s: try again later or ask for less", w.name, w.cfg.Timeout)}
	}
	return out, err
}

// delay is the backoff before retry number attempt+1: exponential, capped,
// with full jitter in [d/2, d], and at least what the remote side asked.
func (w *wrapper) delay(attempt int, err error) time.Duration {
	d := w.cfg.BackoffBase
	for i := 0; i < attempt && d < w.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, w.cfg.BackoffMax)
	d = d/2 + rand.N(d/2+1)
	var te *TransientError
	if errors.As(err, &te) && te.RetryAfter > d {
		d = min(te.RetryAfter, w.cfg.BackoffMax)
	}
	return d
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// callCounter counts calls per execution id, remembering at most max ids;
// beyond that the oldest id is forgotten (its count starts again at zero),
// so memory stays bounded however many executions a server runs.
type callCounter struct {
	mu     sync.Mutex
	max    int
	counts map[string]int
	order  []string // ring of ids in insertion order
	next   int
}

func newCallCounter(max int) *callCounter {
	return &callCounter{max: max, counts: make(map[string]int), order: make([]string, 0, min(max, 64))}
}

// add counts one call of id and returns the new count.
func (c *callCounter) add(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.counts[id]; ok {
		c.counts[id] = n + 1
		return n + 1
	}
	if len(c.order) < c.max {
		c.order = append(c.order, id)
	} else {
		delete(c.counts, c.order[c.next])
		c.order[c.next] = id
		c.next = (c.next + 1) % c.max
	}
	c.counts[id] = 1
	return 1
}

// len returns the number of tracked executions.
func (c *callCounter) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.counts)
}
