package ptc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/ptcrun/ptc/internal/executor"
	"net"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// serve starts a ptc server with the demo tools on a loopback port, as
// ptcd --demo-tools does, and returns its address and a stop function.
func serve() (string, func()) {
	reg := tools.NewRegistry()
	if err := reg.Register(demo.Tools()...); err != nil {
		panic(err)
	}
	r, err := executor.New(executor.Config{Registry: reg})
	if err != nil {
		panic(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	gs := grpc.NewServer()
	ptcv1.RegisterRunnerServiceServer(gs, server.New(r))
	go func() { _ = gs.Serve(lis) }()
	return lis.Addr().String(), gs.Stop
}

// Execute runs a script against the server's own tools.
func ExampleClient_Execute() {
	addr, stop := serve()
	defer stop()

	c, err := ptc.Dial(addr)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	res, err := c.Execute(context.Background(), ptc.Request{
		Source: `const b = await tools.get_budget_by_level({level: "senior"}); return b.travel_limit`,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Result), res.Stats.ToolCalls)
	// Output: 3000 1
}

// Run serves a tool from this process: the script's calls to it travel
// back over the Session stream, mixed freely with the server's tools.
func ExampleClient_Run() {
	addr, stop := serve()
	defer stop()

	c, err := ptc.Dial(addr)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	approve := tools.Tool{
		Definition: tools.Definition{
			Name:        "crm.approve",
			Description: "Approve an overspend.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`),
		},
		Handler: func(ctx context.Context, call tools.Call) (json.RawMessage, error) {
			var in struct{ ID string }
			if err := json.Unmarshal(call.Arguments, &in); err != nil {
				return nil, err
			}
			return json.Marshal("approved " + in.ID)
		},
	}
	res, err := c.Run(context.Background(), ptc.Request{Source: `
const team = await tools.get_team_members({department: "sales"});
return await tools.crm.approve({id: team[0].id});`}, approve)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Result))
	for _, call := range res.Trace {
		fmt.Println(call.Seq, call.Tool, call.OK)
	}
	// Output:
	// "approved sal-01"
	// 1 get_team_members true
	// 2 crm.approve true
}
