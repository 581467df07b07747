package tsdecl

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxNamePart bounds the part of a type name taken from a definition name.
const maxNamePart = 64

// namer hands out unique type names.
type namer struct {
	used map[string]bool
}

func newNamer() *namer {
	used := make(map[string]bool, len(reservedNames)+16)
	for _, n := range reservedNames {
		used[n] = true
	}
	return &namer{used: used}
}

// alloc returns base, or base followed by the smallest number from 2 that
// makes it unique, and marks the result used.
func (n *namer) alloc(base string) string {
	name := base
	for i := 2; n.used[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	n.used[name] = true
	return name
}

// pascal turns a tool or definition name into a PascalCase identifier
// part: it splits on every character that is not an ASCII letter, digit or
// '$', upper-cases the first letter of each part and keeps the rest. It
// returns fallback when nothing is left.
func pascal(s, fallback string) string {
	var b strings.Builder
	upper := true
	for i := 0; i < len(s) && b.Len() < maxNamePart; i++ {
		ch := s[i]
		switch {
		case ch >= 'a' && ch <= 'z':
			if upper {
				ch -= 'a' - 'A'
			}
		case ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9', ch == '$':
		default:
			upper = true
			continue
		}
		b.WriteByte(ch)
		upper = false
	}
	out := b.String()
	if out == "" {
		return fallback
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "T" + out
	}
	return out
}

// isIdentifier reports whether s can be written as a property name without
// quotes. Only ASCII identifiers are accepted, which keeps the check simple
// and the output portable.
func isIdentifier(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch == '_', ch == '$':
		case ch >= '0' && ch <= '9':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// reservedNames are names generated types must not take: ptc's own
// declarations and the global types of TypeScript's ES2022 library, with
// which a global interface would silently merge.
var reservedNames = []string{
	"PtcInput", "PtcSchemaViolation", "PtcToolError", "ToolArgumentError", "ToolError", "ToolCallLimitError",
	"Array", "ArrayBuffer", "ArrayBufferLike", "ArrayBufferTypes", "ArrayBufferView", "ArrayConstructor", "ArrayLike",
	"AsyncGenerator", "AsyncGeneratorFunction", "AsyncIterable", "AsyncIterableIterator", "AsyncIterator",
	"Atomics", "Awaited", "BigInt", "BigInt64Array", "BigUint64Array", "Boolean", "Capitalize", "ClassDecorator",
	"ConcatArray", "ConstructorParameters", "DataView", "Date", "DateConstructor", "Error", "ErrorConstructor",
	"ErrorOptions", "EvalError", "Exclude", "Extract", "FinalizationRegistry", "Float32Array", "Float64Array",
	"Function", "FunctionConstructor", "Generator", "GeneratorFunction", "IArguments", "InstanceType", "Int16Array",
	"Int32Array", "Int8Array", "Intl", "Iterable", "IterableIterator", "Iterator", "IteratorResult", "JSON", "Lowercase",
	"Map", "MapConstructor", "Math", "MethodDecorator", "NoInfer", "NonNullable", "Number", "NumberConstructor", "Object",
	"ObjectConstructor", "Omit", "OmitThisParameter", "ParameterDecorator", "Parameters", "Partial", "Pick", "Promise",
	"PromiseConstructor", "PromiseConstructorLike", "PromiseFulfilledResult", "PromiseLike", "PromiseRejectedResult",
	"PromiseSettledResult", "PropertyDecorator", "PropertyDescriptor", "PropertyDescriptorMap", "PropertyKey", "Proxy",
	"ProxyHandler", "RangeError", "Readonly", "ReadonlyArray", "ReadonlyMap", "ReadonlySet", "Record", "ReferenceError",
	"Reflect", "RegExp", "RegExpExecArray", "RegExpMatchArray", "Required", "ReturnType", "Set", "SetConstructor",
	"SharedArrayBuffer", "String", "StringConstructor", "Symbol", "SymbolConstructor", "SyntaxError",
	"TemplateStringsArray", "ThisParameterType", "ThisType", "TypeError", "TypedPropertyDescriptor", "URIError",
	"Uint16Array", "Uint32Array", "Uint8Array", "Uint8ClampedArray", "Uncapitalize", "Uppercase", "WeakKey", "WeakMap",
	"WeakRef", "WeakSet",
}
