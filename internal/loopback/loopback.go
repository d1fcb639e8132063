// Package loopback holds the one rule for "this address stays on this
// machine", used by the sandbox (which listens only there) and by the client
// (which allows plain http only there).
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host (a name or an IP literal, without brackets or
// port) is loopback: "localhost" in any case, or an address in 127.0.0.0/8 or
// ::1 (an IPv4-mapped ::ffff:127.x too). Other names are refused even when
// they resolve to loopback: what a name resolves to can change, and the rule
// must not depend on DNS. "localhost." is refused for the same reason: it is a
// fully qualified name a resolver looks up.
func Host(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
