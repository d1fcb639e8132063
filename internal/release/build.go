package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/smsform/smsform/internal/atomicfile"
)

const (
	module = "github.com/smsform/smsform"
	// cyclonedxVersion is the SBOM tool, pinned: a maintained CycloneDX
	// tool for Go modules whose -noserial and -notimestamp leave nothing in
	// the SBOM that depends on when or where it ran.
	cyclonedx        = "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
	cyclonedxVersion = "v1.10.0"
)

// builder makes the release files of one commit.
type builder struct {
	opts     options
	src      source
	tmp      string // a folder of its own, removed after the run
	sbomTool string // the installed SBOM tool, once installed
	man      []byte // the manual page, once written
}

// platform builds smsform for p and writes its archive, and its SBOM
// when asked; it returns their names in the output folder.
func (b *builder) platform(ctx context.Context, p platform) ([]string, error) {
	bin := "smsform"
	if p.os == "windows" {
		bin += ".exe"
	}
	binPath := filepath.Join(b.tmp, p.String(), bin)
	if err := b.goBuild(ctx, p, binPath); err != nil {
		return nil, err
	}
	a, err := b.contents(ctx, p, bin, binPath)
	if err != nil {
		return nil, err
	}
	name, write := a.dir+".tar.gz", a.writeTarGz
	if p.os == "windows" {
		name, write = a.dir+".zip", a.writeZip
	}
	if err := atomicfile.Write(filepath.Join(b.opts.out, name), 0o644, write); err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	names := []string{name}
	if b.opts.sbom {
		sbom := a.dir + ".cdx.json"
		if err := b.writeSBOM(ctx, p, filepath.Join(b.opts.out, sbom)); err != nil {
			return nil, err
		}
		names = append(names, sbom)
	}
	return names, nil
}

// docFiles are the files of the commit every archive carries beside the
// binary: what smsform is, its licence and what each release changed.
var docFiles = []string{"README.md", "LICENSE", changelogFile}

// manPath is where an archive holds the manual page.
const manPath = "man/smsform.1"

// contents is what the archive for p holds: the binary, its manual page
// and docFiles.
func (b *builder) contents(ctx context.Context, p platform, bin, binPath string) (archive, error) {
	exe, err := os.ReadFile(binPath)
	if err != nil {
		return archive{}, err
	}
	page, err := b.manPage(ctx)
	if err != nil {
		return archive{}, err
	}
	entries := []entry{{name: bin, mode: 0o755, data: exe}, {name: manPath, mode: 0o644, data: page}}
	for _, name := range docFiles {
		data, err := os.ReadFile(filepath.Join(b.opts.repo, name))
		if err != nil {
			return archive{}, err
		}
		entries = append(entries, entry{name: name, mode: 0o644, data: data})
	}
	return archive{dir: fmt.Sprintf("smsform_%s_%s", b.opts.version, p), mtime: b.src.time, entries: entries}, nil
}

// manPage is smsform(1) as smsform man writes it, from a binary built for
// this machine as the release's are (the page is the same on every
// platform): its date is the commit's, which -buildvcs stamps in it.
func (b *builder) manPage(ctx context.Context) ([]byte, error) {
	if b.man != nil {
		return b.man, nil
	}
	exe := filepath.Join(b.tmp, "man", "smsform")
	if err := b.goBuild(ctx, platform{runtime.GOOS, runtime.GOARCH}, exe); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "man")
	cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", b.src.time.Unix()))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	page, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("smsform man: %w\n%s", err, strings.TrimSpace(stderr.String()))
	}
	b.man = page
	return page, nil
}

// goBuild builds smsform for p. The environment is pinned where it would
// change the binary: no cgo, no GOFLAGS of the caller's (a -race or -tags
// there would build something else), the default instruction sets. The
// commit and its time come from -buildvcs, the version from -ldflags.
func (b *builder) goBuild(ctx context.Context, p platform, out string) error {
	cmd := exec.CommandContext(ctx, b.opts.goCmd, "build", "-trimpath", "-buildvcs=true",
		"-ldflags=-s -w -X "+module+"/internal/cli.Version="+b.opts.version, "-o", out, ".")
	cmd.Dir = b.opts.repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch, "GOFLAGS=",
		"GOAMD64=", "GOARM64=", "GOEXPERIMENT=")
	return runCmd(cmd, "go build "+p.String())
}

// writeSBOM writes the CycloneDX SBOM of smsform as built for p.
func (b *builder) writeSBOM(ctx context.Context, p platform, out string) error {
	if b.sbomTool == "" {
		if err := b.installSBOMTool(ctx); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, b.sbomTool, "app", "-json", "-noserial", "-notimestamp", "-std", "-output", out, b.opts.repo)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch, "GOFLAGS=")
	return runCmd(cmd, "cyclonedx-gomod "+p.String())
}

// installSBOMTool builds the pinned SBOM tool with -trimpath: the SBOM
// records the tool's own hashes, so the tool must be reproducible too.
func (b *builder) installSBOMTool(ctx context.Context) error {
	bin := filepath.Join(b.tmp, "tools")
	cmd := exec.CommandContext(ctx, b.opts.goCmd, "install", "-trimpath", cyclonedx+"@"+cyclonedxVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "CGO_ENABLED=0", "GOFLAGS=", "GOOS=", "GOARCH=")
	if err := runCmd(cmd, "go install cyclonedx-gomod"); err != nil {
		return hinted(err, "the SBOM tool comes from the Go module proxy; make release SBOM=0 builds without SBOMs")
	}
	b.sbomTool = filepath.Join(bin, "cyclonedx-gomod")
	return nil
}

// runCmd runs cmd, giving its output in the error when it fails.
func runCmd(cmd *exec.Cmd, what string) error {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg, _ := io.ReadAll(&out)
		return fmt.Errorf("%s: %w\n%s", what, err, strings.TrimSpace(string(msg)))
	}
	return nil
}
