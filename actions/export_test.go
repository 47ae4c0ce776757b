package actions

// TableGrantTables returns, for each entry of the declaration RolesSQL is
// built from, its tables and each role's rights on them (role to rights,
// roles with none left out).
func TableGrantTables() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, g := range tableGrants {
		rights := map[string]string{}
		for role, r := range map[string]string{"console_monitor": g.Monitor, "console_operator": g.Operator,
			"console_worker": g.Worker, "console_web": g.Web} {
			if r != "" {
				rights[role] = r
			}
		}
		for _, t := range g.Tables {
			out[t] = rights
		}
	}
	return out
}
