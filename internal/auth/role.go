package auth

// Roles, weakest first. A role may do everything the ones before it may.
// This is the console's one role model: the web layer decides what to show
// with it and the action runner enforces with it.
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
	RoleAdmin    = "admin"
)

// RoleRank orders roles; unknown roles rank 0, below viewer.
func RoleRank(role string) int {
	switch role {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// RoleAtLeast reports whether role includes min (admin includes operator,
// operator includes viewer). An unknown role includes nothing.
func RoleAtLeast(role, min string) bool {
	return RoleRank(role) > 0 && RoleRank(role) >= RoleRank(min)
}

// ValidRole reports whether role is one of viewer, operator and admin.
func ValidRole(role string) bool { return RoleRank(role) > 0 }
