package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// source is the commit a release is built from.
type source struct {
	commit string
	time   time.Time // the commit's time: every timestamp in the release
}

// readSource checks that repo is a clean work tree whose HEAD carries the
// tag version, and returns its commit. A dirty tree would build something
// no commit holds; an untagged one would name a release after no tag.
func readSource(ctx context.Context, repo, version string) (source, error) {
	commit, err := git(ctx, repo, "rev-parse", "HEAD")
	if err != nil {
		return source{}, hinted(err, "run make release in a clone of the smsform repository")
	}
	status, err := git(ctx, repo, "status", "--porcelain")
	if err != nil {
		return source{}, err
	}
	if status != "" {
		first, _, _ := strings.Cut(status, "\n")
		return source{}, hinted(fmt.Errorf("the work tree has changes (%s): a release is built from a commit", strings.TrimSpace(first)),
			"commit or stash them (git status lists them)")
	}
	tagged, err := git(ctx, repo, "rev-parse", "-q", "--verify", "refs/tags/"+version+"^{commit}")
	if err != nil || tagged != commit {
		return source{}, hinted(fmt.Errorf("HEAD (%.12s) is not tagged %s", commit, version),
			fmt.Sprintf("tag it first: git tag -a %s -m %s; then make release VERSION=%s", version, version, version))
	}
	secs, err := git(ctx, repo, "log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return source{}, err
	}
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return source{}, fmt.Errorf("commit time %q: %w", secs, err)
	}
	return source{commit: commit, time: time.Unix(n, 0).UTC()}, nil
}

// git runs git in repo and returns its output, trimmed.
func git(ctx context.Context, repo string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && stderr.Len() > 0 {
			return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
