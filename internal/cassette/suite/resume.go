package suite

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
)

// The resumable cases: the execution pauses at approvals and client tool
// calls; step n of resumes answers pause n. Resumes alternate between the
// runner that paused (which goes on from memory) and a second runner with
// the same key (which re-runs the script from the continuation), so a
// case checks both.

// resumableRequest makes req resumable as the case says.
func (c *Case) resumableRequest(req *ptc.Request) error {
	s := &c.spec
	req.Resumable = true
	req.RequireApproval = s.RequireApproval
	for i, d := range s.ClientTools {
		field := fmt.Sprintf("client_tools[%d]", i)
		if err := tools.ValidateName(d.Name); err != nil {
			return fmt.Errorf("%s: %s: %v", c.File, field, err)
		}
		in, err := c.jsonOf(field+".input_schema", &d.InputSchema)
		if err != nil {
			return err
		}
		out, err := c.jsonOf(field+".output_schema", &d.OutputSchema)
		if err != nil {
			return err
		}
		req.ClientTools = append(req.ClientTools, tools.Tool{Definition: tools.Definition{Name: d.Name, Description: d.Description, InputSchema: in, OutputSchema: out}})
	}
	return nil
}

// runResumable runs a resumable case to its end and returns its result,
// or why it could not get there.
func (c *Case) runResumable(ctx context.Context, req ptc.Request, opts []ptc.Option) (*ptc.Result, string) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	d := ptc.WithDurable(ptc.Durable{Keys: map[string][]byte{"case": key}, SigningKey: "case"})
	var runners [2]*ptc.Runner
	for i := range runners {
		r, err := ptc.NewRunner(append(slices.Clone(opts), d)...)
		if err != nil {
			return nil, fmt.Sprintf("%s: the tools cannot be set up: %v", c.File, err)
		}
		defer r.Close()
		runners[i] = r
	}
	res, err := runners[0].Execute(ctx, req)
	if err != nil {
		return nil, fmt.Sprintf("the request was rejected: %v", err)
	}
	steps := c.spec.Resumes
	for n := 0; res.RequiresAction(); n++ {
		if n == len(steps) {
			return nil, fmt.Sprintf("the execution paused a %d. time, waiting for %s; add a step to resumes", n+1, pendingList(res.Pending))
		}
		answers, fail := c.answers(n, steps[n], res.Pending)
		if fail != "" {
			return nil, fail
		}
		// Even steps go on from memory, odd ones re-run.
		if res, err = runners[n%2].Resume(ctx, res.Continuation, answers...); err != nil {
			return nil, fmt.Sprintf("resumes[%d] was refused: %v", n, err)
		}
		if n == len(steps)-1 && res.RequiresAction() {
			return nil, fmt.Sprintf("the execution paused again after the last step of resumes, waiting for %s", pendingList(res.Pending))
		}
	}
	return res, ""
}

// answers answers one pause with one step.
func (c *Case) answers(n int, st resumeStep, pending []ptc.Action) ([]ptc.Answer, string) {
	var got []string
	for _, a := range pending {
		got = append(got, a.Tool)
	}
	if st.Pending != nil && strings.Join(got, ",") != strings.Join(st.Pending, ",") {
		return nil, fmt.Sprintf("pause %d waits for [%s], resumes[%d].pending says [%s]", n+1, strings.Join(got, ", "), n, strings.Join(st.Pending, ", "))
	}
	var out []ptc.Answer
	for _, a := range pending {
		ans := ptc.Answer{CallID: a.CallID}
		switch {
		case a.Approval && (slices.Contains(st.Approve, a.Tool) || slices.Contains(st.Approve, "all")):
			ans.Approve = true
		case a.Approval && st.Deny[a.Tool] != "":
			ans.Deny, ans.Reason = true, st.Deny[a.Tool]
		case !a.Approval && st.Fail[a.Tool] != nil:
			ans.Error = &tools.Error{Code: st.Fail[a.Tool].Code, Message: st.Fail[a.Tool].Message}
		case !a.Approval && st.Answer[a.Tool].Kind != 0:
			node := st.Answer[a.Tool]
			b, err := c.jsonOf(fmt.Sprintf("resumes[%d].answer.%s", n, a.Tool), &node)
			if err != nil {
				return nil, err.Error()
			}
			ans.Output = json.RawMessage(b)
		default:
			what := "an answer (answer or fail)"
			if a.Approval {
				what = "a decision (approve or deny)"
			}
			return nil, fmt.Sprintf("resumes[%d] gives tools.%s(%s) (%s) no %s", n, a.Tool, a.Arguments, a.CallID, what)
		}
		out = append(out, ans)
	}
	return out, ""
}

func pendingList(ps []ptc.Action) string {
	var s []string
	for _, a := range ps {
		kind := "its output"
		if a.Approval {
			kind = "approval"
		}
		s = append(s, fmt.Sprintf("%s (%s)", a.Tool, kind))
	}
	return strings.Join(s, ", ")
}
