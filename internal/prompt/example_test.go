package prompt_test

import (
	"fmt"
	"time"

	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/prompt"
)

func ExamplePrompt() {
	fmt.Print(prompt.Prompt(prompt.Options{Limits: limits.Limits{Timeout: 20 * time.Second, MaxToolCalls: 50, MaxOutputBytes: 256 << 10}}))
	// Output:
	// Write a JavaScript (ES2022) script for the task. It is the body of an async function: use top-level await and end with `return <value>`.
	// - Return only what the task needs, as a small JSON value: filter and summarise in the script. Tool results you do not return never reach you.
	// - `tools.<name>(args)` takes one JSON object and returns a Promise of the tool's parsed JSON result; dotted names nest (`tools.github.search_issues({...})`). Only the declared tools exist.
	// - Run independent calls together with `Promise.all`.
	// - A failed call rejects with `{name, tool, code, message, errors?}`; name is ToolArgumentError (bad arguments; errors lists why), ToolError or ToolCallLimitError. Use try/catch and check err.code; an uncaught error fails the script.
	// - `input` holds the request's input value.
	// - console.log/info/warn/error go to logs that are never returned to you.
	// - Limits: 20s in total, at most 50 tool calls, result at most 256 KiB of JSON.
	// - Not available: require, import, fetch, timers (setTimeout, setInterval), filesystem, network.
}

func ExampleApproxTokens() {
	fmt.Println(prompt.ApproxTokens("await tools.weather.current({city: \"Oslo\"})"))
	// Output: 15
}
