package mcp_test

import (
	"context"
	"fmt"
	"log"
	"time"

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
