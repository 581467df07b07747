package rank

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/tools"
)

func loadTools(t testing.TB) []tools.Definition {
	t.Helper()
	raw, err := os.ReadFile("testdata/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var defs []tools.Definition
	if err := json.Unmarshal(raw, &defs); err != nil {
		t.Fatal(err)
	}
	return defs
}

func TestRankFirst(t *testing.T) {
	defs := loadTools(t)
	if len(defs) != 30 {
		t.Fatalf("fixture has %d tools, want 30", len(defs))
	}
	tests := []struct {
		name  string
		query string
		want  string
	}{
		{"open bugs", "search for open bug issues", "github.search_issues"},
		{"merge", "merge the pull request", "github.merge_pull_request"},
		{"post to slack", "post a message to the #ops Slack channel", "slack.post_message"},
		{"channel history", "read the recent messages in a channel", "slack.get_channel_history"},
		{"react", "add a thumbs up emoji reaction", "slack.add_reaction"},
		{"user by email", "look up the slack user for an email address", "slack.lookup_user_by_email"},
		{"free time", "when are all attendees free for a meeting", "calendar.find_free_slots"},
		{"schedule", "schedule a meeting with attendees", "calendar.create_event"},
		{"cancel", "cancel the calendar event", "calendar.delete_event"},
		{"expenses", "which employees spent the most on expenses this quarter", "get_expenses"},
		{"expense report", "submit my expense report with receipts", "submit_expense_report"},
		{"budget", "how much travel budget is left for the team", "get_budget"},
		{"team", "who are the members of the platform team", "get_team_members"},
		{"vacation", "list the vacation leave she took", "hr.list_time_off"},
		{"manager", "who is the manager of this employee", "hr.get_employee"},
		{"deal stage", "move the deal to the next pipeline stage", "crm.update_deal_stage"},
		{"contacts", "search customer contacts at Acme", "crm.search_contacts"},
		{"forecast", "weather forecast for Oslo for the next days", "weather.forecast"},
		{"temperature", "current temperature in Lima", "weather.current"},
		{"wiki", "search the documentation wiki", "docs.search"},
		{"camel case name", "send an email", "sendEmail"},
		{"commits", "list the latest commits on main branch", "github.list_commits"},
		{"file", "read the file README.md from the repository", "github.get_file_contents"},
		{"plural stem", "list channels", "slack.list_channels"},
		{"name words", "get issue", "github.get_issue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Rank(defs, tt.query, 3)
			if len(got) == 0 || got[0].Name != tt.want {
				t.Errorf("Rank(%q) = %v, want %s first", tt.query, got, tt.want)
			}
			for i := 1; i < len(got); i++ {
				if got[i].Score > got[i-1].Score {
					t.Errorf("results not sorted by score: %v", got)
				}
			}
		})
	}
}

func TestRankEdgeCases(t *testing.T) {
	defs := loadTools(t)
	tests := []struct {
		name      string
		defs      []tools.Definition
		query     string
		limit     int
		wantLen   int
		wantFirst string
		wantZero  bool
	}{
		{"empty query returns all by name", defs, "", 0, 30, "calendar.create_event", true},
		{"stop words only", defs, "the of and to", 5, 5, "calendar.create_event", true},
		{"punctuation only", defs, "?!... --", 0, 30, "calendar.create_event", true},
		{"no match", defs, "kubernetes pod", 0, 0, "", false},
		{"limit", defs, "list", 2, 2, "", false},
		{"negative limit means all", defs, "list", -1, 7, "", false},
		{"no tools", nil, "anything", 5, 0, "", false},
		{"no tools empty query", nil, "", 5, 0, "", false},
		{"huge query", defs, strings.Repeat("weather ", MaxQueryBytes), 1, 1, "weather.current", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Rank(tt.defs, tt.query, tt.limit)
			if len(got) != tt.wantLen {
				t.Fatalf("got %d matches, want %d: %v", len(got), tt.wantLen, got)
			}
			if tt.wantFirst != "" && got[0].Name != tt.wantFirst {
				t.Errorf("first is %s, want %s", got[0].Name, tt.wantFirst)
			}
			for _, m := range got {
				if tt.wantZero != (m.Score == 0) {
					t.Errorf("match %v: want zero score %v", m, tt.wantZero)
				}
			}
		})
	}
}

func TestRankInvalidUTF8(t *testing.T) {
	got := Rank(loadTools(t), "\xff\xfeslack channel", 1)
	if len(got) != 1 || !strings.HasPrefix(got[0].Name, "slack.") {
		t.Errorf("got %v, want a slack tool", got)
	}
}

func TestRankTieBreakByName(t *testing.T) {
	defs := []tools.Definition{
		{Name: "zeta", Description: "export data"},
		{Name: "alpha", Description: "export data"},
		{Name: "mid", Description: "export data"},
	}
	got := Rank(defs, "export", 0)
	var names []string
	for _, m := range got {
		names = append(names, m.Name)
	}
	if want := []string{"alpha", "mid", "zeta"}; !reflect.DeepEqual(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
	if got[0].Score != got[2].Score {
		t.Errorf("equal tools have different scores: %v", got)
	}
}

func TestRankDeterministic(t *testing.T) {
	defs := loadTools(t)
	queries := []string{"list events", "slack message", "employee", "pull request repo"}
	want := map[string][]Match{}
	for _, q := range queries {
		want[q] = Rank(defs, q, 0)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		r.Shuffle(len(defs), func(i, j int) { defs[i], defs[j] = defs[j], defs[i] })
		for _, q := range queries {
			if got := Rank(defs, q, 0); !reflect.DeepEqual(got, want[q]) {
				t.Fatalf("Rank(%q) depends on the order of the tools:\n%v\n%v", q, got, want[q])
			}
		}
	}
}

func TestFieldWeights(t *testing.T) {
	defs := []tools.Definition{
		{Name: "in_description", Description: "manage invoice records"},
		{Name: "invoice_tool", Description: "manage records"},
		{Name: "by_property", Description: "manage records", InputSchema: json.RawMessage(`{"properties":{"invoice":{}}}`)},
		{Name: "bad_schema", Description: "manage records", InputSchema: json.RawMessage(`{"properties":`)},
	}
	got := Rank(defs, "invoice", 0)
	var names []string
	for _, m := range got {
		names = append(names, m.Name)
	}
	if want := []string{"invoice_tool", "in_description", "by_property"}; !reflect.DeepEqual(names, want) {
		t.Errorf("order %v, want %v (name > description > property)", names, want)
	}
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"github.search_issues", []string{"github", "search", "issue"}},
		{"searchIssues", []string{"search", "issue"}},
		{"HTTPServer", []string{"http", "server"}},
		{"list-events", []string{"list", "event"}},
		{"The status of the policies", []string{"status", "policy"}},
		{"boxes branches addresses wishes", []string{"box", "branch", "address", "wish"}},
		{"analysis bus news v2 s3", []string{"analysis", "bus", "new", "v2", "s3"}},
		{"Ünïcode Straße", []string{"ünïcode", "straße"}},
		{"", nil},
		{"...", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Tokenize(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzRank(f *testing.F) {
	f.Add("github.search_issues", "Search issues.", "find bugs")
	f.Add("aB", "\xff", "ABC def")
	f.Fuzz(func(t *testing.T, name, desc, query string) {
		defs := []tools.Definition{{Name: name, Description: desc}, {Name: "other", Description: query}}
		got := Rank(defs, query, 0)
		if len(got) > len(defs) {
			t.Fatalf("more matches than tools: %v", got)
		}
		for _, m := range got {
			if m.Score < 0 || m.Score != m.Score {
				t.Fatalf("bad score %v", m)
			}
		}
	})
}

func manyTools(n int) []tools.Definition {
	words := []string{"issue", "message", "event", "expense", "deal", "page", "file", "user", "team", "report"}
	verbs := []string{"get", "list", "create", "update", "delete", "search"}
	defs := make([]tools.Definition, n)
	for i := range defs {
		w, v := words[i%len(words)], verbs[(i/len(words))%len(verbs)]
		defs[i] = tools.Definition{
			Name:        fmt.Sprintf("svc%d.%s_%s", i/60, v, w),
			Description: fmt.Sprintf("%s a %s in service %d, with paging and filters by owner and date.", v, w, i/60),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"owner":{"type":"string"},"limit":{"type":"integer"}}}`),
		}
	}
	return defs
}

// BenchmarkRank500 measures building the index of 500 tools and ranking
// one query, as the package-level Rank does.
func BenchmarkRank500(b *testing.B) {
	defs := manyTools(500)
	b.ReportAllocs()
	for b.Loop() {
		Rank(defs, "search the expense reports of my team by owner", 10)
	}
}

// BenchmarkIndexRank500 measures ranking one query against a prebuilt
// index of 500 tools.
func BenchmarkIndexRank500(b *testing.B) {
	ix := NewIndex(manyTools(500))
	b.ReportAllocs()
	for b.Loop() {
		ix.Rank("search the expense reports of my team by owner", 10)
	}
}
