package jsnest

import (
	"errors"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dop251/goja/ast"
)

// diffTokens are the pieces TestScanAgainstParser puts texts together
// from: those whose reading depends on what came before (a '/', a '}',
// keywords that may be names, line ends, comments, quotes, spaces goja
// skips).
var diffTokens = []string{
	"return", "break", "continue", "throw", "if", "else", "do", "while", "for", "of", "in", "instanceof",
	"typeof", "new", "async", "function", "function*", "class", "static", "get", "set", "yield", "await",
	"let", "var", "const", "case", "default", "switch", "try", "catch", "finally", "extends", "super", "void",
	"a", "b", "x", "(", ")", "{", "}", ";", ",", ":", "?", "=", "=>", "+", "++", "-", "--", "*", "!", "<", ">",
	"\n", " ", "/* */", "/*\n*/", "//c\n", "'s'", "\"s\"", "`t`", "`${", "}`", "/", "/a/", "/a/g", "/`/", "/'/",
	"/}/", "1", "1.", ".5", "1n", "\u0085", "\u00a0", "\u2028", "\u2029", "\r\n", "#!", "\\u0061",
	"`${x}`", "...", "static {", "get x()", "=> {", "'\\\n'", "/[/]/", "/a/in", "label:",
	"(a)", "f()", "[", "]", "x.y", "?.", "??", "&&", "||", "**", "%", "enum", "import", "export", "debugger", "with",
	"arguments", "eval", "true", "null", "this", "`", "${", "\t", "/*/", "*/", "//", "<!--", "-->", "\u00ad", "\ufeff",
}

// TestScanAgainstParser puts random texts together from diffTokens,
// followed by the watched name Reflect, and checks every text goja's
// parser accepts with Reflect as a name in its code: the scan must report
// the name or refuse the text. A text where it does neither is one where
// the scan took code for a string, a template, a comment or a regular
// expression, which could hide nesting that overflows the parser.
// PTC_DIFF_N sets the number of texts (20,000 by default).
func TestScanAgainstParser(t *testing.T) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("PTC_DIFF_N")); err == nil {
		n = v
	}
	rng := rand.New(rand.NewPCG(1, 2))
	watch := map[string]uint{"Reflect": 0}
	parsed, found := 0, 0
	for i := 0; i < n; i++ {
		var b strings.Builder
		for k := rng.IntN(14) + 1; k > 0; k-- {
			b.WriteString(diffTokens[rng.IntN(len(diffTokens))])
			if rng.IntN(2) == 0 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(" Reflect\n")
		src := b.String()
		prg, err := Parse("", "(async function(){"+src+"\n})")
		if err != nil || !hasName(reflect.ValueOf(prg), "Reflect") {
			continue
		}
		parsed++
		info, serr := Scan(src, watch)
		if serr == nil && info.Names&1 == 0 {
			found++
			if found <= 20 {
				t.Errorf("%q: goja reads Reflect as code, the scan does not see it", src)
			}
		}
	}
	t.Logf("%d texts, %d parsed with the name in code, %d missed", n, parsed, found)
}

// hasName reports whether the syntax tree v holds the identifier name.
func hasName(v reflect.Value, name string) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return false
		}
		if id, ok := v.Interface().(*ast.Identifier); ok {
			return id.Name.String() == name
		}
		return hasName(v.Elem(), name)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && hasName(v.Field(i), name) {
				return true
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if hasName(v.Index(i), name) {
				return true
			}
		}
	}
	return false
}

// TestParseRecoversParserPanic: text on which goja's parser panics is a
// syntax error (ErrParserFailed), not a panic.
func TestParseRecoversParserPanic(t *testing.T) {
	for _, src := range []string{"function f([...function", "(function([...function"} {
		if _, err := Parse("", src); !errors.Is(err, ErrParserFailed) {
			t.Errorf("%q: %v, want ErrParserFailed", src, err)
		}
	}
	if _, err := Parse("", "function f([...x]) {}"); err != nil {
		t.Error(err)
	}
}
