package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/words"
)

// campaignFiles is the campaign files a command works on: the files given;
// for a folder given, the campaigns of the project whose root it is, else
// its *.yaml files; with nothing given, the campaigns of the project of
// the current folder. many is true unless exactly one file was given, and
// then the command reports campaign by campaign.
func campaignFiles(pos []string) (files []string, many bool, err error) {
	if len(pos) == 0 {
		proj, err := campaign.ProjectFor(".")
		if err != nil {
			return nil, true, err
		}
		if proj == nil {
			return nil, true, withHint(fmt.Errorf("%w: no campaign given, and no %s here or above", ErrUsage, campaign.ProjectFile),
				"give campaign files or folders, or run this in a project (smsform init writes one)")
		}
		files, err := projectCampaigns(proj)
		return files, true, err
	}
	for _, arg := range pos {
		fi, err := os.Stat(arg)
		if err != nil || !fi.IsDir() {
			files = append(files, arg) // Load says what is wrong with it
			continue
		}
		in, err := folderCampaigns(arg)
		if err != nil {
			return nil, true, err
		}
		files = append(files, in...)
		many = true
	}
	return uniqueFiles(files), many || len(pos) > 1, nil
}

// projectCampaigns is the project's campaign files as paths relative to
// the current folder when they are below it (as people type them).
func projectCampaigns(proj *campaign.Project) ([]string, error) {
	abs, err := proj.CampaignFiles()
	if err != nil {
		return nil, err
	}
	if len(abs) == 0 {
		return nil, withHint(fmt.Errorf("%s: campaigns: %s %s no file", proj.Path, strings.Join(proj.Campaigns, ", "), words.Plural(len(proj.Campaigns), "matches", "match")),
			"add a campaign under %s, or say where they are with campaigns: in %s", proj.Dir, campaign.ProjectFile)
	}
	wd, err := os.Getwd()
	if err != nil {
		return abs, nil
	}
	files := make([]string, len(abs))
	for i, a := range abs {
		files[i] = a
		if rel, err := filepath.Rel(wd, a); err == nil && !strings.HasPrefix(rel, "..") {
			files[i] = rel
		}
	}
	return files, nil
}

// folderCampaigns is the campaigns of a folder: its project's when it holds
// the project file, else the YAML files in it.
func folderCampaigns(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, campaign.ProjectFile)); err == nil {
		proj, err := campaign.LoadProject(filepath.Join(dir, campaign.ProjectFile))
		if err != nil {
			return nil, err
		}
		abs, err := proj.CampaignFiles()
		if err != nil {
			return nil, err
		}
		var files []string
		for _, a := range abs {
			if rel, err := filepath.Rel(proj.Dir, a); err == nil {
				files = append(files, filepath.Join(dir, rel))
			}
		}
		return files, nil
	}
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return nil, err
		}
		for _, f := range m {
			if filepath.Base(f) != campaign.ProjectFile {
				files = append(files, f)
			}
		}
	}
	slices.Sort(files)
	if len(files) == 0 {
		return nil, withHint(fmt.Errorf("%w: folder %s holds no campaign file (*.yaml)", ErrUsage, dir), "give the campaign files, or the folder that holds them")
	}
	return files, nil
}

func uniqueFiles(files []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		key := canonical(f)
		if !seen[key] {
			seen[key] = true
			out = append(out, f)
		}
	}
	return out
}

// canonical is a path as compared: absolute, links resolved where it
// exists.
func canonical(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// changedSince keeps the campaigns that differ between the git revision
// ref and the work tree: the campaign file or any file it reads (its lists,
// exclusions, price table, project file), tracked and changed, or new and
// not ignored. A campaign that does not load is kept: its error is news
// whoever caused it.
func changedSince(ctx context.Context, env Env, ref string, files []string) ([]string, error) {
	changed, err := gitChanged(ctx, ref)
	if err != nil {
		return nil, err
	}
	var keep []string
	for _, f := range files {
		c, err := campaign.Load(f)
		if err != nil || slices.ContainsFunc(c.Files(), func(p string) bool { return changed[canonical(p)] }) {
			keep = append(keep, f)
		}
	}
	fmt.Fprintf(env.Stderr, "smsform: %s of %s changed since %s\n", words.Count(len(keep)), words.N(len(files), "campaign", "campaigns"), ref)
	return keep, nil
}

// gitChanged is the set of files (canonical paths) that differ between ref
// and the work tree, untracked ones included.
func gitChanged(ctx context.Context, ref string) (map[string]bool, error) {
	if strings.HasPrefix(ref, "-") {
		return nil, fmt.Errorf("%w: --changed-since %q is not a git revision", ErrUsage, ref)
	}
	top, err := git(ctx, ".", "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, withHint(err, "--changed-since needs a git work tree")
	}
	top = strings.TrimSpace(top)
	diff, err := git(ctx, top, "diff", "--name-only", "-z", ref, "--")
	if err != nil {
		return nil, withHint(err, "is %s fetched? in CI, check out with the history (actions/checkout: fetch-depth: 0)", ref)
	}
	untracked, err := git(ctx, top, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, err
	}
	changed := map[string]bool{}
	for _, name := range strings.Split(diff+untracked, "\x00") {
		if name != "" {
			changed[canonical(filepath.Join(top, filepath.FromSlash(name)))] = true
		}
	}
	return changed, nil
}

// git runs git in dir and returns its output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && stderr.Len() > 0 {
			err = errors.New(strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}
