package ts

import (
	"errors"
	"fmt"

	"github.com/dop251/goja"
)

func Example_transpile() {
	p, err := transpile(`
interface Point { x: number; y: number }
const p: Point = { x: 3, y: 4 };
return Math.hypot(p.x, p.y);`)
	if err != nil {
		fmt.Println(err)
		return
	}
	vm := goja.New()
	v, err := vm.RunProgram(p.Compiled) // the script's async function
	if err != nil {
		fmt.Println(err)
		return
	}
	main, _ := goja.AssertFunction(v)
	ret, err := main(goja.Undefined())
	if err != nil {
		fmt.Println(err)
		return
	}
	promise := ret.Export().(*goja.Promise)
	fmt.Println(promise.State() == goja.PromiseStateFulfilled, promise.Result())
	// Output: true 5
}

func Example_transpileSyntaxError() {
	_, err := transpile("const a: number = 1;\nconst b: string = ;")
	var se *syntaxError
	if errors.As(err, &se) {
		fmt.Println(se.Line, se.Column, se.Message)
	}
	_, err = transpile("import fs from 'fs'")
	fmt.Println(errors.Is(err, errImportExport))
	// Output:
	// 2 19 unexpected ";"
	// true
}

func Example_position() {
	p, err := transpile("type ID = string;\n\nconst id: ID = 'a';\nthrow new Error(id);")
	if err != nil {
		fmt.Println(err)
		return
	}
	// goja reports "new Error" at line 3, column 9 of p.JS.
	fmt.Println(p.JS)
	line, col, ok := p.Position(3, 9)
	fmt.Println(line, col, ok)
	fmt.Println(p.MapStack("Error: a\n\tat __ptc_main ("+compiledName+":3:9(5))", compiledName))
	// Output:
	// (async function __ptc_main() {
	//   const id = "a";
	//   throw new Error(id);
	// });
	//
	// 4 7 true
	// Error: a
	// 	at __ptc_main (script.ts:4:7(5))
}

func Example_cache() {
	cache := newCache(128)
	for i := 0; i < 3; i++ {
		if _, err := cache.transpile("const n: number = 42;\nreturn n"); err != nil {
			fmt.Println(err)
		}
	}
	st := cache.stats()
	fmt.Println(st.Hits, st.Misses, st.Len)
	// Output: 2 1 1
}
