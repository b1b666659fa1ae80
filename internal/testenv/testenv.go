// Package testenv is the one harness of navarch's integration tests: the real local clusters,
// the Git server, and the helpers every test of a shared environment needs.
//
// A test package starts its environment once, in TestMain, and shares it between its tests;
// each test isolates itself in a namespace of its own, named after the test:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { os.Exit(runMain(m)) }
//
//	func runMain(m *testing.M) int {
//		var err error
//		if env, err = testenv.Start(context.Background(), testenv.Options{Git: true}); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			return 1
//		}
//		// Start the controller here, against env.Management.RESTConfig().
//		code := m.Run()
//		if err := env.Stop(); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			return 1
//		}
//		return code
//	}
//
//	func TestSomething(t *testing.T) {
//		ns := testenv.Namespace(t, env.Client)
//		...
//		testenv.Eventually(t, "the Application is created", func() string { ... })
//	}
//
// The controller under test is not started here: the tests of internal/controller use this
// package, so it cannot import the controller. Tests wait with Eventually for what must
// happen and assert with Consistently, over a window, that something does not; never with a
// fixed sleep.
package testenv
