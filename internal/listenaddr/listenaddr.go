// Package listenaddr answers questions about the host:port addresses navarch's servers listen
// on (the controller's metrics, the dashboard): whether an address only accepts connections
// from this machine, and which Host headers name it.
package listenaddr

import (
	"net"
	"strings"
)

// Loopback reports whether address (host:port) only accepts connections from this machine: its
// host is "localhost" or a loopback IP (127.0.0.0/8, ::1). An empty host (":8080") or an
// unspecified address (0.0.0.0, ::) listens on every interface; any other name may resolve
// anywhere, so neither is loopback.
func Loopback(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LocalHost reports whether hostport, the Host header of a request, names this machine's
// loopback interface ("localhost" or a loopback IP, with or without a port) or bound, the
// host part of the address the server listens on. A browser only sends another name when a
// page of that name made the request, e.g. after a DNS-rebinding attack pointed the name at
// 127.0.0.1.
func LocalHost(hostport, bound string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	if b, _, err := net.SplitHostPort(bound); err == nil && b != "" {
		return strings.EqualFold(host, b)
	}
	return false
}
