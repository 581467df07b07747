package rank_test

import (
	"fmt"

	"github.com/ptcrun/ptc/internal/rank"
	"github.com/ptcrun/ptc/tools"
)

func ExampleRank() {
	defs := []tools.Definition{
		{Name: "github.search_issues", Description: "Search issues in GitHub repositories."},
		{Name: "slack.post_message", Description: "Post a message to a Slack channel."},
		{Name: "calendar.list_events", Description: "List calendar events between two dates."},
	}
	for _, m := range rank.Rank(defs, "tell the team on Slack about open issues", 2) {
		fmt.Println(m.Name)
	}
	// Output:
	// slack.post_message
	// github.search_issues
}

func ExampleIndex() {
	ix := rank.NewIndex([]tools.Definition{
		{Name: "weather.current", Description: "Current weather for a city."},
		{Name: "weather.forecast", Description: "Weather forecast for the next days."},
		{Name: "get_expenses", Description: "List expense items of an employee."},
	})
	for _, q := range []string{"forecast for Oslo", "expenses of Ann"} {
		fmt.Println(ix.Rank(q, 1)[0].Name)
	}
	// Output:
	// weather.forecast
	// get_expenses
}
