package controller

import "github.com/navarch-io/navarch/internal/testenv"

// controllerLogs records the Info lines the controller under test logs, with their key/value
// pairs, so tests can check what an operator reading the log would be told. Everything is also
// passed on to the test's own logger.
var controllerLogs = &testenv.LogRecorder{}
