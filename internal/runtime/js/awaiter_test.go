package js_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// awaiter is a Caller that answers calls itself (Begin and Await), over a
// Dispatcher: each begun call runs on a goroutine of its own and its
// answer queues for Await, in the order the calls finish — as a worker's
// call proxy receives its answers.
type awaiter struct {
	*bridge.Dispatcher
	answers chan answer
	mu      sync.Mutex
	begun   []string
	// after holds back the answers of a tool (the key) until an answer
	// of another tool (the value) has been taken by Await.
	after map[string]string
	taken map[string]chan struct{}
}

// takenCh is closed once an answer of the named tool was taken.
func (a *awaiter) takenCh(name string) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.taken == nil {
		a.taken = map[string]chan struct{}{}
	}
	c, ok := a.taken[name]
	if !ok {
		c = make(chan struct{})
		a.taken[name] = c
	}
	return c
}

func (a *awaiter) Begin(ctx context.Context, name string, args json.RawMessage) uint32 {
	a.mu.Lock()
	a.begun = append(a.begun, name)
	t := uint32(len(a.begun))
	a.mu.Unlock()
	inv := a.Dispatcher.Start(ctx, name, args)
	go func() {
		out, err := inv()
		if first, ok := a.after[name]; ok {
			<-a.takenCh(first)
		}
		a.answers <- answer{t, name, out, err}
	}()
	return t
}

type answer struct {
	ticket uint32
	name   string
	out    json.RawMessage
	err    error
}

func (a *awaiter) Await(ctx context.Context) (uint32, json.RawMessage, error) {
	select {
	case ans := <-a.answers:
		c := a.takenCh(ans.name)
		select {
		case <-c:
		default:
			close(c)
		}
		return ans.ticket, ans.out, ans.err
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
}

// Start must not be used when the Caller is an Awaiter.
func (a *awaiter) Start(ctx context.Context, name string, args json.RawMessage) bridge.Invocation {
	panic("the engine started a call without Begin")
}

func runAwaiter(t *testing.T, src string, lim limits.Limits, after map[string]string) (*runtime.Outcome, *awaiter) {
	t.Helper()
	lim = limits.DefaultPolicy().Resolve(lim, limits.Limits{})
	d := bridge.New(bridge.Config{ExecutionID: "aw", Tools: testTools(t), MaxCalls: lim.MaxToolCalls, MaxConcurrent: lim.MaxConcurrentToolCalls})
	a := &awaiter{Dispatcher: d, answers: make(chan answer, 64), after: after}
	job := &runtime.Job{ExecutionID: "aw", Source: src, Input: json.RawMessage("null"), Limits: lim, Tools: a,
		Logs: runtime.NewLogBuffer(time.Now(), lim, nil)}
	return js.New().Run(context.Background(), job), a
}

// TestAwaiter runs scripts against a Caller that answers calls itself:
// the engine begins every call through it, in script order, and settles
// each promise with the answer Await returns, whatever order answers
// arrive in.
func TestAwaiter(t *testing.T) {
	cases := []struct {
		name, src, want string
		after           map[string]string // see awaiter.after
	}{
		{name: "sequential", src: `let s = 0; for (let i = 0; i < 20; i++) s += (await tools.ident({a: i, b: 0})).a; return s`, want: `190`},
		{name: "together", src: `return (await Promise.all([1, 2, 3].map((i) => tools.add({a: i, b: i}))))`, want: `[2,4,6]`},
		{name: "failures", src: `try { await tools.fail({}) } catch (e) { return [e.name, e.code, (await tools.add({a: 1, b: 1}))] }`,
			want: `["ToolError","not_found",2]`},
		{name: "race: the first answer wins", src: `return await Promise.race([tools.echo({slow: 1}), tools.add({a: 1, b: 2})])`,
			want: `3`, after: map[string]string{"echo": "add"}},
		{name: "answers in the order they arrive", src: `
const order = [];
await Promise.all([tools.echo({}).then(() => order.push("echo")), tools.add({a: 1, b: 1}).then(() => order.push("add"))]);
return order`, want: `["add","echo"]`, after: map[string]string{"echo": "add"}},
		{name: "unawaited call", src: `tools.echo({}); return 1`, want: `1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _ := runAwaiter(t, c.src, limits.Limits{}, c.after)
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if string(out.Result) != c.want {
				t.Fatalf("result %s, want %s", out.Result, c.want)
			}
		})
	}
	t.Run("calls begun in script order", func(t *testing.T) {
		_, a := runAwaiter(t, `await Promise.all([tools.add({a: 1, b: 1}), tools.echo({}), tools.ident({a: 1, b: 1})]); await tools.echo({})`, limits.Limits{}, nil)
		if got := strings.Join(a.begun, ","); got != "add,echo,ident,echo" {
			t.Fatalf("begun %s", got)
		}
	})
	t.Run("timeout while awaiting", func(t *testing.T) {
		out, _ := runAwaiter(t, `await tools.block({})`, limits.Limits{Timeout: 50 * time.Millisecond}, nil)
		if out.Err == nil || out.Err.Kind != fault.KindTimeout {
			t.Fatalf("got %v", out.Err)
		}
	})
}
