package mcp

import (
	"encoding/json"
	"fmt"
	"log"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// result maps MCP tool results: text that holds JSON, plain text,
// structured content, and isError.
func Example_result() {
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
		out, err := result("weather.get", &res)
		fmt.Println(string(out), err)
	}
	// Output:
	// {"id":7} <nil>
	// "plain words" <nil>
	// {"temperature":21} <nil>
	//  tool_error: weather.get failed: no such city
}
