package actions

import "fmt"

// Roles, weakest first. A role may do everything the ones before it may.
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
	RoleAdmin    = "admin"
)

// Actor is who runs an action: an operator account or an API token's name,
// and its role.
type Actor struct {
	Name string
	Role string
}

func roleRank(role string) int {
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
	return roleRank(role) > 0 && roleRank(role) >= roleRank(min)
}

// ValidRole reports whether role is one of viewer, operator and admin.
func ValidRole(role string) bool { return roleRank(role) > 0 }

func checkRole(a Actor, s Spec) error {
	if !RoleAtLeast(a.Role, s.Role) {
		return fmt.Errorf("%s needs the %s role; %s is %q: %w", s.Name, s.Role, a.Name, a.Role, ErrForbidden)
	}
	return nil
}
