package tsdecl_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ptcrun/ptc/internal/tsdecl"
	"github.com/ptcrun/ptc/tools"
)

func ExampleGenerate() {
	defs := []tools.Definition{{
		Name:        "weather.current",
		Description: "Current weather for a city.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"city": {"type": "string"},
				"units": {"enum": ["metric", "imperial"]}
			},
			"required": ["city"]
		}`),
		OutputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"temp": {"type": "number"}},
			"required": ["temp"]
		}`),
	}}
	text, err := tsdecl.Generate(defs, tsdecl.Options{OmitDocs: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Print the part before the shared error and console declarations.
	fmt.Print(text[:strings.Index(text, "interface PtcSchemaViolation")])
	// Output:
	// // Tools this script may call. The script is the body of an async function:
	// // await the calls and `return` a small JSON value as the result.
	//
	// declare const tools: {
	//   weather: {
	//     current(args: WeatherCurrentInput): Promise<WeatherCurrentOutput>;
	//   };
	// };
	//
	// declare const input: unknown;
	//
	// interface WeatherCurrentInput {
	//   city: string;
	//   units?: "metric" | "imperial";
	// }
	//
	// interface WeatherCurrentOutput {
	//   temp: number;
	// }
	//
}
