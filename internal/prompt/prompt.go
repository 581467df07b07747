// Package prompt writes the compact instructions that tell a model how to
// write a ptc script: the async body, the tools object, parallel calls,
// error handling, logging, limits and what is not available. Pair it with
// the tool declarations from package tsdecl.
//
// Package prompt imports only internal/limits.
package prompt

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ptcrun/ptc/internal/limits"
)

// Options are the facts the prompt states.
type Options struct {
	// TypeScript asks for TypeScript rather than JavaScript.
	TypeScript bool
	// Python asks for Python (it wins over TypeScript).
	Python bool
	// Limits are the effective limits of the execution; the prompt states
	// its timeout, tool-call budget and result size, and a zero field of
	// the three takes ptc's default.
	Limits limits.Limits
}

// Prompt returns the instructions, a few hundred tokens of plain text.
func Prompt(opts Options) string {
	d := limits.Defaults()
	if opts.Limits.Timeout <= 0 {
		opts.Limits.Timeout = d.Timeout
	}
	if opts.Limits.MaxToolCalls <= 0 {
		opts.Limits.MaxToolCalls = d.MaxToolCalls
	}
	if opts.Limits.MaxOutputBytes <= 0 {
		opts.Limits.MaxOutputBytes = d.MaxOutputBytes
	}
	if opts.Python {
		return python(opts)
	}
	lang := "JavaScript (ES2022)"
	if opts.TypeScript {
		lang = "TypeScript"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Write a %s script for the task. It is the body of an async function: use top-level await and end with `return <value>`.\n", lang)
	b.WriteString("- Return only what the task needs, as a small JSON value: filter and summarise in the script. Tool results you do not return never reach you.\n")
	b.WriteString("- `tools.<name>(args)` takes one JSON object and returns a Promise of the tool's parsed JSON result; dotted names nest (`tools.github.search_issues({...})`). Only the declared tools exist.\n")
	b.WriteString("- Run independent calls together with `Promise.all`.\n")
	b.WriteString("- A failed call rejects with `{name, tool, code, message, errors?}`; name is ToolArgumentError (bad arguments; errors lists why), ToolError or ToolCallLimitError. Use try/catch and check err.code; an uncaught error fails the script.\n")
	b.WriteString("- `input` holds the request's input value.\n")
	b.WriteString("- console.log/info/warn/error go to logs that are never returned to you.\n")
	writeLimits(&b, opts)
	b.WriteString("- Not available: require, import, fetch, timers (setTimeout, setInterval), filesystem, network.\n")
	return b.String()
}

// duration renders d compactly: "30s", "2m", "1m30s", "500ms".
func duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d < time.Minute || d%time.Second != 0:
		return d.Round(time.Second).String()
	}
	return d.String()
}

// byteSize renders n in the largest binary unit that divides it, e.g.
// "1 MiB", "64 KiB", "1500 bytes".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ApproxTokens estimates how many tokens a language-model tokenizer makes
// of s, without a vocabulary: every run of ASCII letters and digits counts
// one token per started six bytes (most words are one token), every run of
// ASCII punctuation one token per started two characters (tokenizers merge
// pairs such as "({" or "];"), every other non-space character (each
// non-ASCII letter, symbol or emoji) one token, and white space nothing.
// English prose comes out at about 3.8 bytes per token, close to the four
// bytes per token usually quoted for BPE tokenizers. It is an estimate for
// budgets, not a tokenizer; it is deterministic and linear in len(s).
func ApproxTokens(s string) int {
	n := 0
	word, punct := 0, 0
	flush := func() {
		n += (word+5)/6 + (punct+1)/2
		word, punct = 0, 0
	}
	for len(s) > 0 {
		c := s[0]
		if c < utf8.RuneSelf {
			s = s[1:]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
				if punct > 0 {
					flush()
				}
				word++
			case c == ' ', c == '\t', c == '\n', c == '\r', c == '\v', c == '\f':
				flush()
			case c < 0x20 || c == 0x7f:
				flush()
				n++
			default:
				if word > 0 {
					flush()
				}
				punct++
			}
			continue
		}
		flush()
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if !unicode.IsSpace(r) {
			n++
		}
	}
	flush()
	return n
}

// writeLimits writes the line of the limits a script runs under, the
// same in every language.
func writeLimits(b *strings.Builder, opts Options) {
	l := opts.Limits
	calls := "calls"
	if l.MaxToolCalls == 1 {
		calls = "call"
	}
	fmt.Fprintf(b, "- Limits: %s in total, at most %d tool %s, result at most %s of JSON.\n",
		duration(l.Timeout), l.MaxToolCalls, calls, byteSize(l.MaxOutputBytes))
}

// python is the prompt for Python scripts.
func python(opts Options) string {
	var b strings.Builder
	b.WriteString("Write a Python 3.12 script for the task. It is the body of an async function: use top-level await and end with `return <value>`.\n")
	b.WriteString("- Return only what the task needs, as a small JSON value (dict, list, str, int, float, bool, None): filter and summarise in the script. Tool results you do not return never reach you.\n")
	b.WriteString("- `await tools.<name>(key=value, ...)` (or one dict of arguments) returns the tool's parsed JSON result; names that are not identifiers: `tools[\"shop.price\"](...)`. Only the declared tools exist (their declarations are in TypeScript; arguments and results are the same JSON).\n")
	b.WriteString("- Run independent calls together with `await asyncio.gather(...)` (or the global `gather`).\n")
	b.WriteString("- A failed call raises `ToolError` with .name (ToolArgumentError, ToolError or ToolCallLimitError), .code, .message and .errors; catch it with try/except and check e.code; an uncaught one fails the script.\n")
	b.WriteString("- `input` holds the request's input value (None when absent).\n")
	b.WriteString("- print() and logging go to logs that are never returned to you.\n")
	writeLimits(&b, opts)
	b.WriteString("- The standard library works (json, re, datetime, decimal, collections, dataclasses, math, statistics, …); not available: pip packages, files, network, subprocesses, threads; asyncio offers gather, create_task, sleep, wait_for, Lock and Semaphore.\n")
	return b.String()
}
