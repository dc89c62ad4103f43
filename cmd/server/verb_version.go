package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/memoryd/memoryd/internal/version"
)

var versionVerb = verb{
	name:     "version",
	synopsis: "version",
	summary:  "print memoryd's version, commit and Go version (also --version)",
	about: `
Prints one line: memoryd's version (a release's tag, a pseudo-version of the commit for a build from a
clone, or "devel" for go run), the commit it was built from ("-dirty" when the clone had changes,
"unknown" when the build did not record it), the Go that built it, and the platform. A running
memoryd says the same in GET /healthz, its "serving" log line and the memoryd_build_info metric.`,
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		return func(ctx context.Context, in *invocation) error {
			_, err := fmt.Fprintln(in.stdout, version.Get())
			return err
		}
	},
}
