package httpsource

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/policy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorded is one request the test server saw.
type recorded struct {
	Method, Path, RawPath, Query string
	Header                       http.Header
	Body                         string
}

// recorder is an httptest handler that records requests and answers with
// the status and body the test sets.
type recorder struct {
	mu     sync.Mutex
	reqs   []recorded
	status func(n int) int // status for the n-th request (1-based)
	body   string
	hits   atomic.Int32
	block  chan struct{} // when set, handlers wait on it (or the request's end)
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	n := int(r.hits.Add(1))
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, recorded{req.Method, req.URL.Path, req.URL.EscapedPath(), req.URL.RawQuery, req.Header.Clone(), string(b)})
	r.mu.Unlock()
	if r.block != nil {
		select {
		case <-r.block:
		case <-req.Context().Done():
			return
		}
	}
	status := http.StatusOK
	if r.status != nil {
		status = r.status(n)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, r.body)
}

func (r *recorder) last() recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func testTool(t *testing.T, srv *httptest.Server, ep Endpoint, vars map[string]string) tools.Tool {
	t.Helper()
	ep.URL = strings.Replace(ep.URL, "SERVER", srv.URL, 1)
	if ep.Name == "" {
		ep.Name = "op"
	}
	s, err := New(Config{Name: "api", Endpoints: []Endpoint{ep}, Client: srv.Client(), LookupEnv: env(vars)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := s.Tools()
	if len(ts) != 1 || ts[0].Name != "api."+ep.Name {
		t.Fatalf("tools = %+v", ts)
	}
	return ts[0]
}

func call(t *testing.T, tool tools.Tool, args string) (json.RawMessage, error) {
	t.Helper()
	return tool.Handler(context.Background(), tools.Call{ExecutionID: "ex1", Seq: 3, IdempotencyKey: "ex1/3", Tool: tool.Name, Arguments: json.RawMessage(args)})
}

func TestRequests(t *testing.T) {
	cases := []struct {
		name      string
		ep        Endpoint
		args      string
		wantMeth  string
		wantPath  string // escaped path
		wantQuery string
		wantBody  string
	}{
		{"get path escape", Endpoint{URL: "SERVER/items/{id}"}, `{"id":"a/b c"}`, "GET", "/items/a%2Fb%20c", "", ""},
		{"dot dot cannot climb", Endpoint{URL: "SERVER/items/{id}/x"}, `{"id":".."}`, "GET", "/items/%2E%2E/x", "", ""},
		{"number in path", Endpoint{URL: "SERVER/items/{id}"}, `{"id":12345678901234567890}`, "GET", "/items/12345678901234567890", "", ""},
		{"rest as query for get", Endpoint{URL: "SERVER/search"}, `{"q":"x y","tags":["a","b"],"n":3}`, "GET", "/search", "n=3&q=x+y&tags=a&tags=b", ""},
		{"query template", Endpoint{URL: "SERVER/s?q={q}&fixed=1"}, `{"q":"a&b"}`, "GET", "/s", "q=a%26b&fixed=1", ""},
		{"post rest as body", Endpoint{Method: "post", URL: "SERVER/repos/{owner}/issues"}, `{"owner":"me","title":"t","labels":["x"]}`, "POST", "/repos/me/issues", "", `{"labels":["x"],"title":"t"}`},
		{"explicit body mapping", Endpoint{Method: "PUT", URL: "SERVER/k/{key}", Body: map[string]string{"value": "v"}}, `{"key":"a","v":{"deep":true},"extra":1}`, "PUT", "/k/a", "", `{"value":{"deep":true}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{body: `{"ok":true}`}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			out, err := call(t, testTool(t, srv, tc.ep, nil), tc.args)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if string(out) != `{"ok":true}` {
				t.Fatalf("out = %s", out)
			}
			got := rec.last()
			if got.Method != tc.wantMeth || got.RawPath != tc.wantPath || got.Query != tc.wantQuery {
				t.Fatalf("request = %s %s ? %s, want %s %s ? %s", got.Method, got.RawPath, got.Query, tc.wantMeth, tc.wantPath, tc.wantQuery)
			}
			if tc.wantBody != "" {
				if got.Body != tc.wantBody {
					t.Fatalf("body = %s, want %s", got.Body, tc.wantBody)
				}
				if got.Header.Get("Content-Type") != "application/json" {
					t.Fatalf("content type = %q", got.Header.Get("Content-Type"))
				}
			}
			if got.Header.Get("Idempotency-Key") != "ex1/3" {
				t.Fatalf("Idempotency-Key = %q, want ex1/3", got.Header.Get("Idempotency-Key"))
			}
		})
	}
}

func TestHeadersOnlyFromEnv(t *testing.T) {
	rec := &recorder{body: `1`}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	tool := testTool(t, srv, Endpoint{URL: "SERVER/x", HeadersFromEnv: map[string]string{"Authorization": "API_AUTH"}},
		map[string]string{"API_AUTH": "Bearer s3cret"})
	if _, err := call(t, tool, `{}`); err != nil {
		t.Fatal(err)
	}
	if got := rec.last().Header.Get("Authorization"); got != "Bearer s3cret" {
		t.Fatalf("Authorization = %q", got)
	}
	// A variable that is not set fails start-up and names the variable, never a value.
	_, err := New(Config{Name: "api", Endpoints: []Endpoint{{Name: "x", URL: srv.URL, HeadersFromEnv: map[string]string{"Authorization": "MISSING_VAR"}}}, LookupEnv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "MISSING_VAR") {
		t.Fatalf("err = %v, want it to name MISSING_VAR", err)
	}
}

func TestResponses(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		max      int64
		wantOut  string
		wantCode string
	}{
		{"json", 200, `{"a":[1,2]}`, 0, `{"a":[1,2]}`, ""},
		{"text becomes string", 200, "hello\n", 0, `"hello\n"`, ""},
		{"empty is null", 204, "", 0, `null`, ""},
		{"at the cap", 200, `"12345678"`, 10, `"12345678"`, ""},
		{"over the cap", 200, `"123456789"`, 10, "", CodeResponseTooLarge},
		{"not found", 404, `{"error":"no such item"}`, 0, "", "http_404"},
		{"bad request", 400, "", 0, "", "http_400"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{body: tc.body, status: func(int) int { return tc.status }}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			out, err := call(t, testTool(t, srv, Endpoint{URL: "SERVER/x", MaxResponseBytes: tc.max}, nil), `{}`)
			if tc.wantCode != "" {
				var te *tools.Error
				if !errors.As(err, &te) || te.Code != tc.wantCode {
					t.Fatalf("err = %v, want code %s", err, tc.wantCode)
				}
				if policy.IsTransient(err) {
					t.Fatalf("%s must not be transient", tc.wantCode)
				}
				return
			}
			if err != nil || string(out) != tc.wantOut {
				t.Fatalf("out = %s, err = %v, want %s", out, err, tc.wantOut)
			}
		})
	}
}

func TestErrorExcerptTrimmed(t *testing.T) {
	rec := &recorder{body: strings.Repeat("é", 2000), status: func(int) int { return 404 }}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	_, err := call(t, testTool(t, srv, Endpoint{URL: "SERVER/x"}, nil), `{}`)
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != "http_404" {
		t.Fatalf("err = %v", err)
	}
	if len(te.Message) > MaxExcerptBytes+100 || !strings.HasSuffix(te.Message, "…") {
		t.Fatalf("message not trimmed: %d bytes", len(te.Message))
	}
}

func TestRetriesOnlyTransient(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		wantCalls int32
		wantCode  string
	}{
		{"429 retried", 429, 3, "http_429"},
		{"503 retried", 503, 3, "http_503"},
		{"500 retried", 500, 3, "http_500"},
		{"400 not retried", 400, 1, "http_400"},
		{"404 not retried", 404, 1, "http_404"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{status: func(int) int { return tc.status }}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			tool := testTool(t, srv, Endpoint{URL: "SERVER/x", Policy: policy.Config{Retries: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}}, nil)
			_, err := call(t, tool, `{}`)
			var te *tools.Error
			if !errors.As(err, &te) || te.Code != tc.wantCode {
				t.Fatalf("err = %v, want %s", err, tc.wantCode)
			}
			if got := rec.hits.Load(); got != tc.wantCalls {
				t.Fatalf("server saw %d calls, want %d", got, tc.wantCalls)
			}
		})
	}
}

func TestRetryThenSuccess(t *testing.T) {
	rec := &recorder{body: `"ok"`, status: func(n int) int {
		if n < 3 {
			return 503
		}
		return 200
	}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	tool := testTool(t, srv, Endpoint{Method: "POST", URL: "SERVER/x", Policy: policy.Config{Retries: 3, BackoffBase: time.Millisecond}}, nil)
	out, err := call(t, tool, `{"a":1}`)
	if err != nil || string(out) != `"ok"` || rec.hits.Load() != 3 {
		t.Fatalf("out=%s err=%v hits=%d", out, err, rec.hits.Load())
	}
	// Every attempt carries the same idempotency key.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.reqs {
		if r.Header.Get("Idempotency-Key") != "ex1/3" {
			t.Fatalf("attempt without idempotency key: %+v", r.Header)
		}
	}
}

func TestTimeout(t *testing.T) {
	rec := &recorder{block: make(chan struct{})}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	defer close(rec.block)
	tool := testTool(t, srv, Endpoint{URL: "SERVER/x", Timeout: 20 * time.Millisecond}, nil)
	_, err := call(t, tool, `{}`)
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != tools.CodeTimeout || !policy.IsTransient(err) {
		t.Fatalf("err = %v, want transient %s", err, tools.CodeTimeout)
	}
}

func TestRedirectsStayOnHost(t *testing.T) {
	var otherKey atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherKey.Store(r.Header.Get("X-Api-Key"))
		_, _ = io.WriteString(w, `"other"`)
	}))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/x", http.StatusFound) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/here", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `"here"`) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s, err := New(Config{Name: "api", LookupEnv: env(map[string]string{"K": "secret"}), Endpoints: []Endpoint{
		{Name: "away", URL: srv.URL + "/away", HeadersFromEnv: map[string]string{"X-Api-Key": "K"}},
		{Name: "moved", URL: srv.URL + "/moved"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := s.Tools()
	if _, err := call(t, ts[0], `{}`); toolErrCode(err) != "http_302" {
		t.Fatalf("cross-host redirect: err = %v, want http_302", err)
	}
	if otherKey.Load() != nil {
		t.Fatal("the header reached another host")
	}
	if out, err := call(t, ts[1], `{}`); err != nil || string(out) != `"here"` {
		t.Fatalf("same-host redirect: %s, %v", out, err)
	}
}

func toolErrCode(err error) string {
	var te *tools.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return ""
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	s, err := New(Config{Name: "api", Endpoints: []Endpoint{{Name: "x", URL: url + "/x"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = call(t, s.Tools()[0], `{}`)
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != CodeUnreachable || !policy.IsTransient(err) {
		t.Fatalf("err = %v, want transient %s", err, CodeUnreachable)
	}
}

func TestArgumentErrors(t *testing.T) {
	srv := httptest.NewServer(&recorder{})
	defer srv.Close()
	cases := []struct {
		name, url, args string
	}{
		{"missing path arg", "SERVER/items/{id}", `{}`},
		{"object path arg", "SERVER/items/{id}", `{"id":{"a":1}}`},
		{"null path arg", "SERVER/items/{id}", `{"id":null}`},
		{"object query arg", "SERVER/s", `{"q":{"a":1}}`},
		{"not an object", "SERVER/s", `[1]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(t, testTool(t, srv, Endpoint{URL: tc.url}, nil), tc.args)
			var te *tools.Error
			if !errors.As(err, &te) || te.Code != tools.CodeInvalidArguments {
				t.Fatalf("err = %v, want %s", err, tools.CodeInvalidArguments)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"bad source name", Config{Name: "9x"}, "invalid"},
		{"bad method", Config{Name: "a", Endpoints: []Endpoint{{Name: "x", Method: "TRACE", URL: "http://h/"}}}, "method"},
		{"placeholder in host", Config{Name: "a", Endpoints: []Endpoint{{Name: "x", URL: "http://{host}/"}}}, "host"},
		{"no scheme", Config{Name: "a", Endpoints: []Endpoint{{Name: "x", URL: "example.com/x"}}}, "http://"},
		{"file scheme", Config{Name: "a", Endpoints: []Endpoint{{Name: "x", URL: "file:///etc/passwd"}}}, "http://"},
		{"user info", Config{Name: "a", Endpoints: []Endpoint{{Name: "x", URL: "http://u:p@h/"}}}, "user info"},
		{"duplicate", Config{Name: "a", Endpoints: []Endpoint{{Name: "x", URL: "http://h/"}, {Name: "x", URL: "http://h/"}}}, "twice"},
		{"bad schema", Config{Name: "a", Endpoints: []Endpoint{{Name: "x", URL: "http://h/", InputSchema: json.RawMessage(`{"type":5}`)}}}, "schema"},
		{"bad header", Config{Name: "a", Endpoints: []Endpoint{{Name: "x", URL: "http://h/", HeadersFromEnv: map[string]string{"A B": "X"}}}}, "header name"},
		{"negative cap", Config{Name: "a", Endpoints: []Endpoint{{Name: "x", URL: "http://h/", MaxResponseBytes: -1}}}, "negative"},
		{"bad policy", Config{Name: "a", Endpoints: []Endpoint{{Name: "x", URL: "http://h/", Policy: policy.Config{Retries: -1}}}}, "retries"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.LookupEnv = env(map[string]string{"X": "1"})
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func FuzzRequest(f *testing.F) {
	f.Add(`{"id":"a/b","q":"x"}`)
	f.Add(`{"id":".."}`)
	f.Add(`{"id":1e400}`)
	f.Add(`[]`)
	e := &endpoint{tool: "api.x", method: "GET", origin: "http://example.com", pathTmpl: "/items/{id}", queryTmp: "q={q}", headers: http.Header{}}
	f.Fuzz(func(t *testing.T, args string) {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(args))
		dec.UseNumber()
		if dec.Decode(&m) != nil {
			return
		}
		req, err := e.request(context.Background(), m)
		if err != nil {
			var te *tools.Error
			if !errors.As(err, &te) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if req.URL.Host != "example.com" || !strings.HasPrefix(req.URL.EscapedPath(), "/items/") || strings.Count(req.URL.EscapedPath(), "/") != 2 {
			t.Fatalf("argument escaped its place: %s", req.URL)
		}
	})
}

func BenchmarkCall(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"ok":true}`) }))
	defer srv.Close()
	s, err := New(Config{Name: "api", Endpoints: []Endpoint{{Name: "x", URL: srv.URL + "/items/{id}"}}, Client: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Tools()[0].Handler
	c := tools.Call{ExecutionID: "e", Seq: 1, IdempotencyKey: "e/1", Arguments: json.RawMessage(`{"id":"42"}`)}
	for b.Loop() {
		if _, err := h(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
}
