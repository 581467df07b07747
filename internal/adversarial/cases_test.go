package adversarial

// allCases is the whole table, family by family.
func allCases() []tcase {
	var cs []tcase
	cs = append(cs, escapeCases()...)
	cs = append(cs, fileAccessCases()...)
	cs = append(cs, bombCases()...)
	cs = append(cs, crashCases()...)
	cs = append(cs, floodCases()...)
	cs = append(cs, toolsCases()...)
	cs = append(cs, accountingCases()...)
	cs = append(cs, execIDCases()...)
	cs = append(cs, sessionCases()...)
	cs = append(cs, protocolCases()...)
	cs = append(cs, concurrencyCases()...)
	cs = append(cs, jsonconvCases()...)
	cs = append(cs, approvalsCases()...)
	cs = append(cs, mcpApprovalsCases()...)
	cs = append(cs, wrapperCases()...)
	cs = append(cs, scanCases()...)
	cs = append(cs, transportCases()...)
	cs = append(cs, mcpTransportCases()...)
	cs = append(cs, exhaustionCases()...)
	cs = append(cs, moduleBombCases()...)
	cs = append(cs, pythonCases()...)
	return cs
}
