// Command release builds smsform's release files from one tagged commit:
// an archive per platform (dist/smsform_VERSION_OS_ARCH.tar.gz, .zip for
// windows) holding the binary, its manual page (man/smsform.1, written by
// the binary's own smsform man), README.md, LICENSE and CHANGELOG.md; a
// CycloneDX SBOM beside each; dist/SHA256SUMS; and dist/RELEASE_NOTES.md,
// the release's section of CHANGELOG.md, which the release is refused
// without.
//
// Every byte depends only on the commit and the Go toolchain: binaries are
// built with -trimpath and CGO_ENABLED=0 from a clean tree, archives list
// their entries in a fixed order with the commit's time, owner root and fixed
// modes, and gzip and zip headers carry nothing of the machine. Two clones at
// different paths give byte-identical files (release_test.go checks it).
//
//	go run ./internal/release -version v0.3.0 -out dist
//
// The version must be a tag on HEAD, so that the archive named v0.3.0, `go
// install …@v0.3.0` and the SBOM all describe the same source.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/smsform/smsform/internal/atomicfile"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		var h interface{ Hint() string }
		if errors.As(err, &h) {
			fmt.Fprintln(os.Stderr, "hint:", h.Hint())
		}
		os.Exit(1)
	}
}

// options are what one run builds.
type options struct {
	version   string     // v0.3.0
	repo      string     // the repository's work tree
	out       string     // where the release files go
	platforms []platform // what to build for
	sbom      bool       // write a CycloneDX SBOM beside each archive
	goCmd     string     // the go command
}

// platform is a GOOS/GOARCH pair.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "_" + p.arch }

// allPlatforms are what a release is built for.
var allPlatforms = []platform{
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"linux", "amd64"}, {"linux", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// versionRE is a semantic version with its v, as Go module tags are written.
var versionRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := options{}
	fs.StringVar(&o.version, "version", "", "the release's version, a tag on HEAD (v0.3.0)")
	fs.StringVar(&o.repo, "repo", ".", "the repository to build")
	fs.StringVar(&o.out, "out", "dist", "where the release files go (relative to -repo)")
	only := fs.String("platforms", "", "comma-separated OS_ARCH pairs to build (default: every release platform)")
	fs.BoolVar(&o.sbom, "sbom", true, "write a CycloneDX SBOM beside each archive (cyclonedx-gomod "+cyclonedxVersion+")")
	fs.StringVar(&o.goCmd, "go", "go", "the go command")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w (flags: -version, -repo, -out, -platforms, -sbom, -go)", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if !versionRE.MatchString(o.version) {
		return o, hinted(fmt.Errorf("version %q is not a semantic version such as v0.3.0", o.version), "make release VERSION=v0.3.0")
	}
	var err error
	o.platforms, err = choosePlatforms(*only)
	if !filepath.IsAbs(o.out) {
		o.out = filepath.Join(o.repo, o.out)
	}
	return o, err
}

func choosePlatforms(only string) ([]platform, error) {
	if only == "" {
		return allPlatforms, nil
	}
	var ps []platform
	for _, name := range strings.Split(only, ",") {
		found := false
		for _, p := range allPlatforms {
			if p.String() == name {
				ps, found = append(ps, p), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown platform %q (known: %v)", name, allPlatforms)
		}
	}
	return ps, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	src, err := readSource(ctx, o.repo, o.version)
	if err != nil {
		return err
	}
	// The notes are read before minutes of building: a release whose
	// changelog says nothing of it stops here.
	notes, err := readNotes(o.repo, o.version)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "smsform-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	b := builder{opts: o, src: src, tmp: tmp}
	var written []string
	for _, p := range o.platforms {
		files, err := b.platform(ctx, p)
		if err != nil {
			return err
		}
		written = append(written, files...)
	}
	if err := writeSums(o.out, written); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(o.out, notesFile), 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, notes)
		return err
	}); err != nil {
		return err
	}
	for _, f := range append(written, sumsFile, notesFile) {
		fmt.Fprintln(stdout, filepath.Join(o.out, f))
	}
	return nil
}

// hintError carries what to do next.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }
func (e *hintError) Hint() string  { return e.hint }

func hinted(err error, hint string) error { return &hintError{err, hint} }
