package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/durable/pgtest"
	"github.com/ptcrun/ptc/internal/durable/redistest"
	"github.com/ptcrun/ptc/tools"
)

// effectServer is an HTTP tool endpoint with a side effect per call: the
// first request carrying an Idempotency-Key applies it; later ones with
// the same key are answered alike without applying it again (what a tool
// honouring idempotency keys does). It counts both per key.
type effectServer struct {
	mu       sync.Mutex
	applied  map[string]int
	requests map[string]int
	// stall, when it returns a channel for a key, is a kill point: the
	// effect is applied, the channel is sent the key, and the answer
	// waits until the request ends (the replica that sent it died).
	stall func(key string) chan<- string
}

func newEffectServer() *effectServer {
	return &effectServer{applied: map[string]int{}, requests: map[string]int{}}
}

func (s *effectServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	var args struct {
		N int `json:"n"`
	}
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil || key == "" {
		http.Error(w, "want a JSON body and an Idempotency-Key", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests[key]++
	if s.applied[key] == 0 {
		s.applied[key] = 1
	}
	var stall chan<- string
	if s.stall != nil {
		stall = s.stall(key)
	}
	s.mu.Unlock()
	if stall != nil {
		stall <- key
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"n":%d,"key":%q}`, args.N, key)
}

// counts returns the effects applied and the requests received for key.
func (s *effectServer) counts(key string) (applied, requests int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied[key], s.requests[key]
}

func (s *effectServer) setStall(f func(key string) chan<- string) {
	s.mu.Lock()
	s.stall = f
	s.mu.Unlock()
}

// kill ends the process with SIGKILL (kill -9) and reaps it.
func (p *ptcdProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
	_ = p.cmd.Wait()
}

// chaosScript pauses at a client tool, then applies three effects through
// the HTTP tool, one after another: calls 2, 3 and 4.
const chaosScript = `
const who = await tools.ask({});
let sum = 0;
for (let n = 1; n <= 3; n++) sum += (await tools.fx.apply({n})).n;
return {who, sum};`

// chaosEffects is the number of effects a run applies after its pause.
const chaosEffects = 3

// chaosStore is a shared store the chaos test runs on: the store's
// configuration lines and the environment that names its server.
type chaosStore struct {
	name  string
	runs  int
	start func(t *testing.T) (config string, env string)
}

// chaosStores are the shared stores a takeover must hold on alike.
var chaosStores = []chaosStore{
	{"redis", chaosRuns, func(t *testing.T) (string, string) {
		return "    redis_url_env: PTC_TEST_REDIS\n    redis_prefix: \"chaos:\"\n", "PTC_TEST_REDIS=" + redistest.Start(t)
	}},
	{"postgres", pgChaosRuns, func(t *testing.T) (string, string) {
		dsn := pgtest.Start(t)
		if dsn == "" {
			return "", ""
		}
		return "    postgres_dsn_env: PTC_TEST_POSTGRES\n", "PTC_TEST_POSTGRES=" + pgtest.NewDatabase(t, dsn)
	}},
}

func chaosConfig(store, toolURL string) string {
	return durableConfig + `  lease: {ttl: 500ms, renew_every: 100ms, max_takeovers: 20}
  store:
` + store + `tool_sources:
  - name: fx
    type: http
    tools:
      - name: apply
        method: POST
        url: ` + toolURL + `/apply
        input_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
`
}

// kill points of a chaos run.
const (
	killAtDelay  = "a random moment of the resume" // 0-20ms after it is sent
	killAtEffect = "after an effect, before its answer"
	killAtEnd    = "after the resume answered"
)

// TestTakeoverChaos runs executions on two ptcd processes sharing one
// store (Redis, then PostgreSQL) and one HTTP tool with side effects. Each run pauses, is
// resumed on the victim replica, and the victim is killed (SIGKILL) at a
// random point: a random moment, between a tool's effect and its answer,
// or after it answered. The caller then retries the same Resume on the
// survivor until it completes. Every execution must complete exactly
// once from the caller's view — every answer it gets is the same outcome
// — and every effect must be applied exactly once, its requests carrying
// one idempotency key however often the call was sent again; a call is
// sent again only when the victim died before answering (a takeover). The number
// of runs is chaosRuns on Redis (50; 1,000 with -tags chaos, which
// .ci/run's slow step uses) and pgChaosRuns on PostgreSQL (50; 200).
func TestTakeoverChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ptcd binaries")
	}
	for _, st := range chaosStores {
		t.Run(st.name, func(t *testing.T) {
			store, storeEnv := st.start(t)
			if store == "" {
				return
			}
			takeoverChaos(t, store, storeEnv, st.runs)
		})
	}
}

// takeoverChaos is TestTakeoverChaos on one store: runs runs.
func takeoverChaos(t *testing.T, store, storeEnv string, runs int) {
	fx := newEffectServer()
	ts := httptest.NewServer(fx)
	defer ts.Close()
	cfg := chaosConfig(store, ts.URL)
	env := []string{durableEnv, storeEnv}
	start := func() *ptcdProcess { return startProcess(t, cfg, env...) }
	survivor, victim := start(), start()
	sc := dialClient(t, survivor.addr)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 24))
	began := time.Now()
	stats := map[string]int{}
	resent, retries := 0, 0
	// takeover measures, for runs whose victim died before answering,
	// the time from its death to the survivor's answer.
	var takeover []time.Duration
	for run := 0; run < runs; run++ {
		// Pause on either replica: on the survivor the execution stays
		// parked there, so a takeover there goes on from memory; on the
		// victim it dies with it, and the takeover re-runs it.
		vc, err := ptc.Dial(victim.addr)
		if err != nil {
			t.Fatal(err)
		}
		pauseOn := sc
		if rng.IntN(2) == 0 {
			pauseOn = vc
		}
		paused, err := pauseOn.Execute(context.Background(), ptc.Request{Source: chaosScript, Resumable: true,
			ClientTools: []tools.Tool{{Definition: tools.Definition{Name: "ask"}}}})
		if err != nil || !paused.RequiresAction() || len(paused.Pending) != 1 {
			t.Fatalf("run %d: not paused: %v %+v", run, err, paused)
		}
		answers := []ptc.Answer{{CallID: paused.Pending[0].CallID, Output: json.RawMessage(`"ana"`)}}
		keys := make([]string, chaosEffects)
		for i := range keys {
			keys[i] = fmt.Sprintf("%s/%d", paused.ExecutionID, i+2)
		}

		point := []string{killAtDelay, killAtEffect, killAtEnd}[rng.IntN(3)]
		stats[point]++
		stalled := make(chan string, 1)
		if point == killAtEffect {
			at := keys[rng.IntN(chaosEffects)]
			fx.setStall(func(key string) chan<- string {
				if key == at {
					return stalled
				}
				return nil
			})
		}
		type reply struct {
			res *ptc.Result
			err error
		}
		first := make(chan reply, 1)
		go func() {
			res, err := vc.Resume(context.Background(), paused.Continuation, answers...)
			first <- reply{res, err}
		}()
		var got reply
		var diedAt time.Time
		switch point {
		case killAtDelay:
			killed := make(chan time.Time, 1)
			timer := time.AfterFunc(time.Duration(rng.IntN(20_000))*time.Microsecond, func() {
				victim.kill()
				killed <- time.Now()
			})
			got = <-first
			diedAt = <-killed
			timer.Stop()
		case killAtEffect:
			<-stalled
			victim.kill()
			diedAt = time.Now()
			got = <-first
		case killAtEnd:
			got = <-first
			victim.kill()
		}
		fx.setStall(nil)
		if got.err != nil && ptc.CodeOf(got.err) != ptc.Unavailable {
			t.Fatalf("run %d (%s): the victim answered %v", run, point, got.err)
		}
		// The replacement starts while the caller retries on the survivor.
		next := make(chan *ptcdProcess, 1)
		go func() { next <- start() }()

		out, n := retryResume(t, sc, paused.Continuation, answers)
		retries += n
		if got.err != nil {
			takeover = append(takeover, time.Since(diedAt))
		}
		_ = vc.Close()
		victim = <-next
		if out.Error != nil || string(out.Result) != `{"who":"ana","sum":6}` {
			t.Fatalf("run %d (%s): result %s %v", run, point, out.Result, out.Error)
		}
		if got.err == nil && (got.res.ExecutionID != out.ExecutionID || string(got.res.Result) != string(out.Result)) {
			t.Fatalf("run %d (%s): two outcomes: %s and %s", run, point, got.res.Result, out.Result)
		}
		// Any later retry, on either replica, gets that outcome again.
		nc, err := ptc.Dial(victim.addr)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := retryResume(t, nc, paused.Continuation, answers)
		_ = nc.Close()
		if again.ExecutionID != out.ExecutionID || string(again.Result) != string(out.Result) {
			t.Fatalf("run %d (%s): a later retry got %s", run, point, again.Result)
		}
		for _, key := range keys {
			applied, requests := fx.counts(key)
			if applied != 1 || requests < 1 {
				t.Fatalf("run %d (%s): effect %s applied %d times in %d requests", run, point, key, applied, requests)
			}
			// A resume that answered kept its outcome: nothing ran again.
			if got.err == nil && requests != 1 {
				t.Fatalf("run %d (%s): the victim answered, yet effect %s was requested %d times", run, point, key, requests)
			}
			resent += requests - 1
		}
	}
	slices.Sort(takeover)
	var median, worst time.Duration
	if len(takeover) > 0 {
		median, worst = takeover[len(takeover)/2], takeover[len(takeover)-1]
	}
	t.Logf("%d runs in %s (kill points: %v); %d effect requests sent again with their idempotency key by a takeover; %d retries answered RESUME_IN_PROGRESS or unavailable; "+
		"%d victims died before answering, their resume answered by the survivor %s after the death (median), %s at most (lease ttl 500ms)",
		runs, time.Since(began).Round(time.Second), stats, resent, retries, len(takeover), median.Round(time.Millisecond), worst.Round(time.Millisecond))
}

// retryResume resumes on c until it gets an answer that is not
// UNAVAILABLE (the replica running it died, or is still running it): a
// caller's retry loop, as docs/durable.md asks for, with a short
// backoff. It returns the outcome and how many tries were answered
// UNAVAILABLE.
func retryResume(t *testing.T, c *ptc.Client, cont string, answers []ptc.Answer) (*ptc.Result, int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for n := 0; ; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := c.Resume(ctx, cont, answers...)
		cancel()
		if err == nil {
			return out, n
		}
		var pe *ptc.Error
		if !errors.As(err, &pe) || pe.Code != ptc.Unavailable && pe.Code != ptc.DeadlineExceeded || time.Now().After(deadline) {
			t.Fatalf("retry %d: %v", n, err)
		}
		if pe.Reason != "" && !strings.HasPrefix(pe.Reason, "RESUME_IN_PROGRESS") {
			t.Fatalf("retry %d: reason %s: %v", n, pe.Reason, err)
		}
		// The lease of a dead replica lapses within durable.lease.ttl
		// (500ms here): wait a little before asking again.
		time.Sleep(20 * time.Millisecond)
	}
}
