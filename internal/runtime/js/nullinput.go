package js

import (
	"regexp"
	"strings"
)

// goja words every TypeError about a missing object as "of undefined",
// also when the value is null. The script's input is null when the
// request has none, so a script that reads a property of it would be
// told about an undefined it never saw; nullInputMessage names the
// value. These are goja's messages it rewrites.
var nullInputRewrites = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`^TypeError: Cannot read property '(.*)' of undefined( or null)?$`), "TypeError: Cannot read property '$1' of null"},
	{regexp.MustCompile(`^TypeError: Cannot convert undefined or null to object$`), "TypeError: Cannot convert null to object"},
	{regexp.MustCompile(`^TypeError: Value is not object coercible$`), "TypeError: Cannot destructure null"},
}

// inputAssigned matches a script that assigns input ("input = …",
// "input ??= …"): its value may then be undefined after all.
var inputAssigned = regexp.MustCompile(`(^|[^.\w$])input\s*(\*\*|<<|>>>?|&&|\|\||\?\?|[-+*/%&|^])?=($|[^=])`)

// nullInputMessage returns msg, an uncaught error's description, saying
// null instead of undefined when the error is about the script's input,
// which is null because the request has none: the expression at line:col
// of the script (the error's position) reads a property of `input`.
func (x *exec) nullInputMessage(msg string, line, col int) string {
	if !x.inputNull || line == 0 || inputAssigned.MatchString(x.job.Source) {
		return msg
	}
	for _, r := range nullInputRewrites {
		if r.re.MatchString(msg) && readsInput(x.job.Source, line, col) {
			return r.re.ReplaceAllString(msg, r.with) + " (input is null: the request has no input)"
		}
	}
	return msg
}

// readsInput reports whether the expression at the 1-based line:col of
// src is `input`, or a property access on it: goja places such errors at
// the property ("input.a": the a; `input["a"]`: the bracket) or at the
// start of the expression ("input.a()", "const {a} = input").
func readsInput(src string, line, col int) bool {
	lines := strings.Split(src, "\n")
	if line > len(lines) || col < 1 {
		return false
	}
	text := lines[line-1]
	if col > len(text)+1 {
		return false
	}
	before := strings.TrimRight(text[:col-1], " \t")
	before = strings.TrimSuffix(strings.TrimSuffix(before, "?."), ".")
	before = strings.TrimRight(before, " \t")
	if endsWithName(before, "input") {
		return true
	}
	return startsWithName(text[col-1:], "input")
}

func isNameChar(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// endsWithName reports whether s ends with the identifier name, not as
// part of a longer name nor as a property (".input").
func endsWithName(s, name string) bool {
	if !strings.HasSuffix(s, name) {
		return false
	}
	rest := strings.TrimRight(s[:len(s)-len(name)], " \t")
	if n := len(s) - len(name); n > 0 && isNameChar(s[n-1]) {
		return false
	}
	return !strings.HasSuffix(rest, ".")
}

// startsWithName reports whether s starts with the identifier name.
func startsWithName(s, name string) bool {
	return strings.HasPrefix(s, name) && (len(s) == len(name) || !isNameChar(s[len(name)]))
}
