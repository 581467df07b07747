// Package tsdecl turns tool definitions into TypeScript declarations that a
// model can write scripts against: a `declare const tools` object with one
// typed method per tool (dotted names become nested namespaces), a named
// input and output type per tool generated from its JSON Schemas, the
// `input` constant, the error objects a failed call rejects with, and
// `console`.
//
// # Schema mapping
//
// Objects map to object types whose properties are optional (`?`) unless
// listed in `required`; property names that are not identifiers are
// quoted. Arrays map to `T[]`, `prefixItems` (and draft-07 array `items`)
// to tuples whose elements past `minItems` are optional. `enum` and
// `const` map to literal unions, `anyOf`/`oneOf` to unions, `allOf` to
// intersections, `type` lists and OpenAPI `nullable` to unions with
// `null`. `integer` and `number` map to `number`. Boolean schemas map to
// `unknown` (true) and `never` (false); a missing schema is `unknown`.
//
// `additionalProperties: false` closes an object (no index signature); a
// schema there becomes an index signature `[k: string]: T`, widened to the
// property types so that the declaration stays valid TypeScript. When
// `additionalProperties` is absent or true, an object without properties
// gets the open signature `[k: string]: unknown`, while an object with
// properties is left without one: models read declared properties, and an
// open signature would hide typos in property names. `patternProperties`
// add their value types to the index signature (TypeScript cannot express
// the patterns; they appear in a comment).
//
// Local references (`$ref` to `#`, `#/$defs/...`, `#/definitions/...` or
// any other JSON pointer into the same document) become named types, so
// recursive schemas produce recursive types and no schema is expanded
// twice. A reference that TypeScript could not resolve (a type alias that
// is itself, directly or through other aliases, a union or intersection
// member of itself) is replaced by `unknown`. Anchors, `$id`-relative and
// external references map to `unknown`.
//
// One TypeScript quirk remains: an object literal always has the
// properties of Object.prototype, so an optional property named like one of
// them (`constructor`, `toString`, ...) with another type makes literals
// without that property fail to type-check. Such schemas are rare; the
// declaration itself stays valid.
//
// Descriptions, `examples`, `default`, `format`, `pattern`, numeric and
// length bounds and `deprecated` become JSDoc. Output is deterministic:
// tools and properties are emitted in sorted order, referenced definitions
// in the order they are first referenced.
//
// Schemas are untrusted: nesting deeper than Options.MaxDepth and output
// larger than Options.MaxBytes fail with errors wrapping ErrTooDeep and
// ErrTooLarge. No schema is expanded twice, so the work is bounded by the
// size of the schemas times the depth limit.
//
// The declarations assume TypeScript's ES library without DOM or Node
// typings (tsc --lib es2022), which would declare a console of their own.
//
// Package tsdecl imports only the tools package; it must not import the
// bridge, runtimes or gRPC.
package tsdecl
