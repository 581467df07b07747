package httpsource

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestSpanErrorType: a request's client span says how it ended with the
// HTTP conventions' attributes: the status code, and error.type the status
// code of an error status, or the script's error code for a failure
// without one (a body over the cap, no answer).
func TestSpanErrorType(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	cases := []struct {
		name       string
		status     int
		max        int64
		unreached  bool
		wantStatus string
		wantType   string
	}{
		{"ok", 200, 0, false, "200", ""},
		{"not found", 404, 0, false, "404", "404"},
		{"bad request", 400, 0, false, "400", "400"},
		{"server error", 500, 0, false, "500", "500"},
		{"body over the cap", 200, 4, false, "200", CodeResponseTooLarge},
		{"unreachable", 0, 0, true, "", CodeUnreachable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{body: `"a body"`, status: func(int) int { return tc.status }}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			url := srv.URL + "/items/{id}"
			if tc.unreached {
				url = closedURL + "/items/{id}"
			}
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			defer tp.Shutdown(context.Background())
			s, err := New(Config{Name: "api", Endpoints: []Endpoint{{Name: "get", URL: url, MaxResponseBytes: tc.max}}, TracerProvider: tp})
			if err != nil {
				t.Fatal(err)
			}
			_, err = call(t, s.Tools()[0], `{"id":"i-1"}`)
			if (err != nil) != (tc.wantType != "") {
				t.Fatalf("err = %v", err)
			}
			ended := spans.Ended()
			if len(ended) == 0 {
				t.Fatal("no request span")
			}
			for _, sp := range ended {
				got := map[string]string{}
				for _, a := range sp.Attributes() {
					got[string(a.Key)] = a.Value.Emit()
				}
				if got["http.response.status_code"] != tc.wantStatus || got["error.type"] != tc.wantType ||
					got["url.template"] != "/items/{id}" || got["http.request.method"] != "GET" || got["gen_ai.tool.name"] != "api.get" {
					t.Errorf("span %s attributes %v", sp.Name(), got)
				}
				if isErr := sp.Status().Code == codes.Error; isErr != (tc.wantType != "") {
					t.Errorf("span status %v", sp.Status())
				}
			}
		})
	}
}
