package ts

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"
	"github.com/evanw/esbuild/pkg/api"
	"github.com/go-sourcemap/sourcemap"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/jsnest"
)

// sourceName is the file name that mapped positions and stack frames use for
// the TypeScript source.
const sourceName = "script.ts"

// compiledName is the file name under which program.Compiled was compiled,
// so it is the name goja puts in the stack frames of the generated code.
const compiledName = "script.ts.js"

// importExportMessage is the message of the syntaxError returned for a
// script that uses import or export.
const importExportMessage = "import and export are not supported: the script is the body of an async function; use tools.* and input"

// errImportExport is wrapped by the syntaxError returned for a script that
// uses import or export (static, dynamic or import.meta), for errors.Is.
var errImportExport = errors.New("import and export are not supported")

// wrapperPrefix and wrapperSuffix turn the script body into one async
// function expression. The prefix is exactly one line, so TypeScript line n
// is line n+1 of the wrapped text and columns are unchanged.
const (
	wrapperPrefix = "(async function __ptc_main() {\n"
	wrapperSuffix = "\n})"
)

// unsupported lists the esbuild features that goja v0.0.0-20260311135729
// cannot parse or run; esbuild lowers them (or, for RegExp flags, turns the
// literal into a RegExp constructor call that fails at run time with a
// catchable error). TestGojaFeatures keeps the list honest.
var unsupported = []string{
	"async-generator",
	"for-await",
	"using",
	"decorators",
	"regexp-match-indices",
	"regexp-set-notation",
}

// syntaxError is a script that cannot be transpiled: a TypeScript syntax
// error, an import or export, or JavaScript that goja cannot compile. Line
// and Column are 1-based and point into the TypeScript source; they are zero
// when no position is known.
type syntaxError struct {
	Message string
	Line    int
	Column  int
	// Err is errImportExport for import and export, else nil.
	Err error
}

// Error implements the error interface.
func (e *syntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("syntax error: %s (line %d, column %d)", e.Message, e.Line, e.Column)
	}
	return "syntax error: " + e.Message
}

// Unwrap returns errImportExport for import and export errors.
func (e *syntaxError) Unwrap() error { return e.Err }

// Fault returns the error as a classified SYNTAX_ERROR. Its message
// starts with "SyntaxError: ", as a JavaScript script's does, so callers
// and models read one form whatever the language.
func (e *syntaxError) Fault() *fault.Error {
	msg := e.Message
	if !strings.HasPrefix(msg, "SyntaxError") {
		msg = "SyntaxError: " + msg
	}
	return &fault.Error{Kind: fault.KindSyntax, Message: msg, Line: e.Line, Column: e.Column, Cause: e}
}

// program is a transpiled TypeScript script. It is immutable and safe for
// concurrent use; one program may run in any number of goja runtimes.
type program struct {
	// JS is a complete JavaScript program whose completion value is the
	// script's async function: run it (goja.Runtime.RunString) and call the
	// value it returns, with no arguments, to start the script. The globals
	// input, tools and console are the engine's to define. JS has no
	// sourceMappingURL comment; map positions with Position.
	JS string
	// Compiled is JS compiled by goja (non-strict, source maps disabled,
	// named compiledName); Runtime.RunProgram(Compiled) returns the async
	// function, without parsing JS again.
	Compiled *goja.Program

	src     string
	srcLine []int // byte offset of the start of each TypeScript line
	jsLine  []int // byte offset of the start of each JS line
	smap    *sourcemap.Consumer
}

// transpile converts a TypeScript script (the body of an async function) to
// JavaScript that goja runs. A script that cannot be transpiled gives a
// *syntaxError positioned in src; any other error is an internal failure.
// Types are stripped, not checked.
func transpile(src string) (p *program, err error) {
	defer func() {
		if r := recover(); r != nil {
			// esbuild or goja failed on this text: the same script fails
			// the same way, so it is the script's error to fix.
			p, err = nil, &syntaxError{Message: fmt.Sprintf("the TypeScript compiler failed on this script (%v); simplify the code around where it fails", r)}
		}
	}()
	srcLine := lineStarts(src)
	if !utf8.ValidString(src) {
		return nil, invalidUTF8(src, srcLine)
	}
	if err := checkComplexity(src); err != nil {
		return nil, err
	}
	res := api.Transform(wrapperPrefix+src+wrapperSuffix, api.TransformOptions{
		Loader:         api.LoaderTS,
		Sourcefile:     sourceName,
		Sourcemap:      api.SourceMapExternal,
		SourcesContent: api.SourcesContentExclude,
		Target:         api.ESNext,
		Supported:      supportedOverrides(),
		Charset:        api.CharsetUTF8,
		LogLevel:       api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		return nil, esbuildError(src, srcLine, res.Errors[0])
	}
	for _, w := range res.Warnings {
		// esbuild replaces import.meta with an empty object; refuse it.
		if w.Location != nil && strings.Contains(w.Text, "import.meta") {
			line, col := fromWrapped(src, srcLine, w.Location.Line, w.Location.Column+1)
			return nil, importExportError(line, col)
		}
	}
	smap, err := sourcemap.Parse(sourceName+".map", res.Map)
	if err != nil {
		return nil, fmt.Errorf("transpile typescript: read esbuild source map: %w", err)
	}
	p = &program{JS: string(res.Code), src: src, srcLine: srcLine, smap: smap}
	p.jsLine = lineStarts(p.JS)
	if err := p.compile(); err != nil {
		return nil, err
	}
	return p, nil
}

// supportedOverrides returns a fresh map each call: esbuild must not share
// one across concurrent transforms.
func supportedOverrides() map[string]bool {
	m := make(map[string]bool, len(unsupported))
	for _, f := range unsupported {
		m[f] = false
	}
	return m
}

// parserOptions turn source maps off, and refuse them should goja ever
// ask: a "//# sourceMappingURL=" comment must never make goja open a file.
var parserOptions = []parser.Option{
	parser.WithDisableSourceMaps,
	parser.WithSourceMapLoader(func(string) ([]byte, error) { return nil, errors.New("source maps are not loaded") }),
}

// compile parses JS with goja, checks that its last statement is the wrapper
// function (so the script cannot close the wrapper and run code outside it),
// and compiles it.
func (p *program) compile() error {
	// goja's parser and compiler recurse on nesting (internal/jsnest).
	if _, ne := jsnest.Check(p.JS); ne != nil {
		e := &syntaxError{Message: ne.Message()}
		if tl, tc, ok := p.Position(ne.Line, ne.Column); ok {
			e.Line, e.Column = tl, tc
		}
		return e
	}
	prg, err := jsnest.Parse(compiledName, p.JS, parserOptions...)
	if err != nil {
		return p.gojaError(err)
	}
	if err := p.checkShape(prg); err != nil {
		return err
	}
	compiled, err := jsnest.Compile(prg)
	if errors.Is(err, jsnest.ErrConstantTooLarge) {
		return &fault.Error{Kind: fault.KindScript, Message: "uncaught " + err.Error(), Cause: err}
	}
	if err != nil {
		return p.gojaError(err)
	}
	p.Compiled = compiled
	return nil
}

// checkShape requires the program to end with the wrapper's function
// expression, preceded only by esbuild's helper declarations. A script that
// closes the wrapper early (and reopens a function so the text still parses)
// is refused at the '}' that closed it.
func (p *program) checkShape(prg *ast.Program) error {
	bad := &syntaxError{Message: unbalancedMessage}
	if len(prg.Body) == 0 {
		return bad
	}
	for i, st := range prg.Body {
		es, ok := st.(*ast.ExpressionStatement)
		if !ok {
			continue
		}
		fn := jsnest.LeftmostFunction(es.Expression)
		if fn == nil || !fn.Async || fn.Body == nil || !p.onWrapperLine(prg, fn.Idx0()) {
			continue
		}
		if i != len(prg.Body)-1 || es.Expression != ast.Expression(fn) {
			return p.positioned(bad, prg, fn.Body.RightBrace)
		}
		for _, h := range prg.Body[:i] {
			switch h.(type) {
			case *ast.VariableStatement, *ast.LexicalDeclaration:
				if !p.userCode(prg, h.Idx0()) {
					continue
				}
			}
			return p.positioned(bad, prg, h.Idx0())
		}
		return nil
	}
	// No statement starts with the wrapper: the brace that closed it is
	// the first one that closes nothing in the script.
	if u, unbalanced := jsnest.Balance(p.src); unbalanced && u.Extra && u.What == "'}'" {
		bad.Line, bad.Column = u.Line, u.Column
	}
	return bad
}

// onWrapperLine reports whether the JS at idx maps to the wrapper's first
// line, where no script text can be.
func (p *program) onWrapperLine(prg *ast.Program, idx file.Idx) bool {
	pos := prg.File.Position(int(idx) - prg.File.Base())
	line, _, ok := p.wrapped(pos.Line, pos.Column)
	return ok && line == 1
}

// userCode reports whether the JS at idx comes from the script (as opposed
// to esbuild's helpers or the wrapper's first line).
func (p *program) userCode(prg *ast.Program, idx file.Idx) bool {
	pos := prg.File.Position(int(idx) - prg.File.Base())
	_, _, ok := p.Position(pos.Line, pos.Column)
	return ok
}

func (p *program) positioned(e *syntaxError, prg *ast.Program, idx file.Idx) *syntaxError {
	pos := prg.File.Position(int(idx) - prg.File.Base())
	if line, col, ok := p.Position(pos.Line, pos.Column); ok {
		e.Line, e.Column = line, col
	}
	return e
}

// gojaError turns a goja parse or compile error on JS into a syntaxError at
// the TypeScript position.
func (p *program) gojaError(err error) error {
	var (
		msg       string
		line, col int
	)
	var list parser.ErrorList
	var perr *parser.Error
	var cerr *goja.CompilerSyntaxError
	var rerr *goja.CompilerReferenceError
	switch {
	case errors.As(err, &list) && len(list) > 0:
		msg, line, col = list[0].Message, list[0].Position.Line, list[0].Position.Column
	case errors.As(err, &perr):
		msg, line, col = perr.Message, perr.Position.Line, perr.Position.Column
	case errors.As(err, &cerr):
		msg = cerr.Message
		if cerr.File != nil {
			pos := cerr.File.Position(cerr.Offset)
			line, col = pos.Line, pos.Column
		}
	case errors.As(err, &rerr):
		msg = rerr.Message
		if rerr.File != nil {
			pos := rerr.File.Position(rerr.Offset)
			line, col = pos.Line, pos.Column
		}
	default:
		return fmt.Errorf("transpile typescript: compile javascript: %w", err)
	}
	e := &syntaxError{Message: lowerFirst(msg)}
	if tl, tc, ok := p.Position(line, col); ok {
		e.Line, e.Column = tl, tc
		if isImportExport(p.src, p.srcLine, tl, tc) {
			return importExportError(tl, tc)
		}
	}
	return e
}

// Position maps a 1-based line and byte column in JS (as goja reports them)
// to the 1-based line and byte column in the TypeScript source. ok is false
// for positions in code that esbuild added (helpers, the wrapper) or outside
// JS.
func (p *program) Position(jsLine, jsCol int) (tsLine, tsCol int, ok bool) {
	wl, wc, ok := p.wrapped(jsLine, jsCol)
	if !ok || wl < 2 || wl-1 > len(p.srcLine) {
		return 0, 0, false
	}
	tsLine = wl - 1
	text := lineText(p.src, p.srcLine, tsLine)
	return tsLine, utf16ToByteCol(text, wc) + 1, true
}

// wrapped maps a JS position to the wrapped source: a 1-based line and a
// 0-based UTF-16 column, as the source map records them.
func (p *program) wrapped(jsLine, jsCol int) (line, col16 int, ok bool) {
	if p == nil || p.smap == nil || jsLine < 1 || jsLine > len(p.jsLine) || jsCol < 1 {
		return 0, 0, false
	}
	text := lineText(p.JS, p.jsLine, jsLine)
	c16 := byteToUTF16Col(text, jsCol-1)
	_, _, line, col16, ok = p.smap.Source(jsLine, c16)
	return line, col16, ok
}

// stackPosition matches "name:line:column" in a goja stack trace.
var stackPosition = regexp.MustCompile(`([^\s()]+):(\d+):(\d+)`)

// MapStack rewrites a goja stack trace of this program, replacing every
// "file:line:column" whose file is jsName (the name the program was
// compiled under, compiledName for Compiled) with the TypeScript position as
// "script.ts:line:column". Frames in code that esbuild added are left as
// they are.
func (p *program) MapStack(stack, jsName string) string {
	return stackPosition.ReplaceAllStringFunc(stack, func(m string) string {
		sub := stackPosition.FindStringSubmatch(m)
		if sub[1] != jsName {
			return m
		}
		jl, err1 := strconv.Atoi(sub[2])
		jc, err2 := strconv.Atoi(sub[3])
		if err1 != nil || err2 != nil {
			return m
		}
		tl, tc, ok := p.Position(jl, jc)
		if !ok {
			return m
		}
		return sourceName + ":" + strconv.Itoa(tl) + ":" + strconv.Itoa(tc)
	})
}

// esbuildError converts esbuild's first error to a syntaxError in src.
func esbuildError(src string, srcLine []int, m api.Message) error {
	e := &syntaxError{Message: lowerFirst(m.Text)}
	if m.Location == nil {
		return e
	}
	e.Line, e.Column = fromWrapped(src, srcLine, m.Location.Line, m.Location.Column+1)
	// An error in the wrapper's closing "})" (past the script) or about
	// its parenthesis: the script ended inside a block, a call, a literal
	// or a comment, or it closed a bracket it did not open (a '}' would
	// close the wrapper). Say which, inside the script.
	atEnd := m.Location.Line-1 > len(srcLine)
	closes := strings.HasPrefix(m.Text, `Expected ")" but found`) && closesWrapper(src, m.Location)
	if atEnd || closes {
		u, unbalanced := jsnest.Balance(src)
		switch {
		case unbalanced && u.Extra:
			e.Message, e.Line, e.Column = u.Message(), u.Line, u.Column
		case closes:
			e.Message = unbalancedMessage
		default:
			e.Message = jsnest.EndOfScript
			if unbalanced {
				e.Message = u.Message()
			}
			e.Line, e.Column = jsnest.LastChar(src)
		}
	}
	// An import or export inside a function body is a syntax error whose
	// message ("Unexpected "x"") does not say why; report it plainly, also
	// when it sits on an earlier line than the error.
	for l := 1; l <= e.Line && l <= len(srcLine); l++ {
		text := lineText(src, srcLine, l)
		trimmed := strings.TrimLeft(text, " \t")
		if startsWithKeyword(trimmed, "export") || startsWithKeyword(trimmed, "import") && !importCallOrMeta(trimmed) {
			return importExportError(l, len(text)-len(trimmed)+1)
		}
	}
	return e
}

// unbalancedMessage explains a script that closes its wrapper function.
const unbalancedMessage = jsnest.ClosesWrapper

// closesWrapper reports whether esbuild's "Expected ")"" error at loc is
// about the wrapper's closing parenthesis: with a bracket in place of the
// parenthesis, the same place must then expect "]".
func closesWrapper(src string, loc *api.Location) bool {
	res := api.Transform("[async function __ptc_main() {\n"+src+"\n}]", api.TransformOptions{
		Loader:   api.LoaderTS,
		LogLevel: api.LogLevelSilent,
	})
	if len(res.Errors) == 0 || res.Errors[0].Location == nil {
		return false
	}
	m := res.Errors[0]
	return strings.HasPrefix(m.Text, `Expected "]" but found`) &&
		m.Location.Line == loc.Line && m.Location.Column == loc.Column
}

// importCallOrMeta reports whether a line starting with "import" is a
// dynamic import or import.meta rather than an import statement; those do
// not break esbuild's parse, so they cannot explain a later error.
func importCallOrMeta(s string) bool {
	rest := strings.TrimLeft(s[len("import"):], " \t")
	return strings.HasPrefix(rest, "(") || strings.HasPrefix(rest, ".")
}

// fromWrapped converts a 1-based line and byte column in the wrapped text
// to the TypeScript source, clamping positions in the wrapper to the
// nearest source position.
func fromWrapped(src string, srcLine []int, line, col int) (int, int) {
	switch {
	case line < 2:
		return 1, 1
	case line-1 > len(srcLine):
		last := len(srcLine)
		return last, len(lineText(src, srcLine, last)) + 1
	}
	return line - 1, col
}

func isImportExport(src string, srcLine []int, line, col int) bool {
	text := lineText(src, srcLine, line)
	if col < 1 || col > len(text) {
		return false
	}
	at := text[col-1:]
	return startsWithKeyword(at, "import") || startsWithKeyword(at, "export")
}

func importExportError(line, col int) *syntaxError {
	return &syntaxError{Message: importExportMessage, Line: line, Column: col, Err: errImportExport}
}

// startsWithKeyword reports whether s starts with the word kw followed by a
// character that cannot continue an identifier.
func startsWithKeyword(s, kw string) bool {
	if !strings.HasPrefix(s, kw) {
		return false
	}
	if len(s) == len(kw) {
		return true
	}
	c := s[len(kw)]
	return !(c == '_' || c == '$' || c >= 0x80 || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}

func invalidUTF8(src string, srcLine []int) *syntaxError {
	for l := 1; l <= len(srcLine); l++ {
		text := lineText(src, srcLine, l)
		for i := 0; i < len(text); {
			r, n := utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError && n <= 1 {
				return &syntaxError{Message: "the source is not valid UTF-8; send the script as UTF-8 text", Line: l, Column: i + 1}
			}
			i += n
		}
	}
	return &syntaxError{Message: "the source is not valid UTF-8; send the script as UTF-8 text"}
}

// lineStarts returns the byte offset of the start of each line of s. Lines
// end at \n; a \r before it stays part of the line. Line terminators that
// JavaScript also knows (\r alone, U+2028, U+2029) are rare in scripts and
// are not counted, matching goja's own line numbers for \n-separated text.
func lineStarts(s string) []int {
	starts := []int{0}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineText returns line n (1-based) of s without its terminator.
func lineText(s string, starts []int, n int) string {
	if n < 1 || n > len(starts) {
		return ""
	}
	end := len(s)
	if n < len(starts) {
		end = starts[n] - 1
	}
	return strings.TrimSuffix(s[starts[n-1]:end], "\r")
}

// byteToUTF16Col converts a 0-based byte offset within line to UTF-16 code
// units.
func byteToUTF16Col(line string, b int) int {
	if b > len(line) {
		return len(utf16.Encode([]rune(line))) + b - len(line)
	}
	n := 0
	for _, r := range line[:b] {
		n += utf16.RuneLen(r)
	}
	return n
}

// utf16ToByteCol converts a 0-based UTF-16 offset within line to bytes.
func utf16ToByteCol(line string, c int) int {
	n := 0
	for i, r := range line {
		if n >= c {
			return i
		}
		n += utf16.RuneLen(r)
	}
	return len(line) + max(0, c-n)
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r >= 'A' && r <= 'Z' {
		return string(r+'a'-'A') + s[n:]
	}
	return s
}
