package demo

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestCentsMarshalJSON(t *testing.T) {
	tests := []struct {
		name string
		in   cents
		want string
	}{
		{"zero", 0, "0.00"},
		{"one cent", 1, "0.01"},
		{"ten cents", 10, "0.10"},
		{"dollars", 300000, "3000.00"},
		{"dollars and cents", 123456, "1234.56"},
		{"negative", -205, "-2.05"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.in)
			if err != nil || string(b) != tt.want {
				t.Fatalf("Marshal(%d) = %s, %v; want %s", tt.in, b, err, tt.want)
			}
		})
	}
}

// TestSchemaEnumsMatchData keeps the schemas' enums and the data tables in
// step.
func TestSchemaEnumsMatchData(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		path   []string
		want   []string
	}{
		{"departments", teamMembersInput, []string{"properties", "department"}, departmentNames[:]},
		{"member levels", teamMembersOutput, []string{"items", "properties", "level"}, levelNames[:]},
		{"quarters", expensesInput, []string{"properties", "quarter"}, quarterNames[:]},
		{"categories", expensesOutput, []string{"items", "properties", "category"}, categoryNames[:]},
		{"budget input levels", budgetInput, []string{"properties", "level"}, levelNames[:]},
		{"budget output levels", budgetOutput, []string{"properties", "level"}, levelNames[:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var node any
			if err := json.Unmarshal([]byte(tt.schema), &node); err != nil {
				t.Fatal(err)
			}
			for _, key := range tt.path {
				node = node.(map[string]any)[key]
			}
			got := fmt.Sprint(node.(map[string]any)["enum"])
			if want := fmt.Sprint(tt.want); got != want {
				t.Fatalf("enum = %s, want %s", got, want)
			}
		})
	}
	// Every category the generator draws is in the enum.
	for _, oc := range otherCategories {
		found := false
		for _, c := range categoryNames {
			found = found || c == oc.name
		}
		if !found {
			t.Errorf("category %q is not in categoryNames", oc.name)
		}
	}
}

func TestRosterIDsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range roster {
		if seen[r.id] {
			t.Fatalf("member id %s appears twice", r.id)
		}
		seen[r.id] = true
		if r.level < 0 || r.level >= len(levelNames) {
			t.Fatalf("member %s has level index %d", r.id, r.level)
		}
	}
}
