package demo

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"sync"
	"time"
)

// year is the only year the company has data for.
const year = 2026

// seedTag is mixed into every generator seed. Changing it changes every
// expense (and the committed example result).
const seedTag = "ptc-demo-company/v2"

// The tables below are the company's fixed data. Nothing writes to them:
// each tool set builds its own values from them.

// Departments, in the order listings use.
var departmentNames = [...]string{"engineering", "sales", "marketing", "support"}

// Levels, from the most junior.
var levelNames = [...]string{"junior", "mid", "senior", "staff", "principal"}

// travelLimits is each level's travel budget per quarter, in cents.
var travelLimits = [...]cents{
	150000, // junior
	200000, // mid
	300000, // senior
	400000, // staff
	500000, // principal
}

// Expense categories. Travel comes first; the others are drawn with the
// weights in otherCategories.
var categoryNames = [...]string{
	"travel", "meals", "lodging", "software", "hardware", "training", "office", "communications",
}

// otherCategories are the non-travel categories: their draw weight and
// amount range in cents.
var otherCategories = [...]struct {
	name   string
	weight int
	lo, hi cents
}{
	{"meals", 35, 800, 9500},
	{"lodging", 10, 8900, 42000},
	{"software", 15, 900, 49900},
	{"hardware", 5, 2500, 189900},
	{"training", 5, 4900, 129900},
	{"office", 20, 300, 12000},
	{"communications", 10, 1500, 9000},
}

// quarterNames are the quarters of the year.
var quarterNames = [...]string{"Q1", "Q2", "Q3", "Q4"}

// roster is the company: department, member id, name, level index.
var roster = [...]struct {
	dept, id, name string
	level          int
}{
	{"engineering", "eng-01", "Ada Okafor", 4},
	{"engineering", "eng-02", "Bruno Silva", 3},
	{"engineering", "eng-03", "Chen Wei", 2},
	{"engineering", "eng-04", "Dana Kowalski", 1},
	{"engineering", "eng-05", "Elif Yilmaz", 0},
	{"engineering", "eng-06", "Farid Haddad", 2},
	{"engineering", "eng-07", "Grace Mensah", 1},
	{"engineering", "eng-08", "Hiro Tanaka", 3},
	{"engineering", "eng-09", "Ines Moreau", 1},
	{"engineering", "eng-10", "Jonas Berg", 0},
	{"engineering", "eng-11", "Kavya Rao", 2},
	{"engineering", "eng-12", "Liam O'Brien", 1},
	{"engineering", "eng-13", "Maya Cohen", 4},
	{"engineering", "eng-14", "Nikolai Petrov", 2},
	{"engineering", "eng-15", "Olivia Grant", 0},
	{"engineering", "eng-16", "Pablo Ortega", 1},
	{"engineering", "eng-17", "Quinn Harper", 3},
	{"engineering", "eng-18", "Rosa Jiménez", 1},
	{"engineering", "eng-19", "Samir Khan", 2},
	{"engineering", "eng-20", "Tara Lindqvist", 0},
	{"sales", "sal-01", "Uma Patel", 2},
	{"sales", "sal-02", "Victor Lemaire", 1},
	{"sales", "sal-03", "Wendy Zhao", 0},
	{"sales", "sal-04", "Xavier Dubois", 3},
	{"sales", "sal-05", "Yara Nasser", 1},
	{"sales", "sal-06", "Zoe Adams", 0},
	{"sales", "sal-07", "Amir Farouk", 2},
	{"sales", "sal-08", "Beatriz Costa", 4},
	{"marketing", "mkt-01", "Caleb Novak", 2},
	{"marketing", "mkt-02", "Daria Ivanova", 1},
	{"marketing", "mkt-03", "Emeka Obi", 0},
	{"marketing", "mkt-04", "Freya Nilsson", 3},
	{"marketing", "mkt-05", "Gabriel Santos", 1},
	{"marketing", "mkt-06", "Hana Sato", 0},
	{"support", "sup-01", "Isaac Levy", 1},
	{"support", "sup-02", "Julia Becker", 0},
	{"support", "sup-03", "Kofi Asante", 2},
	{"support", "sup-04", "Lena Fischer", 0},
	{"support", "sup-05", "Mateo Rossi", 1},
	{"support", "sup-06", "Nadia Rahman", 3},
	{"support", "sup-07", "Oscar Eriksson", 0},
}

// cents is an amount of US dollars in cents. It marshals as a JSON number
// with exactly two decimals.
type cents int64

// MarshalJSON renders c as dollars with two decimals, e.g. 1234.50.
func (c cents) MarshalJSON() ([]byte, error) {
	var b []byte
	if c < 0 {
		b = append(b, '-')
		c = -c
	}
	b = strconv.AppendInt(b, int64(c/100), 10)
	b = append(b, '.', byte('0'+c%100/10), byte('0'+c%10))
	return b, nil
}

// memberJSON is one element of get_team_members' result.
type memberJSON struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Level string `json:"level"`
}

// expenseJSON is one element of get_expenses' result.
type expenseJSON struct {
	ID       string `json:"id"`
	Date     string `json:"date"`
	Category string `json:"category"`
	Amount   cents  `json:"amount"`
	Currency string `json:"currency"`
}

// budgetJSON is get_budget_by_level's result.
type budgetJSON struct {
	Level       string `json:"level"`
	TravelLimit cents  `json:"travel_limit"`
}

// member is one employee and their lazily generated expenses.
type member struct {
	dept  string
	id    string
	name  string
	level int
	// expenses holds, per quarter, the marshalled line items; each is
	// built at most once, by the first call that needs it.
	expenses [len(quarterNames)]lazyJSON
}

// lazyJSON is JSON built on first use.
type lazyJSON struct {
	once sync.Once
	data []byte
	err  error
}

// company is one tool set's data. Everything but the lazy expenses is
// built by newCompany and read-only afterwards.
type company struct {
	members map[string]*member
	teams   map[string][]byte // department -> marshalled members
	budgets map[string][]byte // level -> marshalled budget
	err     error             // set if building the data failed
}

// newCompany builds the roster and the small, eagerly marshalled results.
// Marshalling these plain values cannot fail in practice; if it ever did,
// the error is kept in c.err and every handler returns it.
func newCompany() *company {
	c := &company{
		members: make(map[string]*member, len(roster)),
		teams:   make(map[string][]byte, len(departmentNames)),
		budgets: make(map[string][]byte, len(levelNames)),
	}
	byDept := make(map[string][]memberJSON, len(departmentNames))
	for _, r := range roster {
		c.members[r.id] = &member{dept: r.dept, id: r.id, name: r.name, level: r.level}
		byDept[r.dept] = append(byDept[r.dept], memberJSON{ID: r.id, Name: r.name, Level: levelNames[r.level]})
	}
	for _, d := range departmentNames {
		team := byDept[d]
		sort.Slice(team, func(i, j int) bool { return team[i].ID < team[j].ID })
		b, err := json.Marshal(team)
		if err != nil {
			c.err = fmt.Errorf("marshal team %s: %w", d, err)
			return c
		}
		c.teams[d] = b
	}
	for i, l := range levelNames {
		b, err := json.Marshal(budgetJSON{Level: l, TravelLimit: travelLimits[i]})
		if err != nil {
			c.err = fmt.Errorf("marshal budget %s: %w", l, err)
			return c
		}
		c.budgets[l] = b
	}
	return c
}

// expensesJSON returns m's marshalled line items for quarter q (0-based),
// generating them on first use.
func (m *member) expensesJSON(q int) ([]byte, error) {
	l := &m.expenses[q]
	l.once.Do(func() {
		l.data, l.err = json.Marshal(generateExpenses(m, q))
	})
	return l.data, l.err
}

// generateExpenses draws m's line items for quarter q from a generator
// seeded by the member and the quarter alone, so the result never depends
// on call order. About one member-quarter in five goes over the travel
// budget of the member's level.
func generateExpenses(m *member, q int) []expenseJSON {
	r := newRNG(seedTag + "/" + m.id + "/" + quarterNames[q])

	n := 20 + r.intn(16) // 20..35 line items
	if m.dept == "engineering" {
		n = 90 + r.intn(21) // 90..110: about 2,000 for the team
	}

	// The travel total is a fraction of the level's limit, above 1 for
	// the members who overspend.
	limit := travelLimits[m.level]
	var permille int64
	if r.intn(100) < 20 {
		permille = 1030 + int64(r.intn(571)) // 103%..160%
	} else {
		permille = 300 + int64(r.intn(671)) // 30%..97%
	}
	travelTotal := limit*cents(permille)/1000 + cents(r.intn(1000)) // + 0..9.99 USD

	nTravel := n*15/100 + r.intn(5)
	items := make([]expenseJSON, 0, n)
	for _, a := range split(r, travelTotal, nTravel) {
		items = append(items, expenseJSON{Category: "travel", Amount: a})
	}
	totalWeight := 0
	for _, oc := range otherCategories {
		totalWeight += oc.weight
	}
	for len(items) < n {
		w := r.intn(totalWeight)
		for _, oc := range otherCategories {
			if w < oc.weight {
				items = append(items, expenseJSON{Category: oc.name, Amount: oc.lo + cents(r.intn(int(oc.hi-oc.lo+1)))})
				break
			}
			w -= oc.weight
		}
	}

	// Dates spread over the quarter; the listing is in date order.
	first := time.Date(year, time.Month(3*q+1), 1, 0, 0, 0, 0, time.UTC)
	days := int(first.AddDate(0, 3, 0).Sub(first).Hours() / 24)
	day := make([]int, len(items))
	for i := range items {
		day[i] = r.intn(days)
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return day[order[a]] < day[order[b]] })
	out := make([]expenseJSON, len(items))
	prefix := "exp-" + m.id + "-" + lowerQuarter(q) + "-"
	for pos, i := range order {
		e := items[i]
		e.ID = prefix + pad3(pos+1)
		e.Date = first.AddDate(0, 0, day[i]).Format(time.DateOnly)
		e.Currency = "USD"
		out[pos] = e
	}
	return out
}

// split divides total into n positive parts with random weights.
func split(r *rng, total cents, n int) []cents {
	weights := make([]int64, n)
	var sum int64
	for i := range weights {
		weights[i] = 20 + int64(r.intn(81)) // 20..100: no part is tiny
		sum += weights[i]
	}
	parts := make([]cents, n)
	var given cents
	for i, w := range weights {
		parts[i] = total * cents(w) / cents(sum)
		given += parts[i]
	}
	parts[n-1] += total - given
	return parts
}

func lowerQuarter(q int) string { return "q" + strconv.Itoa(q+1) }

func pad3(i int) string {
	s := strconv.Itoa(i)
	for len(s) < 3 {
		s = "0" + s
	}
	return s
}

// rng is SplitMix64: small, fast, and the same on every platform.
type rng struct{ s uint64 }

// newRNG seeds a generator with the FNV-1a hash of key.
func newRNG(key string) *rng {
	h := fnv.New64a()
	h.Write([]byte(key)) // hash.Hash.Write never fails
	return &rng{s: h.Sum64()}
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [0, n); n must be positive. The modulo bias is
// irrelevant for demo data.
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }
