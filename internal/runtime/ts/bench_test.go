package ts

import (
	"fmt"
	"strings"
	"testing"
)

// script2KB returns a realistic TypeScript script of about 2 KB.
func script2KB() string {
	var b strings.Builder
	b.WriteString(`interface Member { id: string; name: string; level: string }
interface Expense { id: string; category: string; amount: number }
const dept: string = (input as { department?: string } | null)?.department ?? "engineering";
const team = (await tools.get_team_members({ department: dept })) as Member[];
const expenses = (await Promise.all(team.map((m) => tools.get_expenses({ member_id: m.id })))) as Expense[][];
`)
	for i := 0; b.Len() < 1900; i++ {
		fmt.Fprintf(&b, "const total%d: number = expenses[%d %% expenses.length]?.reduce((n: number, e: Expense) => n + (e.category === \"travel\" ? e.amount : 0), 0) ?? 0;\n", i, i)
	}
	b.WriteString("return { team: team.length, dept };\n")
	return b.String()
}

func BenchmarkTranspile(b *testing.B) {
	src := script2KB()
	b.Run("cold", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for i := 0; i < b.N; i++ {
			if _, err := transpile(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		c := newCache(16)
		if _, err := c.transpile(src); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(src)))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := c.transpile(src); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTranspileWorstCase measures sources at the complexity limits:
// the most expensive scripts transpile accepts.
func BenchmarkTranspileWorstCase(b *testing.B) {
	cases := []struct{ name, src string }{
		{"nested-arrows", "return " + strings.Repeat("(x: number) => ", maxArrows) + "1"},
		{"nested-functions", "return " + strings.Repeat("function () { return ", maxNesting-1) + "1" + strings.Repeat("}", maxNesting-1)},
		{"nested-arrays", "return " + strings.Repeat("[", maxNesting) + "1" + strings.Repeat("]", maxNesting)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := transpile(c.src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
