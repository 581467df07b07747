package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/core"
)

// extensions maps the file extensions ptc runs to their language.
var extensions = []struct {
	ext  string
	lang ptc.Language
}{
	{".js", ptc.LanguageJavaScript}, {".mjs", ptc.LanguageJavaScript}, {".cjs", ptc.LanguageJavaScript},
	{".ts", ptc.LanguageTypeScript}, {".mts", ptc.LanguageTypeScript}, {".cts", ptc.LanguageTypeScript},
	{".wasm", ptc.LanguageWASM},
	{".py", ptc.LanguagePython},
}

// supported lists the extensions for a message: ".js, .mjs, .cjs
// (JavaScript), .ts, .mts, .cts (TypeScript), .wasm (WebAssembly) and .py
// (Python)".
func supported() string {
	names := map[ptc.Language]string{ptc.LanguageJavaScript: "JavaScript", ptc.LanguageTypeScript: "TypeScript", ptc.LanguageWASM: "WebAssembly", ptc.LanguagePython: "Python"}
	var groups []string
	for i := 0; i < len(extensions); {
		lang := extensions[i].lang
		var exts []string
		for ; i < len(extensions) && extensions[i].lang == lang; i++ {
			exts = append(exts, extensions[i].ext)
		}
		groups = append(groups, strings.Join(exts, ", ")+" ("+names[lang]+")")
	}
	return strings.Join(groups[:len(groups)-1], ", ") + " and " + groups[len(groups)-1]
}

// languageOf picks the engine for a script file: the --language flag when
// given, else WebAssembly by its magic bytes, else the extension. A file
// whose extension ptc does not know is refused rather than run as
// JavaScript.
func languageOf(path string, content []byte, flag string) (ptc.Language, error) {
	if flag != "" {
		l, err := core.ParseLanguage(flag)
		if err != nil {
			return 0, fmt.Errorf("--language: %q is not a language ptc runs: use javascript, typescript, wasm or python", flag)
		}
		return ptc.Language(l), nil
	}
	if bytes.HasPrefix(content, []byte("\x00asm")) {
		return ptc.LanguageWASM, nil
	}
	ext := strings.ToLower(filepath.Ext(path))
	for _, e := range extensions {
		if e.ext == ext {
			return e.lang, nil
		}
	}
	what := "has no extension"
	if ext != "" {
		what = "has the extension " + filepath.Ext(path) + ", which ptc does not run"
	}
	return 0, fmt.Errorf("%s %s: ptc runs %s; to run it anyway, name its language with --language javascript, typescript, wasm or python",
		path, what, supported())
}

// setScript puts a script file into req: its language, and its text or,
// for a WebAssembly module, its bytes.
func setScript(req *ptc.Request, path string, src []byte, language string) error {
	lang, err := languageOf(path, src, language)
	if err != nil {
		return err
	}
	req.Language, req.Source, req.Module = lang, string(src), nil
	if lang == ptc.LanguageWASM {
		req.Source, req.Module = "", src
	}
	return nil
}

// valueArg reads a JSON argument given inline or as @file ("@-" is
// stdin) and checks that it is JSON, so that a typo is reported here, at
// its position, rather than by the server.
func valueArg(v string, stdin io.Reader) ([]byte, error) {
	var data []byte
	var err error
	switch {
	case v == "@-":
		data, err = io.ReadAll(stdin)
	case strings.HasPrefix(v, "@"):
		data, err = os.ReadFile(v[1:])
	default:
		data = []byte(v)
	}
	if err != nil {
		return nil, err
	}
	if err := checkJSON(data); err != nil {
		return nil, err
	}
	return data, nil
}

// checkJSON reports where data stops being one JSON value: "not valid
// JSON at line 1, column 2: unexpected end of JSON input".
func checkJSON(data []byte) error {
	if json.Valid(data) {
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("is empty: give a JSON value such as {} or null")
	}
	var v any
	err := json.Unmarshal(data, &v)
	var syn *json.SyntaxError
	if !errors.As(err, &syn) || syn.Offset == 0 || atEnd(syn, len(data)) {
		// The decoder ran out of input: the position is just past the
		// last character.
		line, col := position(data, len(data))
		return fmt.Errorf("not valid JSON at line %d, column %d: unexpected end of JSON input", line, col)
	}
	// The decoder's offset is just past the character at fault.
	line, col := position(data, int(syn.Offset)-1)
	return fmt.Errorf("not valid JSON at line %d, column %d: %s", line, col, syn.Error())
}

// atEnd reports whether the decoder failed for want of more input. It
// says so, or, in the middle of a literal ("nul"), reports the space it
// feeds itself at the end.
func atEnd(syn *json.SyntaxError, n int) bool {
	msg := syn.Error()
	return msg == "unexpected end of JSON input" || (syn.Offset >= int64(n) && strings.HasPrefix(msg, "invalid character ' '"))
}

// position turns a byte offset into a 1-based line and column, the
// column counted in characters.
func position(data []byte, off int) (line, col int) {
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = 1 + utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:])
	return line, col
}
