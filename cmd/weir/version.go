package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/weirstream/weir/jobfile"
)

// cmdVersion prints weir's version, the module and commit it was built
// from and the Go that built it, from the binary's build information.
func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir version", stderr)
	deps := fs.Bool("deps", false, "also print every module weir was built with, and its version")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weir version [--deps]\n\nPrints weir's version, the module version and the commit it was built from (from\nthe binary's build information), and the Go version and system it was built for.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		fs.Usage()
		return 2
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprint(stdout, versionText(info, *deps))
	return 0
}

// versionText is what weir version prints for a binary's build
// information (nil: none).
func versionText(info *debug.BuildInfo, deps bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "weir %s\n", version)
	if info == nil {
		fmt.Fprintf(&b, "module: unknown (no build information)\ngo: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return b.String()
	}
	fmt.Fprintf(&b, "module: %s %s\n", info.Main.Path, info.Main.Version)
	set := map[string]string{}
	for _, s := range info.Settings {
		set[s.Key] = s.Value
	}
	switch rev := set["vcs.revision"]; {
	case rev == "":
		b.WriteString("commit: unknown (built without version control information)\n")
	default:
		fmt.Fprintf(&b, "commit: %s", rev)
		if t := set["vcs.time"]; t != "" {
			fmt.Fprintf(&b, " (%s)", t)
		}
		if set["vcs.modified"] == "true" {
			b.WriteString(", with changes not committed")
		}
		b.WriteString("\n")
	}
	goos, goarch := set["GOOS"], set["GOARCH"]
	if goos == "" {
		goos, goarch = runtime.GOOS, runtime.GOARCH
	}
	fmt.Fprintf(&b, "go: %s %s/%s\n", info.GoVersion, goos, goarch)
	if deps {
		for _, d := range info.Deps {
			v := d.Version
			if d.Replace != nil {
				v += " => " + d.Replace.Path + " " + d.Replace.Version
			}
			fmt.Fprintf(&b, "dep: %s %s\n", d.Path, v)
		}
	}
	return b.String()
}

// cmdSchema prints the JSON schema of job files.
func cmdSchema(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir schema", stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weir schema\n\nPrints the JSON schema of job files (the file docs/job.schema.json of the\nrepository), for editors that check YAML against one.\n")
	}
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		fs.Usage()
		return 2
	}
	stdout.Write(jobfile.Schema())
	return 0
}
