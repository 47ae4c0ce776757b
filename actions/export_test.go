package actions

// DeclaredTables returns the tables the declaration RolesSQL is built from
// has an entry for.
func DeclaredTables() []string {
	var out []string
	for _, g := range tableGrants {
		out = append(out, g.Tables...)
	}
	return out
}
