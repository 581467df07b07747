package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/tools"
)

// TestInvalidUTF8NeverReachesTheWire: every conversion of a response
// whose strings come from a script, a tool or a client gives a message
// that marshals (gRPC refuses strings that are not valid UTF-8), with the
// invalid bytes replaced by U+FFFD and valid JSON kept valid.
func TestInvalidUTF8NeverReachesTheWire(t *testing.T) {
	const bad = "a\xffb\xed\xa0\x80c"
	badJSON := json.RawMessage(`{"k":"` + bad + `"}`)
	cases := []struct {
		name string
		msg  func() proto.Message
	}{
		{"result", func() proto.Message {
			return ResultPB(&core.Result{
				ExecutionID:  "x",
				Result:       badJSON,
				ModelMessage: bad,
				Error:        &fault.Error{Kind: fault.KindScript, Message: bad, Stack: bad, Tool: bad},
				Logs:         []core.LogEntry{{Level: "log", Message: bad}},
				Trace:        []core.Record{{Seq: 1, Tool: bad, Arguments: badJSON, ErrorCode: "x", ErrorMessage: bad, Result: badJSON}},
				Pending:      []core.Action{{CallID: "1", Tool: bad, Arguments: badJSON, Reason: bad}},
			})
		}},
		{"error", func() proto.Message { return ErrorPB(&fault.Error{Message: bad, Stack: bad, Tool: bad}) }},
		{"action", func() proto.Message { return ActionPB(core.Action{Tool: bad, Arguments: badJSON, Reason: bad}) }},
		{"answer output", func() proto.Message { return AnswerPB(core.Answer{CallID: "1", Output: badJSON}) }},
		{"answer error", func() proto.Message {
			return AnswerPB(core.Answer{CallID: "1", Error: &tools.Error{Code: bad, Message: bad}})
		}},
		{"progress", func() proto.Message {
			return ProgressPB(&core.CallEvent{Seq: 1, Tool: bad, Arguments: badJSON, Finished: true, ErrorMessage: bad, Result: badJSON}, true, 0)
		}},
		{"tool call", func() proto.Message {
			return ToolCallPB("1", tools.Call{Tool: bad, Arguments: badJSON}, time.Time{}, "", "")
		}},
		{"tool result", func() proto.Message { return ToolResultPB("1", badJSON, nil) }},
		{"tool error", func() proto.Message { return ToolResultPB("1", nil, errors.New(bad)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := proto.Marshal(c.msg())
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if !strings.Contains(string(b), "a\uFFFDb") {
				t.Errorf("no U+FFFD in the message: %q", b)
			}
		})
	}
}

// TestJSONTextStaysJSON: replacing invalid bytes keeps a JSON text valid.
func TestJSONTextStaysJSON(t *testing.T) {
	for _, in := range []string{"\"\xff\"", "{\"a\":\"\xed\xa0\x80\"}", "[\"ok\",\"\xc3\"]", "{\"\xff\":1}"} {
		out := jsonText([]byte(in))
		if !json.Valid([]byte(out)) || !strings.Contains(out, "\uFFFD") {
			t.Errorf("jsonText(%q) = %q", in, out)
		}
	}
	if s := "plain ✓"; text(s) != s || jsonText([]byte(`"`+s+`"`)) != `"`+s+`"` {
		t.Error("valid text changed")
	}
}
