package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

// Modules whose versions change what cuzk proves and what its caches hold
// (the circuit cache keys on them), printed by cuzk --version.
var versionModules = []string{"github.com/consensys/gnark", "github.com/consensys/gnark-crypto"}

// writeVersion prints what cuzk --version shows of the build bi: the
// version of the build (semconv.BuildVersion, the string the traces'
// service.version and the daemon's status give), the VCS revision with its
// time and whether the tree was modified (or why there is none), the Go
// version, then the versions of versionModules, one "name value" line each.
func writeVersion(w io.Writer, bi *debug.BuildInfo) {
	if bi == nil {
		fmt.Fprintln(w, "cuzk: the binary carries no build information")
		return
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	line := func(k, v string) { fmt.Fprintf(w, "%-13s %s\n", k, v) }
	line("cuzk", semconv.BuildVersion(bi))
	switch rev := settings["vcs.revision"]; {
	case rev == "":
		line("revision", "none (go run, go test or -buildvcs=false: no VCS stamp)")
	default:
		v := rev
		if t := settings["vcs.time"]; t != "" {
			v += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			v += ", modified tree"
		}
		line("revision", v)
	}
	line("go", bi.GoVersion)
	for _, path := range versionModules {
		v := "not linked"
		for _, d := range bi.Deps {
			if d.Path == path {
				v = d.Version
				if d.Replace != nil {
					v += " => " + d.Replace.Path + " " + d.Replace.Version
				}
			}
		}
		line(path[strings.LastIndex(path, "/")+1:], v)
	}
}

func init() {
	// urfave/cli prints "cuzk version X"; cuzk --version (-v) prints the
	// whole build instead.
	cli.VersionPrinter = func(c *cli.Context) {
		bi, _ := debug.ReadBuildInfo()
		writeVersion(c.App.Writer, bi)
	}
}
