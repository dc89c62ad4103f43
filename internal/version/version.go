// Package version says which memoryd this is.
//
// It gives the version, the commit it was built from and the Go that built
// it, for `memoryd version`, /healthz, the serve line and /metrics. A release
// build stamps its version and commit with -ldflags "-X github.com/memoryd/memoryd/internal/version.stamped=vX.Y.Z
// -X github.com/memoryd/memoryd/internal/version.stampedCommit=<hash>".
// clients/scripts/pack.mjs does so, building with -buildvcs=false so that
// the bytes do not depend on the work tree. Otherwise both come from the
// module's build information. `go install …@vX.Y.Z` gives the tag, and
// `go build` in a clone gives a pseudo-version and the checkout's commit.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// stamped and stampedCommit are the version and commit a release build sets
// with -ldflags -X.
var stamped, stampedCommit string

// Info is what a build says about itself.
type Info struct {
	Version   string `json:"version"`    // vX.Y.Z, a pseudo-version, or "devel"
	Commit    string `json:"commit"`     // the VCS revision cut to 12 digits, "-dirty" if modified, or "unknown"
	GoVersion string `json:"go_version"` // the Go that built it
}

// String is the one line `memoryd version` prints.
func (i Info) String() string {
	return fmt.Sprintf("memoryd %s (commit %s, %s, %s/%s)", i.Version, i.Commit, i.GoVersion, runtime.GOOS, runtime.GOARCH)
}

var get = sync.OnceValue(func() Info {
	info := Info{Version: "devel", Commit: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = v
		}
		var rev string
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			info.Commit = rev[:min(12, len(rev))]
			if modified {
				info.Commit += "-dirty"
			}
		}
	}
	if stamped != "" {
		info.Version = stamped
	}
	if stampedCommit != "" {
		info.Commit = stampedCommit[:min(12, len(stampedCommit))]
	}
	return info
})

// Get returns this build's Info.
func Get() Info { return get() }
