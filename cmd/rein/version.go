package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version, revision and buildTime are stamped at build time (see
// deploy/Makefile and deploy/Dockerfile):
//
//	-ldflags "-X main.version=v1.2.3 -X main.revision=abc123 -X main.buildTime=2026-01-01T00:00:00Z"
//
// Without them revision comes from the Go toolchain's VCS stamp, when
// the build had one.
var (
	version   = "dev"
	revision  = ""
	buildTime = ""
)

func init() { register(newVersionCmd) }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print rein's version, VCS revision, build time and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rev, built := revision, buildTime
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					switch {
					case s.Key == "vcs.revision" && rev == "":
						rev = s.Value
					case s.Key == "vcs.time" && built == "":
						built = s.Value
					}
				}
			}
			if rev == "" {
				rev = "unknown"
			}
			if built != "" {
				built = ", built " + built
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rein %s (revision %s%s, %s)\n", version, rev, built, runtime.Version())
			return nil
		},
	}
}
