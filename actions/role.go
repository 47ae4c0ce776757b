package actions

import (
	"fmt"

	"github.com/pgconsole/console/internal/auth"
)

// Actor is who runs an action: an operator account or an API token's name,
// and its role (one of auth's roles: viewer, operator, admin).
type Actor struct {
	Name string
	Role string
}

func checkRole(a Actor, s Spec) error {
	if !auth.RoleAtLeast(a.Role, s.Role) {
		return fmt.Errorf("%s needs the %s role; %s is %q: %w", s.Name, s.Role, a.Name, a.Role, ErrForbidden)
	}
	return nil
}
