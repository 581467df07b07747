package metrics_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ptcrun/ptc/internal/metrics"
)

func ExampleMetrics_Handler() {
	m := metrics.New(metrics.Gauges{})
	m.ObserveExecution(metrics.Execution{Language: "javascript", Outcome: metrics.OutcomeOK, Duration: 20 * time.Millisecond})

	srv := httptest.NewServer(m.Handler(func() error { return nil }))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "ptc_executions_total") {
			fmt.Println(line)
		}
	}
	// Output: ptc_executions_total{language="javascript",outcome="ok"} 1
}
