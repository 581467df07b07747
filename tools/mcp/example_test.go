package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/mcp"
	"github.com/ptcrun/ptc/tools/policy"
)

// Start a stdio MCP server and register its tools; follow changes to its
// tool list. (Not run: it needs the server installed.)
func ExampleStart() {
	src, err := mcp.Start(context.Background(), mcp.Config{
		Name:     "everything",
		Command:  "node_modules/.bin/mcp-server-everything",
		Args:     []string{"stdio"},
		Required: true,
		Allow:    []string{"echo", "get-*"},
		Policy:   policy.Config{Timeout: 10 * time.Second, Retries: 2},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	src.OnChange(func() {
		// Re-read src.Tools() and swap them into the registry.
	})
	reg := tools.NewRegistry()
	for _, t := range src.Tools() {
		if err := reg.Register(t); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(reg.Names())
}

func ExampleResult() {
	for _, doc := range []string{
		`{"content":[{"type":"text","text":"{\"id\":7}"}]}`,
		`{"content":[{"type":"text","text":"plain words"}]}`,
		`{"content":[],"structuredContent":{"temperature":21}}`,
		`{"content":[{"type":"text","text":"no such city"}],"isError":true}`,
	} {
		var res sdk.CallToolResult
		if err := json.Unmarshal([]byte(doc), &res); err != nil {
			log.Fatal(err)
		}
		out, err := mcp.Result("weather.get", &res)
		fmt.Println(string(out), err)
	}
	// Output:
	// {"id":7} <nil>
	// "plain words" <nil>
	// {"temperature":21} <nil>
	//  tool_error: weather.get failed: no such city
}
