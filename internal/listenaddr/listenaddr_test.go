package listenaddr

import "testing"

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		address string
		want    bool
	}{
		{"127.0.0.1:8080", true},
		{"127.0.0.2:8080", true},
		{"localhost:8080", true},
		{"LOCALHOST:8080", true},
		{"[::1]:8080", true},
		{"[::ffff:127.0.0.1]:8080", true},
		{":8080", false},
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{"[fe80::1%eth0]:8080", false},
		{"192.0.2.1:8080", false},
		{"localhost.example.com:8080", false},
		{"my-laptop:8080", false},
		{"127.0.0.1", false}, // no port: not an address
		{"", false},
	} {
		if got := Loopback(tc.address); got != tc.want {
			t.Errorf("Loopback(%q) = %v, want %v", tc.address, got, tc.want)
		}
	}
}

func TestLocalHost(t *testing.T) {
	for _, tc := range []struct {
		host, bound string
		want        bool
	}{
		{"127.0.0.1:8080", "127.0.0.1:8080", true},
		{"localhost:8080", "127.0.0.1:8080", true},
		{"localhost", "127.0.0.1:8080", true},
		{"[::1]:8080", "127.0.0.1:8080", true},
		{"::1", "[::1]:8080", true},
		{"dashboard.internal:8080", "dashboard.internal:8080", true},
		{"evil.example.com:8080", "127.0.0.1:8080", false},
		{"evil.example.com", "localhost:8080", false},
		{"localhost.evil.example.com:8080", "127.0.0.1:8080", false},
		{"", "127.0.0.1:8080", false},
		{"192.0.2.1:8080", ":8080", false},
	} {
		if got := LocalHost(tc.host, tc.bound); got != tc.want {
			t.Errorf("LocalHost(%q, %q) = %v, want %v", tc.host, tc.bound, got, tc.want)
		}
	}
}
