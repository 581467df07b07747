// Package tools defines what a ptc tool is — a Definition (name, description,
// JSON Schemas) plus a Handler — and the Registry that holds the tools a
// server offers. Schemas are compiled once, at registration, with draft
// 2020-12 as the default and every external $ref load disabled.
//
// Package tools imports no other ptc package except internal/fault: engines
// and the bridge depend on it, never the other way round.
package tools
