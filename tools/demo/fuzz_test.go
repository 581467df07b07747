package demo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ptcrun/ptc/tools"
)

// FuzzHandlers feeds arbitrary argument bytes to every demo handler, as a
// caller that skips the bridge's validation might. Each call must either
// return a result that matches the tool's output schema or fail with a
// classified *tools.Error, and never panic.
func FuzzHandlers(f *testing.F) {
	for _, seed := range []string{
		``,
		`{}`,
		`null`,
		`[]`,
		`{"department":"engineering"}`,
		`{"member_id":"eng-07","quarter":"Q3"}`,
		`{"member_id":"eng-99","quarter":"Q3"}`,
		`{"level":"staff"}`,
		`{"level":"staff"}{"level":"mid"}`,
		`{"member_id":"\u0000","quarter":"Q0"}`,
		`{"department":1e999}`,
	} {
		f.Add([]byte(seed))
	}
	s := newSet(f)
	f.Fuzz(func(t *testing.T, args []byte) {
		for name, c := range s {
			out, err := c.Handler(context.Background(), tools.Call{Tool: name, Arguments: args})
			if err != nil {
				var te *tools.Error
				if !errors.As(err, &te) {
					t.Fatalf("%s(%q): error %v is not a *tools.Error", name, args, err)
				}
				switch te.Code {
				case "invalid_arguments", "not_found":
				default:
					t.Fatalf("%s(%q): unexpected code %q", name, args, te.Code)
				}
				continue
			}
			vs, verr := c.Output.Validate(out)
			if verr != nil || len(vs) > 0 {
				t.Fatalf("%s(%q): result does not match the output schema: %v %s", name, args, verr, tools.FormatViolations(vs))
			}
		}
	})
}
