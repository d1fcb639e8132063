package cli

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/words"
)

// initFiles is the project smsform init writes: a project file with a file
// state in a git-ignored folder, a campaign with its lists and prices, the
// two GitHub workflows and a .gitignore. "all:" takes the dotfiles too.
//
//go:embed all:initfiles
var initFiles embed.FS

const initRoot = "initfiles"

// ErrExists is returned by init when a file it would write is there already.
var ErrExists = errors.New("files exist")

func newInitCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "init [DIR]", Args: positional(0, 1, "at most one folder")}
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		dir := "."
		if len(pos) == 1 {
			dir = pos[0]
		}
		written, err := writeProject(dir, Version)
		for _, f := range written {
			fmt.Fprintf(env.Stdout, "created %s\n", filepath.Join(dir, f))
		}
		if err != nil {
			return err
		}
		if ref := actionRef(Version); ref == "main" {
			warnf(env, "this smsform is a development build (%s), not a release: the workflows and the schema line name smsform/smsform@main, which moves; a release writes its own version there", Version)
		}
		if !inAutomation(env) {
			sayInitNext(env, dir)
		}
		return nil
	}
	return cmd
}

func sayInitNext(env Env, dir string) {
	cd := ""
	if dir != "." {
		cd = "cd " + dir + " && "
	}
	fmt.Fprintf(env.Stderr, "hint: try it against the sandbox: %ssmsform sandbox --addr 127.0.0.1:8080 & then smsform plan campaigns/welcome.yaml\n", cd)
}

// initFile is one file init writes.
type initFile struct {
	rel  string // relative to the project's folder, slash-separated
	data []byte
}

// writeProject writes the project into dir, creating dir if needed. It
// never overwrites: when any file is there already it writes nothing and
// names them all; every file is created with O_EXCL, so one that appears
// meanwhile (or a symbolic link in its place) is not written through
// either. It returns the files it wrote.
func writeProject(dir, version string) ([]string, error) {
	files, err := projectFiles(version)
	if err != nil {
		return nil, err
	}
	var there []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.rel))); !errors.Is(err, fs.ErrNotExist) {
			there = append(there, f.rel)
		}
	}
	if len(there) > 0 {
		return nil, withHint(fmt.Errorf("%w: init writes only new files, and %s already %s in %s: nothing was written",
			ErrExists, strings.Join(there, ", "), words.Plural(len(there), "exists", "exist"), dir),
			"move them away, or run smsform init NEW-FOLDER for a project of its own")
	}
	var written []string
	for _, f := range files {
		if err := createExcl(filepath.Join(dir, filepath.FromSlash(f.rel)), f.data); err != nil {
			return written, fmt.Errorf("init: %w", err)
		}
		written = append(written, f.rel)
	}
	return written, makeStateFolder(dir)
}

// makeStateFolder creates the folder of the new project's state file: the
// state package refuses a folder that does not exist (a mistyped path
// must not start a second ledger), and this one is git-ignored, so git
// never brings it. 0700: the state holds phone numbers.
func makeStateFolder(dir string) error {
	p, err := campaign.LoadProject(filepath.Join(dir, campaign.ProjectFile))
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	loc, err := projectState(p)
	if err != nil || loc.IsPostgres() {
		return err
	}
	if err := os.Mkdir(filepath.Dir(loc.File()), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("init: %w", err)
	}
	return nil
}

// projectFiles reads the embedded project, with the schema's and the
// action's version filled in: this smsform's release, or main for a build
// that has none (a development build: say so, devNote).
func projectFiles(version string) ([]initFile, error) {
	ref := actionRef(version)
	var files []initFile
	err := fs.WalkDir(initFiles, initRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := initFiles.ReadFile(p)
		if err != nil {
			return err
		}
		data = []byte(strings.NewReplacer("@SCHEMA_REF@", ref, "@ACTION_REF@", ref).Replace(string(data)))
		files = append(files, initFile{rel: strings.TrimPrefix(p, initRoot+"/"), data: data})
		return nil
	})
	return files, err
}

// createExcl writes a new file, never one that exists.
func createExcl(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// actionRef is the version written into generated workflows and schema
// lines: this release's, or main for a development build.
func actionRef(version string) string {
	if !strings.HasPrefix(version, "v") || strings.ContainsAny(version, " /") {
		return "main"
	}
	return version
}
