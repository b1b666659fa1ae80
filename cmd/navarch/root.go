package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Exit codes: 1 for a failed operation, 2 for a usage error.
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks an error in the command line itself.
type usageError struct{ error }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) {
		return exitUsage
	}
	return exitFailure
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "navarch",
		Short: "ApplicationSets and multi-cluster GitOps for Kubernetes",
		Long: `navarch turns one ApplicationSet into one Application per cluster and app, and keeps every
cluster in sync with Git.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newControllerCommand(), newGenerateCommand(), newDevCommand(), newVersionCommand())
	root.AddCommand(newAppCommand())
	root.AddCommand(newAppSetCommand())
	root.AddCommand(newClusterCommand())
	root.AddCommand(newProjectCommand())
	root.AddCommand(newStatusCommand())
	root.AddCommand(newImportCommand())
	root.AddCommand(newDemoCommand())
	root.AddCommand(newDashboardCommand())
	return root
}
