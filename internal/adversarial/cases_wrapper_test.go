package adversarial

import (
	"fmt"
	"strings"
	"time"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// famWrapper: sources that try to close the function a script is the body
// of, to run code outside it or change what the program is.
const famWrapper family = "wrapper"

// wrapperEscapeSources close the wrapper function and open another one, so
// that the text still parses.
var wrapperEscapeSources = []struct{ name, src string }{
	{"global", `}); globalThis.x = typeof tools; (async function () { return "outside: " + x; `},
	{"plain-function", `}); (function () { return 42; `},
	{"sequence", `}), (async function () { return "second" `},
	{"called", `}).call(this); (async function () { return 1 `},
	{"next-line-call", "})\n(async function () { return 1 "},
	{"template", "}); globalThis.t = `})${1}`; (async function () { return t "},
	{"comment", `} /* }) */ ); (async function () { return 1 `},
	{"u2028", "// note\u2028}); globalThis.u = 1; (async function () { return u "},
	{"script-tag", `"</script>"}); (async function () { return "</script>" `},
	{"class-static-block", `}); class A { static { globalThis.y = 1 } }; (async function () { return y `},
}

// closesWrapper checks that a refused escape says why.
func closesWrapper(r *ptcv1.ExecuteResponse) error {
	if m := r.GetError().GetMessage(); !strings.Contains(m, "closes the function the script runs in") {
		return fmt.Errorf("message %q does not say that the script closes its function", m)
	}
	return nil
}

// wrapperCases: every escape source is a SYNTAX_ERROR, in JavaScript and
// TypeScript, in both modes; so is the same text given to the Function
// constructors, as a catchable SyntaxError; and the server keeps serving.
func wrapperCases() []tcase {
	var cs []tcase
	for i, s := range wrapperEscapeSources {
		cs = append(cs,
			tcase{name: "js-" + s.name, family: famWrapper, fast: i == 0, bound: 10 * time.Second,
				req: jsReq(s.src), want: fails(SyntaxError).and(closesWrapper)},
			tcase{name: "ts-" + s.name, family: famWrapper, fast: i == 0, bound: 10 * time.Second,
				req: tsReq(s.src), want: fails(SyntaxError).and(closesWrapper)})
	}
	for i, ctor := range []string{"Function", "(async function () {}).constructor", "(function* () {}).constructor"} {
		src := `try { ` + ctor + `("}); globalThis.leak = 1; (function () {"); return "made" } catch (e) { return [e.name, e instanceof SyntaxError, typeof globalThis.leak] }`
		cs = append(cs, tcase{name: fmt.Sprintf("function-constructor-%d", i), family: famWrapper, fast: i == 0, bound: 10 * time.Second,
			req: jsReq(src), want: succeeds(`["SyntaxError",true,"undefined"]`)})
	}
	return cs
}
