package membership

import (
	"os"
	"testing"

	"github.com/navarch-io/navarch/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Name: "membership"}, &env))
}
