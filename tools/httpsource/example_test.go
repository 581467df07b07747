package httpsource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/httpsource"
)

func ExampleNew() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"path":%q,"auth":%q,"key":%q}`, r.URL.EscapedPath(), r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"))
	}))
	defer api.Close()

	vars := map[string]string{"ISSUES_AUTH": "Bearer t0ken"}
	src, err := httpsource.New(httpsource.Config{
		Name: "issues",
		Endpoints: []httpsource.Endpoint{{
			Name:           "get",
			URL:            api.URL + "/repos/{repo}/issues/{number}",
			HeadersFromEnv: map[string]string{"Authorization": "ISSUES_AUTH"},
			InputSchema:    json.RawMessage(`{"type":"object","required":["repo","number"]}`),
		}},
		LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
	})
	if err != nil {
		log.Fatal(err)
	}
	get := src.Tools()[0]
	out, err := get.Handler(context.Background(), tools.Call{
		ExecutionID: "ex1", Seq: 1, IdempotencyKey: "ex1/1",
		Arguments: json.RawMessage(`{"repo":"a/b","number":42}`),
	})
	fmt.Println(get.Name, string(out), err)
	// Output: issues.get {"path":"/repos/a%2Fb/issues/42","auth":"Bearer t0ken","key":"ex1/1"} <nil>
}
