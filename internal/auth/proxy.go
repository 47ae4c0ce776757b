package auth

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxProxyUserLength bounds the user name a trusted proxy may send.
const MaxProxyUserLength = 128

// ProxyGroupPrefix starts the keys of groups in a proxy role mapping
// ("group:sre"); no proxy user name may start with it.
const ProxyGroupPrefix = "group:"

// proxyUserAccepted says what ValidProxyUser accepts.
const proxyUserAccepted = `a proxy user name is 1 to 128 bytes of printable UTF-8 without surrounding spaces, and does not start with "group:"`

// ValidProxyUser returns nil for a user name a trusted proxy may send, or
// an error whose message says why it is refused and what is accepted: empty, longer than MaxProxyUserLength bytes, invalid UTF-8,
// surrounding spaces, a control character, or a name starting with
// ProxyGroupPrefix (any case), which would take the role of the group of
// that name in the proxy role mapping.
func ValidProxyUser(name string) error {
	why := ""
	switch {
	case name == "":
		why = "is empty"
	case len(name) > MaxProxyUserLength:
		why = fmt.Sprintf("is %d bytes long", len(name))
	case !utf8.ValidString(name):
		why = "is not valid UTF-8"
	case strings.TrimSpace(name) != name:
		why = fmt.Sprintf("%q has surrounding spaces", name)
	case strings.HasPrefix(strings.ToLower(name), ProxyGroupPrefix):
		why = fmt.Sprintf("%q names a group", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		why = fmt.Sprintf("%q contains a control character", name)
	default:
		return nil
	}
	return fmt.Errorf("the proxy user name %s; %s", why, proxyUserAccepted)
}
