package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noSleep records backoff delays instead of waiting.
func noSleep(delays *[]time.Duration) func(context.Context, time.Duration) error {
	var mu sync.Mutex
	return func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*delays = append(*delays, d)
		mu.Unlock()
		return ctx.Err()
	}
}

func TestRetriesOnlyTransient(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		wantCalls int32
	}{
		{"transient tool error retried", MarkTransient(tools.Errorf("http_503", "busy")), 4},
		{"connection reset retried", fmt.Errorf("post: %w", syscall.ECONNRESET), 4},
		{"unexpected eof retried", io.ErrUnexpectedEOF, 4},
		{"plain tool error not retried", tools.Errorf("http_400", "bad"), 1},
		{"generic error not retried", errors.New("boom"), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			h := func(ctx context.Context, c tools.Call) (json.RawMessage, error) {
				calls.Add(1)
				return nil, tc.err
			}
			var delays []time.Duration
			w := newWrapper("t", h, Config{Retries: 3})
			w.sleep = noSleep(&delays)
			_, err := w.handle(context.Background(), tools.Call{ExecutionID: "e"})
			if err == nil {
				t.Fatal("want error")
			}
			if got := calls.Load(); got != tc.wantCalls {
				t.Fatalf("calls = %d, want %d", got, tc.wantCalls)
			}
			if len(delays) != int(tc.wantCalls)-1 {
				t.Fatalf("delays = %v", delays)
			}
		})
	}
}

func TestRetrySucceeds(t *testing.T) {
	var calls atomic.Int32
	h := func(ctx context.Context, c tools.Call) (json.RawMessage, error) {
		if calls.Add(1) < 3 {
			return nil, MarkTransient(errors.New("flaky"))
		}
		return json.RawMessage(`1`), nil
	}
	var delays []time.Duration
	w := newWrapper("t", h, Config{Retries: 5})
	w.sleep = noSleep(&delays)
	out, err := w.handle(context.Background(), tools.Call{})
	if err != nil || string(out) != "1" || calls.Load() != 3 {
		t.Fatalf("out=%s err=%v calls=%d", out, err, calls.Load())
	}
}

func TestBackoffDelays(t *testing.T) {
	w := newWrapper("t", nil, Config{Retries: 10, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second})
	cases := []struct {
		name     string
		attempt  int
		err      error
		min, max time.Duration
	}{
		{"first", 0, errors.New("x"), 50 * time.Millisecond, 100 * time.Millisecond},
		{"second doubles", 1, errors.New("x"), 100 * time.Millisecond, 200 * time.Millisecond},
		{"capped", 8, errors.New("x"), 500 * time.Millisecond, time.Second},
		{"retry after honoured", 0, &TransientError{Err: errors.New("x"), RetryAfter: 700 * time.Millisecond}, 700 * time.Millisecond, 700 * time.Millisecond},
		{"retry after capped", 0, &TransientError{Err: errors.New("x"), RetryAfter: time.Hour}, time.Second, time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 {
				d := w.delay(tc.attempt, tc.err)
				if d < tc.min || d > tc.max {
					t.Fatalf("delay = %v, want in [%v, %v]", d, tc.min, tc.max)
				}
			}
		})
	}
}

func TestTimeoutIsTransientAndRetried(t *testing.T) {
	var calls atomic.Int32
	h := func(ctx context.Context, c tools.Call) (json.RawMessage, error) {
		calls.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var delays []time.Duration
	w := newWrapper("slow", h, Config{Timeout: 10 * time.Millisecond, Retries: 1})
	w.sleep = noSleep(&delays)
	_, err := w.handle(context.Background(), tools.Call{})
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != tools.CodeTimeout {
		t.Fatalf("err = %v, want code %s", err, tools.CodeTimeout)
	}
	if calls.Load() != 2 {
		t.Fatalf("calls = %d, want 2", calls.Load())
	}
}

func TestCallerCancelNotRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	h := func(ctx context.Context, c tools.Call) (json.RawMessage, error) {
		calls.Add(1)
		cancel()
		return nil, MarkTransient(ctx.Err())
	}
	w := newWrapper("t", h, Config{Retries: 3})
	if _, err := w.handle(ctx, tools.Call{}); err == nil {
		t.Fatal("want error")
	}
	if calls.Load() != 1 {
		t.Fatalf("calls = %d, want 1", calls.Load())
	}
}

func TestMaxCallsPerExecution(t *testing.T) {
	h := func(ctx context.Context, c tools.Call) (json.RawMessage, error) { return json.RawMessage(`true`), nil }
	tool := Wrap(tools.Tool{Definition: tools.Definition{Name: "t"}, Handler: h}, Config{MaxCallsPerExecution: 2})
	for i := range 2 {
		if _, err := tool.Handler(context.Background(), tools.Call{ExecutionID: "a"}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err := tool.Handler(context.Background(), tools.Call{ExecutionID: "a"})
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != tools.CodeCallLimit {
		t.Fatalf("third call err = %v, want %s", err, tools.CodeCallLimit)
	}
	if _, err := tool.Handler(context.Background(), tools.Call{ExecutionID: "b"}); err != nil {
		t.Fatalf("other execution: %v", err)
	}
}

func TestCallCounterBounded(t *testing.T) {
	c := newCallCounter(3)
	for i := range 100 {
		c.add(fmt.Sprint("exec-", i))
	}
	if c.len() != 3 {
		t.Fatalf("tracked %d executions, want 3", c.len())
	}
	if got := c.add("exec-99"); got != 2 {
		t.Fatalf("recent execution count = %d, want 2", got)
	}
	if got := c.add("exec-0"); got != 1 {
		t.Fatalf("evicted execution count = %d, want 1 (forgotten)", got)
	}
}

func TestConcurrencyCap(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	var inFlight, peak atomic.Int32
	h := func(ctx context.Context, c tools.Call) (json.RawMessage, error) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		entered <- struct{}{}
		<-release
		inFlight.Add(-1)
		return json.RawMessage(`null`), nil
	}
	tool := Wrap(tools.Tool{Definition: tools.Definition{Name: "t"}, Handler: h}, Config{MaxConcurrent: 2})
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { _, _ = tool.Handler(context.Background(), tools.Call{ExecutionID: "x"}) })
	}
	<-entered
	<-entered
	// A waiting call gives up when its context ends.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tool.Handler(ctx, tools.Call{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting call err = %v, want context.Canceled", err)
	}
	close(release)
	wg.Wait()
	if peak.Load() != 2 {
		t.Fatalf("peak concurrency = %d, want 2", peak.Load())
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero", Config{}, true},
		{"full", Config{Timeout: time.Second, Retries: 3, MaxCallsPerExecution: 5, MaxConcurrent: 2}, true},
		{"negative timeout", Config{Timeout: -1}, false},
		{"negative retries", Config{Retries: -1}, false},
		{"too many retries", Config{Retries: 21}, false},
		{"negative calls", Config{MaxCallsPerExecution: -1}, false},
		{"negative concurrency", Config{MaxConcurrent: -1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestWrapZeroIsIdentity(t *testing.T) {
	h := func(ctx context.Context, c tools.Call) (json.RawMessage, error) { return nil, nil }
	tool := tools.Tool{Definition: tools.Definition{Name: "t"}, Handler: h}
	if got := Wrap(tool, Config{}); fmt.Sprintf("%p", got.Handler) != fmt.Sprintf("%p", h) {
		t.Fatal("zero config should keep the handler")
	}
}

func BenchmarkWrappedCall(b *testing.B) {
	h := func(ctx context.Context, c tools.Call) (json.RawMessage, error) { return json.RawMessage(`1`), nil }
	tool := Wrap(tools.Tool{Definition: tools.Definition{Name: "t"}, Handler: h},
		Config{Timeout: time.Second, Retries: 2, MaxCallsPerExecution: 1 << 30, MaxConcurrent: 8})
	ctx := context.Background()
	call := tools.Call{ExecutionID: "e"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Handler(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}
