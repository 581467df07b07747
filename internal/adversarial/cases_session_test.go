package adversarial

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// echo is the client tool most cases serve: any arguments, any result.
var echo = tool("fetch", "", "")

// answerWith answers every call with output.
func answerWith(s *sess, output string) func(*ptcv1.ToolCall) error {
	return func(tc *ptcv1.ToolCall) error { return s.answer(tc.GetCallId(), output) }
}

// sessionCase runs script in a Session with the echo tool, answering every
// call through answer (given the session), and checks the transcript.
func sessionCase(name string, fast bool, script string, answer func(*sess) func(*ptcv1.ToolCall) error, w want, check func(*transcript) error, opts ...opt) tcase {
	return tcase{
		name: name, family: famSession, fast: fast, bound: 15 * time.Second, want: w,
		do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
			s, err := openSession(ctx, e.c, jsReq(script, append([]opt{timeout(5 * time.Second)}, opts...)...), echo)
			if err != nil {
				return nil, err
			}
			var onCall func(*ptcv1.ToolCall) error
			if answer != nil {
				onCall = answer(s)
			}
			res, tr, err := s.serve(onCall)
			if tr.afterEnd > 0 {
				e.fail("the server sent %d messages after the result", tr.afterEnd)
			}
			if err == nil && check != nil {
				if cerr := check(tr); cerr != nil {
					e.fail("%v", cerr)
				}
			}
			return res, err
		},
	}
}

// sessionRefused expects a Session whose start is refused with code.
func sessionRefused(name string, fast bool, code codes.Code, first *ptcv1.SessionRequest, more ...*ptcv1.SessionRequest) tcase {
	return tcase{
		name: name, family: famSession, fast: fast, bound: 10 * time.Second, want: refused(code),
		do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
			st, err := e.c.Session(ctx)
			if err != nil {
				return nil, err
			}
			s := &sess{st: st}
			for _, m := range append([]*ptcv1.SessionRequest{first}, more...) {
				if err := s.send(m); err != nil {
					break // the server may end the RPC before reading on
				}
			}
			res, _, err := s.serve(nil)
			return res, err
		},
	}
}

func startMsg(exec *ptcv1.ExecuteRequest, clientTools ...*ptcv1.ToolDefinition) *ptcv1.SessionRequest {
	return &ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{Execute: exec, ClientTools: clientTools}}}
}

func sessionCases() []tcase {
	protoErrFor := func(id string) func(*transcript) error {
		return func(tr *transcript) error {
			for _, p := range tr.protoErrs {
				if p.GetCallId() == id {
					return nil
				}
			}
			return fmt.Errorf("no protocol_error for call_id %q (got %v)", id, tr.protoErrs)
		}
	}
	cs := []tcase{
		sessionCase("session-huge-result", false, `const r = await tools.fetch({}); return r.length`,
			func(s *sess) func(*ptcv1.ToolCall) error { return answerWith(s, `"`+strings.Repeat("x", 20<<20)+`"`) },
			succeeds(fmt.Sprint(20<<20)).or(ScriptError), nil, memory(512*MiB)),
		// Beyond grpc.max_recv_bytes the transport refuses the message and
		// ends the RPC.
		sessionCase("session-result-over-message-limit", false, `try { const r = await tools.fetch({}); return r.length } catch (e) { return e.code }`,
			func(s *sess) func(*ptcv1.ToolCall) error { return answerWith(s, `"`+strings.Repeat("x", 30<<20)+`"`) },
			refused(codes.ResourceExhausted), nil, memory(512*MiB)),
		sessionCase("session-deep-result", true, `try { await tools.fetch({}); return "delivered" } catch (e) { return e.code || e.name }`,
			func(s *sess) func(*ptcv1.ToolCall) error {
				return answerWith(s, strings.Repeat("[", 1e6)+strings.Repeat("]", 1e6))
			},
			succeeds().or(ScriptError), nil, memory(512*MiB)),
		sessionCase("session-invalid-json-result", false, `try { await tools.fetch({}); return "delivered" } catch (e) { return e.code }`,
			func(s *sess) func(*ptcv1.ToolCall) error { return answerWith(s, `{"a":`) },
			succeeds().and(resultIs(func(code string) error {
				if code == "delivered" || code == "" {
					return fmt.Errorf("invalid JSON from a client reached the script as %q", code)
				}
				return nil
			})), nil),
		sessionCase("session-non-json-values", false, `const out = []; for (let i = 0; i < 5; i++) { try { out.push(typeof await tools.fetch({i})) } catch (e) { out.push(e.code) } } return out`,
			func(s *sess) func(*ptcv1.ToolCall) error {
				bad := []string{"NaN", "undefined", "1 2", "[1,]", `{"a":1}garbage`}
				n := 0
				return func(tc *ptcv1.ToolCall) error { n++; return s.answer(tc.GetCallId(), bad[(n-1)%len(bad)]) }
			},
			succeeds().and(resultIs(func(v []string) error {
				for _, c := range v {
					if c == "object" || c == "number" || c == "undefined" || c == "string" {
						return fmt.Errorf("a malformed client result reached the script: %v", v)
					}
				}
				return nil
			})), nil),
		{
			name: "session-schema-violating-result", family: famSession, bound: 10 * time.Second,
			want: succeeds(`"invalid_output"`),
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				s, err := openSession(ctx, e.c, jsReq(`try { return await tools.count({}) } catch (e) { return e.code }`), tool("count", "", `{"type":"integer","minimum":0}`))
				if err != nil {
					return nil, err
				}
				res, _, err := s.serve(func(tc *ptcv1.ToolCall) error { return s.answer(tc.GetCallId(), `-1.5`) })
				return res, err
			},
		},
		{
			name: "session-arguments-validated-before-client", family: famSession, bound: 10 * time.Second,
			want: succeeds(`"invalid_arguments"`),
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				s, err := openSession(ctx, e.c, jsReq(`try { return await tools.count({n: "x"}) } catch (e) { return e.code }`),
					tool("count", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`, ""))
				if err != nil {
					return nil, err
				}
				res, tr, err := s.serve(func(tc *ptcv1.ToolCall) error { return s.answer(tc.GetCallId(), `1`) })
				if len(tr.calls) > 0 {
					e.fail("invalid arguments reached the client: %s", tr.calls[0].GetArgumentsJson())
				}
				return res, err
			},
		},
		sessionCase("session-double-answer", true, `return await tools.fetch({})`,
			func(s *sess) func(*ptcv1.ToolCall) error {
				return func(tc *ptcv1.ToolCall) error {
					if err := s.answer(tc.GetCallId(), `1`); err != nil {
						return err
					}
					return s.answer(tc.GetCallId(), `2`)
				}
			}, succeeds("1"), nil),
		sessionCase("session-unknown-call-id", false, `return await tools.fetch({})`,
			func(s *sess) func(*ptcv1.ToolCall) error {
				return func(tc *ptcv1.ToolCall) error {
					if err := s.answer("no-such-call", `"wrong"`); err != nil {
						return err
					}
					if err := s.answerError("", "x", "empty id"); err != nil {
						return err
					}
					return s.answer(tc.GetCallId(), `"right"`)
				}
			}, succeeds(`"right"`), protoErrFor("no-such-call")),
		{
			name: "session-answer-before-any-call", family: famSession, bound: 10 * time.Second,
			want: succeeds("7"),
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				s, err := openSession(ctx, e.c, jsReq(`return await tools.fetch({})`), echo)
				if err != nil {
					return nil, err
				}
				// A guessed id, sent before the server asked anything.
				if err := s.answer("1", `666`); err != nil {
					return nil, err
				}
				res, _, err := s.serve(answerWith(s, `7`))
				return res, err
			},
		},
		sessionCase("session-unknown-ids-flood", false, `return await tools.fetch({})`,
			func(s *sess) func(*ptcv1.ToolCall) error {
				return func(tc *ptcv1.ToolCall) error {
					for i := 0; i < 5000; i++ {
						if err := s.answer(fmt.Sprintf("bogus-%d", i), `0`); err != nil {
							return err
						}
					}
					return s.answer(tc.GetCallId(), `1`)
				}
			}, succeeds("1"), nil),
		sessionCase("session-silence", true, `return await tools.fetch({})`, nil, fails(Timeout).and(errorLimit(int64(time.Second))),
			func(tr *transcript) error {
				if len(tr.calls) != 1 || tr.calls[0].GetDeadline() == nil {
					return fmt.Errorf("tool calls %v", tr.calls)
				}
				return nil
			}, timeout(time.Second)),
		sessionCase("session-tool-error-huge-message", false, `return await tools.fetch({})`,
			func(s *sess) func(*ptcv1.ToolCall) error {
				return func(tc *ptcv1.ToolCall) error {
					return s.answerError(tc.GetCallId(), "boom", strings.Repeat("m", 8<<20))
				}
			}, fails(ScriptError).and(shortModelMessage), nil),
		sessionCase("session-tool-error-hostile-code", false, `try { await tools.fetch({}) } catch (e) { return [e.name, typeof e.code, e.code.length < 1000] }`,
			func(s *sess) func(*ptcv1.ToolCall) error {
				return func(tc *ptcv1.ToolCall) error {
					return s.answerError(tc.GetCallId(), "tool_call_limit\n"+strings.Repeat("c", 100000), "")
				}
			}, succeeds(`["ToolError","string",true]`, `["ToolError","string",false]`), nil),
		sessionCase("session-empty-outcome", false, `try { return [await tools.fetch({})] } catch (e) { return e.code }`,
			func(s *sess) func(*ptcv1.ToolCall) error {
				return func(tc *ptcv1.ToolCall) error {
					return s.send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{CallId: tc.GetCallId()}}})
				}
			}, succeeds(), nil),
		sessionCase("session-reverse-order", false, `const r = await Promise.all(Array.from({length: 200}, (_, i) => tools.fetch({i}))); return r.reduce((a, b) => a + b, 0)`,
			func(s *sess) func(*ptcv1.ToolCall) error {
				var pending []*ptcv1.ToolCall
				return func(tc *ptcv1.ToolCall) error {
					pending = append(pending, tc)
					if len(pending) < 200 {
						return nil
					}
					for i := len(pending) - 1; i >= 0; i-- {
						var args struct{ I int }
						_ = jsonUnmarshal(pending[i].GetArgumentsJson(), &args)
						if err := s.answer(pending[i].GetCallId(), fmt.Sprint(args.I)); err != nil {
							return err
						}
					}
					return nil
				}
			}, succeeds("19900"), nil, maxConcurrent(256)),
		sessionCase("session-concurrency-bound", false, `const r = await Promise.all(Array.from({length: 12}, (_, i) => tools.fetch({i}))); return r.length`,
			func(s *sess) func(*ptcv1.ToolCall) error {
				var outstanding []*ptcv1.ToolCall
				return func(tc *ptcv1.ToolCall) error {
					outstanding = append(outstanding, tc)
					if len(outstanding) > 3 {
						return fmt.Errorf("%d calls outstanding under max_concurrent_tool_calls 3", len(outstanding))
					}
					if len(outstanding) < 3 {
						return nil
					}
					// Answer them all; the next three follow.
					for _, p := range outstanding {
						if err := s.answer(p.GetCallId(), `0`); err != nil {
							return err
						}
					}
					outstanding = nil
					return nil
				}
			}, succeeds("12"), nil, maxConcurrent(3)),
		{
			name: "session-idempotency-keys", family: famSession, bound: 10 * time.Second,
			want: succeeds("2"),
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				s, err := openSession(ctx, e.c, jsReq(`await tools.fetch({}); await tools.fetch({}); return 2`, execID("job:7.a-b")), echo)
				if err != nil {
					return nil, err
				}
				res, tr, err := s.serve(answerWith(s, `0`))
				var keys []string
				for _, c := range tr.calls {
					keys = append(keys, c.GetIdempotencyKey())
				}
				if fmt.Sprint(keys) != "[job:7.a-b/1 job:7.a-b/2]" {
					e.fail("idempotency keys %v", keys)
				}
				return res, err
			},
		},
		{
			name: "session-disconnect-mid-call", family: famSession, fast: true, bound: 10 * time.Second, want: checkedByDo,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				id := fmt.Sprintf("disconnect-%d", time.Now().UnixNano())
				cctx, cancel := context.WithCancel(ctx)
				s, err := openSession(cctx, e.c, jsReq(`return await tools.fetch({})`, execID(id)), echo)
				if err != nil {
					cancel()
					return nil, err
				}
				m, err := s.st.Recv()
				if err != nil || m.GetToolCall() == nil {
					cancel()
					e.fail("first message %v, %v", m, err)
					return nil, nil
				}
				cancel()
				if _, err := s.st.Recv(); status.Code(err) != codes.Canceled {
					e.fail("after the disconnect the client saw %v", err)
				}
				if got, err := e.srv.outcomeOf(e.mark, id); err != nil || got != "CANCELLED" {
					e.fail("ptcd logged outcome %q for the disconnected execution (%v), want CANCELLED", got, err)
				}
				return nil, nil
			},
		},
		{
			name: "session-half-close-mid-call", family: famSession, bound: 10 * time.Second,
			want: succeeds(`"cancelled"`),
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				s, err := openSession(ctx, e.c, jsReq(`try { await tools.fetch({}); return "answered" } catch (e) { return e.code }`), echo)
				if err != nil {
					return nil, err
				}
				res, _, err := s.serve(func(*ptcv1.ToolCall) error { return s.st.CloseSend() })
				return res, err
			},
		},
		{
			name: "session-cancel-message", family: famSession, bound: 10 * time.Second,
			want: fails(Cancelled),
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				s, err := openSession(ctx, e.c, jsReq(`await tools.fetch({}); for (;;) {}`), echo)
				if err != nil {
					return nil, err
				}
				res, _, err := s.serve(func(tc *ptcv1.ToolCall) error {
					if err := s.cancel(strings.Repeat("why ", 1<<16)); err != nil {
						return err
					}
					return s.answer(tc.GetCallId(), `1`)
				})
				return res, err
			},
		},
		{
			// A WASM guest that gets "cancelled" from its call, calls again
			// and finishes normally is still cancelled; the second call is
			// not made.
			name: "session-cancel-wasm", family: famSession, fast: true, bound: 10 * time.Second,
			want: fails(Cancelled).and(func(r *ptcv1.ExecuteResponse) error {
				if n := r.GetStats().GetToolCalls(); n != 1 {
					return fmt.Errorf("stats.tool_calls %d, want 1", n)
				}
				return nil
			}),
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				again := code(i32c(memName), i32c(5), i32c(memArgs), i32c(2), i32c(memOut), call(fnCall), opDrop)
				mod := wasmCall("fetch", `{}`, 0, opDrop, again, write(1, memArgs, 2)).bytes()
				s, err := openSession(ctx, e.c, wasmReq(mod, timeout(5*time.Second)), echo)
				if err != nil {
					return nil, err
				}
				res, _, err := s.serve(func(*ptcv1.ToolCall) error { return s.cancel("enough") })
				return res, err
			},
		},
		{
			name: "session-late-answers", family: famSession, bound: 10 * time.Second,
			want: succeeds("1"),
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				s, err := openSession(ctx, e.c, jsReq(`tools.fetch({}); return 1`), echo)
				if err != nil {
					return nil, err
				}
				res, tr, err := s.serve(nil)
				for _, c := range tr.calls {
					_ = s.answer(c.GetCallId(), `"late"`) // after the result: ignored or refused
				}
				return res, err
			},
		},
		sessionRefused("session-second-start", true, codes.InvalidArgument, startMsg(jsReq(`return await tools.fetch({})`), echo), startMsg(jsReq(`return 2`))),
		sessionRefused("session-first-not-start", false, codes.InvalidArgument,
			&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{CallId: "1"}}}),
		sessionRefused("session-empty-first-message", false, codes.InvalidArgument, &ptcv1.SessionRequest{}),
		sessionRefused("session-cancel-first", false, codes.InvalidArgument,
			&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Cancel{Cancel: &ptcv1.CancelExecution{}}}),
		sessionRefused("session-start-without-execute", false, codes.InvalidArgument,
			&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{}}}),
		sessionRefused("session-tool-collides-with-server", false, codes.InvalidArgument, startMsg(jsReq(`return 1`), tool("get_team_members", "", ""))),
		sessionRefused("session-duplicate-client-tools", false, codes.InvalidArgument, startMsg(jsReq(`return 1`), echo, echo)),
		sessionRefused("session-bad-input-schema", false, codes.InvalidArgument, startMsg(jsReq(`return 1`), tool("x", `{"type":`, ""))),
		sessionRefused("session-bad-output-schema", false, codes.InvalidArgument, startMsg(jsReq(`return 1`), tool("x", "", `{"type":"nonsense"}`))),
		sessionRefused("session-external-ref-schema", false, codes.InvalidArgument, startMsg(jsReq(`return 1`), tool("x", `{"$ref":"https://example.com/schema.json"}`, ""))),
		sessionRefused("session-file-ref-schema", false, codes.InvalidArgument, startMsg(jsReq(`return 1`), tool("x", `{"$ref":"file:///etc/passwd"}`, ""))),
		sessionRefused("session-bad-execution-id", false, codes.InvalidArgument, startMsg(jsReq(`return 1`, execID("a b")))),
		{
			name: "session-hostile-client-tool-names", family: famSession, bound: 15 * time.Second, want: checkedByDo,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				for _, name := range []string{"", "a..b", ".a", "a.", "a b", "a\x00b", strings.Repeat("n", 10000), "__proto__", "constructor", "$search", "a.__proto__", "prototype.x"} {
					s, err := openSession(ctx, e.c, jsReq(`return [typeof ({}).polluted, Object.getPrototypeOf({}) === Object.prototype]`), tool(name, "", ""))
					if err != nil {
						return nil, err
					}
					res, _, err := s.serve(answerWith(s, `{"polluted": 1}`))
					switch {
					case status.Code(err) == codes.InvalidArgument:
					case err != nil:
						e.fail("client tool %q: %v", clip(name, 30), describe(nil, err))
					case res.GetResultJson() != `["undefined",true]`:
						e.fail("client tool %q accepted and the script saw %s", clip(name, 30), brief(res))
					case name == "" || strings.ContainsAny(name, " \x00") || strings.Contains(name, ".."):
						e.fail("client tool %q accepted; want INVALID_ARGUMENT", clip(name, 30))
					}
				}
				return nil, nil
			},
		},
		{
			// So many tools may be refused; if accepted, every one is there.
			name: "session-many-client-tools", family: famSession, bound: 20 * time.Second, want: checkedByDo,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				var defs []*ptcv1.ToolDefinition
				for i := 0; i < 10000; i++ {
					defs = append(defs, tool(fmt.Sprintf("ns%d.t%d", i%100, i), `{"type":"object"}`, ""))
				}
				s, err := openSession(ctx, e.c, jsReq(`let n = 0; for (const ns of Object.keys(tools)) if (ns.startsWith("ns")) n += Object.keys(tools[ns]).length; return n`), defs...)
				if err != nil {
					return nil, err
				}
				res, _, err := s.serve(nil)
				if status.Code(err) != codes.InvalidArgument && (err != nil || res.GetResultJson() != "10000") {
					e.fail("10,000 client tools: %s", describe(res, err))
				}
				return nil, nil
			},
		},
		streamLogsCase(),
	}
	return cs
}

// streamLogsCase: with stream_logs every console entry reaches the stream
// before the result, in every one of 100 sessions.
func streamLogsCase() tcase {
	return tcase{
		name: "session-stream-logs-before-result", family: famSession, fast: true, bound: 30 * time.Second, want: checkedByDo,
		do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
			var mu sync.Mutex
			missing := 0
			var wg sync.WaitGroup
			sem := make(chan struct{}, 8)
			for i := 0; i < 100; i++ {
				wg.Add(1)
				sem <- struct{}{}
				// One goroutine per session; it ends when the session does.
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					req := jsReq(`console.log("a"); console.info("b"); await tools.fetch({}); console.warn("c"); console.error("d"); console.log("e"); return 1`)
					req.StreamLogs = true
					s, err := openSession(ctx, e.c, req, echo)
					if err != nil {
						mu.Lock()
						e.fail("session: %v", err)
						mu.Unlock()
						return
					}
					res, tr, err := s.serve(answerWith(s, `0`))
					mu.Lock()
					defer mu.Unlock()
					if err != nil || res.GetResultJson() != "1" {
						e.fail("session: %s", describe(res, err))
						return
					}
					var got []string
					for _, l := range tr.logs {
						got = append(got, l.GetMessage())
					}
					if strings.Join(got, "") != "abcde" {
						missing++
					}
				}()
			}
			wg.Wait()
			if missing > 0 {
				e.fail("LOGS DROPPED: in %d of 100 sessions the streamed logs before the result were not a,b,c,d,e", missing)
			}
			return nil, nil
		},
	}
}
