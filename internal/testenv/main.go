package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// Main runs the tests of a package against one environment, which opts describes: it starts
// the environment, sets *env, runs the tests and stops it. A package whose tests share an
// environment and need nothing else at start uses it as its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{Name: "x"}, &env)) }
func Main(m *testing.M, opts Options, env **Env) int {
	started, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = started
	code := m.Run()
	if err := started.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}
