package wire

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/limits"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// nopObserver is a core.CallObserver that does nothing.
type nopObserver struct{}

func (nopObserver) CallStarted(ctx context.Context, _ *core.CallEvent) context.Context { return ctx }
func (nopObserver) CallFinished(context.Context, *core.CallEvent)                      {}

// carriedRequestFields set each core.Request field the wire carries to a
// value other than its zero (with what it needs to travel); the field must
// come back from RequestPB and RequestFromPB equal.
var carriedRequestFields = map[string]func(*core.Request){
	"ExecutionID":        func(r *core.Request) { r.ExecutionID = "ex-1" },
	"Language":           func(r *core.Request) { r.Language = core.LanguageTypeScript },
	"Source":             func(r *core.Request) { r.Source = "return 2" },
	"Module":             func(r *core.Request) { r.Module = []byte{0, 'a', 's', 'm'} },
	"ModuleSHA256":       func(r *core.Request) { r.ModuleSHA256 = "ab" },
	"Input":              func(r *core.Request) { r.Input = json.RawMessage(`{"a":1}`) },
	"Limits":             func(r *core.Request) { r.Limits = limits.Limits{Timeout: time.Second, MaxToolCalls: 3} },
	"AllowedTools":       func(r *core.Request) { r.AllowedTools = []string{"x"} },
	"NoServerTools":      func(r *core.Request) { r.NoServerTools = true },
	"ResultSchema":       func(r *core.Request) { r.ResultSchema = json.RawMessage(`{"type":"number"}`) },
	"IncludeToolResults": func(r *core.Request) { r.IncludeToolResults = true },
	"Deterministic":      func(r *core.Request) { r.Deterministic = true },
	"Seed":               func(r *core.Request) { r.Seed = 9 },
	"ClockStart":         func(r *core.Request) { r.ClockStart, r.ClockStartSet = time.Unix(100, 5).UTC(), true },
	"ClockStartSet":      func(r *core.Request) { r.ClockStartSet = true },
	"Overflow":           func(r *core.Request) { r.Overflow = core.OverflowTruncate },
	"Resumable":          func(r *core.Request) { r.Resumable = true },
	"RequireApproval":    func(r *core.Request) { r.RequireApproval = []string{"x"} },
	// Client tools travel in a resumable Execute; a Session sends them in
	// SessionStart.client_tools (ptc.Client.Run).
	"ClientTools": func(r *core.Request) {
		r.Resumable = true
		r.ClientTools = []tools.Tool{{Definition: tools.Definition{Name: "mine", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	},
	// Progress values are asked for only with an observer to send them to.
	"ProgressValues": func(r *core.Request) { r.Observer, r.ProgressValues = nopObserver{}, true },
}

// localRequestFields are core.Request fields that deliberately do not
// travel as values, and why.
var localRequestFields = map[string]string{
	"OnLog":    "a callback: the wire carries stream_logs, and ptc.Client.Run delivers the LogEntry messages to it",
	"Observer": "a callback: the wire carries stream_progress, and ptc.Client.Run delivers the ToolProgress messages to it",
	"Approve":  "a callback: a Session asks the caller through ApprovalRequest messages, ptc.Client.Run answers with it",
	"Tenant":   "set by the server from the caller's credentials, never by the caller",
}

// requestFieldNames lists core.Request's fields, those of its embedded
// structs in their place.
func requestFieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, requestFieldNames(f.Type)...)
			continue
		}
		out = append(out, f.Name)
	}
	return out
}

// TestEveryRequestFieldTravels: each field of core.Request either survives
// the wire conversion or is listed as deliberately local — so a field
// added to the request model cannot silently vanish when the request goes
// to a remote server.
func TestEveryRequestFieldTravels(t *testing.T) {
	names := requestFieldNames(reflect.TypeOf(core.Request{}))
	for _, name := range names {
		_, carried := carriedRequestFields[name]
		_, local := localRequestFields[name]
		if carried == local {
			t.Errorf("core.Request.%s: list it in carriedRequestFields (with a wire field carrying it) or in localRequestFields (with the reason it stays local)", name)
		}
	}
	for name := range carriedRequestFields {
		if _, ok := reflect.TypeOf(core.Request{}).FieldByName(name); !ok {
			t.Errorf("carriedRequestFields names %s, which core.Request does not have", name)
		}
	}
	for name, set := range carriedRequestFields {
		t.Run(name, func(t *testing.T) {
			in := core.Request{Script: core.Script{Language: core.LanguageJavaScript, Source: "return 1"}}
			set(&in)
			b, err := proto.Marshal(RequestPB(in))
			if err != nil {
				t.Fatal(err)
			}
			var pb ptcv1.ExecuteRequest
			if err := proto.Unmarshal(b, &pb); err != nil {
				t.Fatal(err)
			}
			got, ferr := RequestFromPB(&pb)
			if ferr != nil {
				t.Fatal(ferr)
			}
			want := reflect.ValueOf(in).FieldByName(name).Interface()
			if back := reflect.ValueOf(got).FieldByName(name).Interface(); !reflect.DeepEqual(back, want) {
				t.Fatalf("sent %#v, came back %#v", want, back)
			}
			if reflect.ValueOf(want).IsZero() {
				t.Fatal("the setter leaves the field at its zero value")
			}
		})
	}
}
