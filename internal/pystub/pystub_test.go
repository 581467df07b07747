package pystub

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/tools"
)

func TestGenerate(t *testing.T) {
	cases := []struct {
		name string
		def  tools.Definition
		want []string
	}{
		{name: "keyword arguments and a result",
			def: tools.Definition{Name: "get_expenses", Description: "List expenses.",
				InputSchema:  json.RawMessage(`{"type":"object","properties":{"member_id":{"type":"string"},"limit":{"type":"integer"}},"required":["member_id"]}`),
				OutputSchema: json.RawMessage(`{"type":"array","items":{"type":"object","properties":{"amount":{"type":"number"},"tags":{"type":"array","items":{"type":"string"}}},"required":["amount"]}}`)},
			want: []string{
				"class GetExpensesArgs(TypedDict):\n    limit: NotRequired[int]\n    member_id: str\n",
				"class GetExpensesResultItem(TypedDict):\n    amount: float\n    tags: NotRequired[list[str]]\n",
				"async def get_expenses(self, *, limit: int = ..., member_id: str) -> list[GetExpensesResultItem]:",
				`"List expenses."`,
				`def __getitem__(self, name: Literal["get_expenses"]) -> Callable[[GetExpensesArgs], Awaitable[list[GetExpensesResultItem]]]: ...`,
			}},
		{name: "dotted name, enum, nullable, ref",
			def: tools.Definition{Name: "shop.price",
				InputSchema:  json.RawMessage(`{"type":"object","properties":{"size":{"enum":["s","m"]},"note":{"type":["string","null"]},"item":{"$ref":"#/$defs/item"}},"required":["item"],"$defs":{"item":{"type":"object","properties":{"sku":{"type":"string"}},"required":["sku"]}}}`),
				OutputSchema: json.RawMessage(`{"anyOf":[{"type":"number"},{"const":"unknown"}]}`)},
			want: []string{
				"class ShopPriceArgs(TypedDict):\n    item: ShopPriceArgsItem\n    note: NotRequired[str | None]\n    size: NotRequired[Literal[\"s\", \"m\"]]\n",
				"class ShopPriceArgsItem(TypedDict):\n    sku: str\n",
				`def __getitem__(self, name: Literal["shop.price"]) -> Callable[[ShopPriceArgs], Awaitable[float | Literal["unknown"]]]: ...`,
			}},
		{name: "no schemas", def: tools.Definition{Name: "ping"},
			want: []string{"async def ping(self, **kwargs: Any) -> Any:", `Callable[[dict[str, Any]], Awaitable[Any]]`}},
		{name: "keys that are not identifiers", def: tools.Definition{Name: "x",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a-b":{"type":"string"}}}`)},
			want: []string{`XArgs = TypedDict("XArgs", {"a-b": NotRequired[str]})`, "async def x(self, **kwargs: Any) -> Any:"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := Generate([]tools.Definition{c.def})
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("the stubs lack %q:\n%s", w, out)
				}
			}
			parses(t, out)
		})
	}
}

// parses checks that the stubs are Python, with the host's python3 when
// there is one.
func parses(t *testing.T, src string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		return
	}
	f := filepath.Join(t.TempDir(), "stubs.py")
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())", f).CombinedOutput(); err != nil {
		t.Fatalf("the stubs do not parse: %v\n%s\n%s", err, out, src)
	}
}
