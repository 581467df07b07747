package service

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/tools"
)

func TestMain(m *testing.M) {
	// A Runtime with worker processes re-executes this test binary.
	if code, ok := worker.Main(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestStartSources(t *testing.T) {
	var gotKey string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("X-Api-Key")
		_, _ = w.Write([]byte(`{"id":"` + strings.TrimPrefix(r.URL.Path, "/items/") + `"}`))
	}))
	defer hs.Close()
	yaml := `tool_sources:
  - name: api
    type: http
    headers_from_env: {X-Api-Key: API_KEY}
    tools:
      - name: get
        url: ` + hs.URL + `/items/{id}
        input_schema:
          type: object
          properties: {id: {type: string}}
          required: [id]
  - name: gone
    type: mcp_stdio
    command: /nonexistent/server
    required: false
    allow: [search]
`
	c, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("missing variable", func(t *testing.T) {
		if _, err := startSources(context.Background(), c, env(nil), nil, telemetry.Tracing{}); err == nil || !strings.Contains(err.Error(), "API_KEY") {
			t.Fatalf("err = %v, want it to name API_KEY", err)
		}
	})
	t.Run("started", func(t *testing.T) {
		srcs, err := startSources(context.Background(), c, env(map[string]string{"API_KEY": "k1"}), nil, telemetry.Tracing{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			for _, s := range srcs {
				_ = s.Close()
			}
		}()
		reg := tools.NewRegistry()
		for _, s := range srcs {
			for _, tl := range s.Tools() {
				if err := reg.Register(tl); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := strings.Join(reg.Names(), ","); got != "api.get,gone.search" {
			t.Fatalf("tools = %s", got)
		}
		get, _ := reg.Lookup("api.get")
		out, err := get.Handler(context.Background(), tools.Call{Arguments: json.RawMessage(`{"id":"a b"}`)})
		if err != nil || string(out) != `{"id":"a b"}` || gotKey != "k1" {
			t.Fatalf("out=%s err=%v key=%q", out, err, gotKey)
		}
		gone, _ := reg.Lookup("gone.search")
		if _, err := gone.Handler(context.Background(), tools.Call{}); err == nil || !strings.Contains(err.Error(), "unavailable") {
			t.Fatalf("optional unreachable source: err = %v", err)
		}
	})
}

// TestStartErrorsNameTheKey checks that a variable the file names but the
// environment does not set fails start-up naming the key.
func TestStartErrorsNameTheKey(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"tool_sources:\n  - name: gh\n    type: mcp_http\n    url: https://h/mcp\n    headers_from_env: {Authorization: GITHUB_AUTH}\n",
			"config: tool_sources[0].headers_from_env.Authorization names the environment variable GITHUB_AUTH, which is not set: set it before starting ptcd"},
		{"tool_sources:\n  - name: ev\n    type: mcp_stdio\n    command: x\n    env_from_env: {API_TOKEN: EV_TOKEN}\n",
			"config: tool_sources[0].env_from_env.API_TOKEN names the environment variable EV_TOKEN, which is not set: set it before starting ptcd"},
	}
	for _, tc := range cases {
		c, err := config.Parse([]byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		_, err = startSources(context.Background(), c, env(nil), nil, telemetry.Tracing{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("\ngot  %v\nwant %s", err, tc.want)
		}
	}
}

type fakeSource struct {
	name string
	up   bool
}

func (f fakeSource) Name() string      { return f.name }
func (fakeSource) Tools() []tools.Tool { return nil }
func (fakeSource) OnChange(func())     {}
func (fakeSource) Close() error        { return nil }
func (f fakeSource) Available() bool   { return f.up }
func boolPtr(b bool) *bool             { return &b }

func TestSourcesReady(t *testing.T) {
	c := config.Default()
	c.ToolSources = []config.ToolSource{{Name: "req", Required: boolPtr(true)}, {Name: "opt", Required: boolPtr(false)}}
	cases := []struct {
		name    string
		sources []Source
		want    string
	}{
		{"all up", []Source{fakeSource{"req", true}, fakeSource{"opt", true}}, ""},
		{"optional down", []Source{fakeSource{"req", true}, fakeSource{"opt", false}}, ""},
		{"required down", []Source{fakeSource{"req", false}, fakeSource{"opt", true}}, "required tool source req is unavailable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := sourcesReady(c, tc.sources)
			if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
