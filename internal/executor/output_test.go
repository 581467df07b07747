package executor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/truncate"
)

// TestFitOutputTooManyValues: a result with more values than truncation
// cuts is OUTPUT_LIMIT against the limit it is over, saying what to do.
func TestFitOutputTooManyValues(t *testing.T) {
	res := json.RawMessage("[" + strings.Repeat("0,", truncate.MaxValues) + "0]")
	cases := []struct {
		name   string
		l      limits.Limits
		limit  int64
		suffix string
	}{
		{"bytes", limits.Limits{MaxOutputBytes: 1024}, 1024, "or raise max_output_bytes / max_result_tokens until it fits whole"},
		{"tokens", limits.Limits{MaxOutputBytes: 4 << 20, MaxResultTokens: 1000}, 1000, "or raise max_output_bytes / max_result_tokens until it fits whole"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := &runtime.Outcome{Result: res}
			var st core.Stats
			fitOutput(out, tc.l, core.OverflowTruncate, &st)
			e := out.Err
			if e == nil || e.Kind != fault.KindOutputLimit || e.Limit != tc.limit || out.Result != nil || st.ResultTruncated {
				t.Fatalf("err %+v, stats %+v", e, st)
			}
			want := "with more than 524288 values, more than the overflow policy truncate cuts down; return less"
			if !strings.Contains(e.Message, want) || !strings.HasSuffix(e.Message, tc.suffix) {
				t.Fatalf("message %q", e.Message)
			}
		})
	}
}
