// Package mcptest runs independent MCP clients against ptc's MCP server in
// acceptance tests: RunTSClient drives the official TypeScript SDK client
// (ts-client.mjs, on the @modelcontextprotocol/sdk the root package.json
// pins) through a Plan and returns its Report. Assertions stay in the
// tests.
package mcptest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ptcrun/ptc/internal/testenv"
)

// Step is one tool call of a Plan.
type Step struct {
	Name      string `json:"name"`
	Tool      string `json:"tool"`
	Arguments any    `json:"arguments"`
	// Progress asks for progress notifications (the client sends a
	// progress token).
	Progress bool `json:"progress"`
}

// Plan says how the client connects and what it calls.
type Plan struct {
	// Transport is "stdio" (Command, Args, Env start the server) or "http"
	// (URL, with Token as a bearer token when set).
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	URL       string            `json:"url,omitempty"`
	Token     string            `json:"token,omitempty"`
	// ExpectConnectError makes the connection's failure the expected
	// outcome.
	ExpectConnectError bool   `json:"expectConnectError,omitempty"`
	Steps              []Step `json:"steps"`
}

// StepResult is what one call answered.
type StepResult struct {
	IsError           bool            `json:"isError"`
	Text              string          `json:"text"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Meta              map[string]any  `json:"meta"`
	// Progress are the call's progress notifications in the order they
	// came off the wire before its answer.
	Progress []Progress `json:"progress"`
	// LateProgress are notifications that came after the call's answer
	// or carried a token of no call in flight: the server broke its
	// promise to send every notification before the answer.
	LateProgress []Progress `json:"lateProgress"`
	// SDKProgress counts the notifications the SDK's onprogress callback
	// delivered; it can miss those read together with the answer (see
	// ts-client.mjs), so tests only log it.
	SDKProgress int `json:"sdkProgress"`
	// Error is a protocol or transport failure of the call.
	Error string `json:"error"`
}

// Progress is one progress notification.
type Progress struct {
	Progress float64 `json:"progress"`
	Message  string  `json:"message"`
	// Token is set only on a notification for no call in flight.
	Token any `json:"progressToken,omitempty"`
}

// Report is what the client saw.
type Report struct {
	ConnectError *string `json:"connectError"`
	Tools        []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		// Bytes is the length of the tool's JSON as tools/list sent it.
		Bytes int `json:"bytes"`
	} `json:"tools"`
	Steps map[string]StepResult `json:"steps"`
}

// RunTSClient runs the TypeScript SDK client through plan. It skips the
// test when node or the SDK is missing, except on CI (CI=true), where
// .ci/run installs them.
func RunTSClient(tb testing.TB, plan Plan) Report {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	testenv.NodeModule(tb, "@modelcontextprotocol/sdk/package.json")
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := json.Marshal(plan)
	if err != nil {
		tb.Fatal(err)
	}
	planFile := filepath.Join(tb.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, raw, 0o600); err != nil {
		tb.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(node, filepath.Join(dir, "ts-client.mjs"), planFile)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("the TypeScript client failed: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var r Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		tb.Fatalf("the TypeScript client's report: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return r
}
