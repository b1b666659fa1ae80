package membership

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/navarch-io/navarch/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	var err error
	if env, err = testenv.Start(context.Background(), testenv.Options{Name: "membership"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}
