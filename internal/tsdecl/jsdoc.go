package tsdecl

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/ptcrun/ptc/tools"
)

// maxDocValue bounds a value (default, example) quoted in JSDoc.
const maxDocValue = 200

// maxExamples bounds the examples quoted per schema.
const maxExamples = 3

// schemaDoc returns the JSDoc lines for a schema: its description (or
// title) and tags for the keywords TypeScript cannot express.
func (c *converter) schemaDoc(n any) []string {
	s, ok := n.(map[string]any)
	if !ok {
		return nil
	}
	var lines []string
	text, _ := s["description"].(string)
	if text == "" {
		text, _ = s["title"].(string)
	}
	lines = append(lines, textLines(text)...)
	if d, _ := s["deprecated"].(bool); d {
		lines = append(lines, "@deprecated")
	}
	if f, ok := s["format"].(string); ok {
		lines = append(lines, "@format "+oneLine(f))
	}
	for _, kw := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
		"minLength", "maxLength", "minItems", "maxItems"} {
		if v, ok := s[kw].(json.Number); ok {
			lines = append(lines, "@"+kw+" "+string(v))
		}
	}
	if p, ok := s["pattern"].(string); ok {
		lines = append(lines, "@pattern "+oneLine(p))
	}
	if v, ok := s["default"]; ok {
		lines = append(lines, "@default "+docValue(v))
	}
	if ex, ok := s["examples"].([]any); ok {
		for i, v := range ex {
			if i == maxExamples {
				break
			}
			lines = append(lines, "@example "+docValue(v))
		}
	} else if v, ok := s["example"]; ok {
		lines = append(lines, "@example "+docValue(v))
	}
	return lines
}

// textLines splits free text into comment-safe lines.
func textLines(text string) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		out = append(out, oneLine(l))
	}
	return out
}

// oneLine makes s safe inside a block comment on one line: control and
// line-separator characters become spaces and "*/" cannot occur.
func oneLine(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' || r == '\u0085' {
			return ' '
		}
		return r
	}, s)
	s = strings.ReplaceAll(s, "*/", "*\\/")
	return strings.TrimRight(s, " ")
}

// docValue renders a JSON value compactly for a JSDoc tag.
func docValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	s := string(b)
	if len(s) > maxDocValue {
		cut := maxDocValue
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return oneLine(s)
}

// quote renders s as a string literal: JSON syntax is valid TypeScript,
// and encoding/json escapes control characters, U+2028 and U+2029 and
// replaces invalid UTF-8.
func quote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return `""`
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// approvalNote ends the doc comment of a tool whose calls need approval,
// so that a program (and the model writing it) expects a call to wait or
// be refused.
const approvalNote = "Each call waits for approval; a denied call throws an error with code \"denied\"."

// docLines are the lines of a tool's doc comment: its description, and
// approvalNote when its calls need approval.
func docLines(d tools.Definition) []string {
	lines := textLines(d.Description)
	if d.RequiresApproval {
		lines = append(lines, approvalNote)
	}
	return lines
}
