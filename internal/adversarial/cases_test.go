package adversarial

// allCases is the whole table, family by family.
func allCases() []tcase {
	var cs []tcase
	cs = append(cs, escapeCases()...)
	cs = append(cs, bombCases()...)
	return cs
}
