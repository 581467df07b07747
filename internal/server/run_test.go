package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/tools/demo"
)

// TestRunAndToolsForTenant: Run and Tools, the entry points of front ends
// other than gRPC, apply the tenant the context carries as Execute and
// ListTools do: its tool set, its ceilings, admission.
func TestRunAndToolsForTenant(t *testing.T) {
	adm, err := admission.New(admission.Config{MaxConcurrent: 1, MaxQueue: 0})
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(newExecutor(t, demo.Tools()...), server.WithAdmission(adm))
	tenant := &auth.Tenant{Name: "t", Tools: []string{"get_team_members"}, Ceilings: limits.Limits{MaxToolCalls: 2}}
	ctx := auth.WithTenant(context.Background(), tenant)

	l, ferr := s.Tools(ctx, core.ToolQuery{})
	if ferr != nil || len(l.Tools) != 1 || l.Tools[0].Name != "get_team_members" {
		t.Fatalf("tools %+v %v", l, ferr)
	}
	if l, _ := s.Tools(context.Background(), core.ToolQuery{}); len(l.Tools) != 3 {
		t.Fatalf("without a tenant: %d tools", len(l.Tools))
	}

	cases := []struct {
		name    string
		req     core.Request
		result  string
		kind    fault.Kind
		code    fault.Code
		message string
	}{
		{"tenant tool", core.Request{Script: core.Script{Source: `return (await tools.get_team_members({department: "engineering"})).length`}}, "20", 0, 0, ""},
		{"tool outside the tenant's set", core.Request{Script: core.Script{Source: `return await tools.get_expenses({member_id: "x", quarter: "Q3"})`}}, "", fault.KindScript, 0, "unknown tool"},
		{"asking for it", core.Request{Script: core.Script{Source: `return 1`}, AllowedTools: []string{"get_expenses"}}, "", 0, fault.CodePermissionDenied, "not among tenant t's tools"},
		{"tenant ceiling", core.Request{Script: core.Script{Source: `for (let i = 0; i < 3; i++) await tools.get_team_members({department: "sales"})`}}, "", fault.KindToolCallLimit, 0, ""},
		{"invalid request", core.Request{Script: core.Script{Source: ``}}, "", 0, fault.CodeInvalidArgument, "source is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, ferr := s.Run(ctx, tc.req)
			if tc.code != 0 {
				if ferr == nil || ferr.Code != tc.code || !strings.Contains(ferr.Message, tc.message) {
					t.Fatalf("err %v, want %s %q", ferr, tc.code, tc.message)
				}
				return
			}
			if ferr != nil {
				t.Fatal(ferr)
			}
			if tc.kind != 0 {
				if res.Error == nil || res.Error.Kind != tc.kind || !strings.Contains(res.Error.Message, tc.message) {
					t.Fatalf("error %v, want %s %q", res.Error, tc.kind, tc.message)
				}
				return
			}
			if res.Error != nil || string(res.Result) != tc.result {
				t.Fatalf("result %s %v", res.Result, res.Error)
			}
		})
	}

	// Admission: with the only slot taken and no queue, Run is refused
	// with RESOURCE_EXHAUSTED and a retry delay.
	release, _, err := adm.Acquire(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, ferr = s.Run(ctx, core.Request{Script: core.Script{Source: `return 1`}})
	release()
	if ferr == nil || ferr.Code != fault.CodeResourceExhausted || ferr.RetryAfter <= 0 {
		t.Fatalf("admission: %+v", ferr)
	}
}
