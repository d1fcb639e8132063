package ghaction

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/smsform/smsform/plan/planfile"
)

// github is GitHub's REST API for one repository.
type github struct {
	env   Env
	api   string // GITHUB_API_URL
	repo  string // owner/name
	token string
}

func newGitHub(env Env) (*github, error) {
	g := &github{env: env, api: strings.TrimRight(env.Getenv("GITHUB_API_URL"), "/"), repo: env.Getenv("GITHUB_REPOSITORY"), token: env.Getenv("GITHUB_TOKEN")}
	if g.api == "" {
		g.api = "https://api.github.com"
	}
	if g.repo == "" || g.token == "" {
		return nil, errors.New("GITHUB_REPOSITORY and GITHUB_TOKEN must be set (the action's github-token input)")
	}
	return g, nil
}

// call sends one request and decodes a JSON answer into out (when not nil).
func (g *github) call(ctx context.Context, method, url string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	if strings.HasPrefix(url, "/") {
		url = g.api + url
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+g.token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.env.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("GitHub %s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		return fmt.Errorf("GitHub %s %s: %s: %s", method, req.URL.Path, resp.Status, strings.TrimSpace(string(msg)))
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// commentMarker starts the action's comment on a pull request, so that the
// next run finds it and edits it rather than adding another.
const commentMarker = "<!-- smsform-plan -->"

type comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
}

// findComment is the action's comment on pull request pr, nil when none.
func (g *github) findComment(ctx context.Context, pr int) (*comment, error) {
	for page := 1; page <= 50; page++ {
		var cs []comment
		if err := g.call(ctx, "GET", fmt.Sprintf("/repos/%s/issues/%d/comments?per_page=100&page=%d", g.repo, pr, page), nil, &cs); err != nil {
			return nil, err
		}
		for _, c := range cs {
			if strings.HasPrefix(c.Body, commentMarker) {
				return &c, nil
			}
		}
		if len(cs) < 100 {
			return nil, nil
		}
	}
	return nil, nil
}

// upsertComment keeps one comment on the pull request: the action's, edited
// in place; created only when there is something to say (create false: a
// comment that does not exist yet is not made).
func (g *github) upsertComment(ctx context.Context, pr int, body string, create bool) error {
	body = commentMarker + "\n" + body
	c, err := g.findComment(ctx, pr)
	switch {
	case err != nil:
		return err
	case c != nil:
		return g.call(ctx, "PATCH", fmt.Sprintf("/repos/%s/issues/comments/%d", g.repo, c.ID), map[string]string{"body": body}, nil)
	case create:
		return g.call(ctx, "POST", fmt.Sprintf("/repos/%s/issues/%d/comments", g.repo, pr), map[string]string{"body": body}, nil)
	}
	return nil
}

// pullRequest is what apply needs of a merged pull request.
type pullRequest struct {
	Number   int        `json:"number"`
	MergedAt *time.Time `json:"merged_at"`
	Head     struct {
		SHA string `json:"sha"`
	} `json:"head"`
}

// mergedPullRequest is the merged pull request that brought commit sha,
// nil when none did (a push straight to the branch).
func (g *github) mergedPullRequest(ctx context.Context, sha string) (*pullRequest, error) {
	var prs []pullRequest
	if err := g.call(ctx, "GET", fmt.Sprintf("/repos/%s/commits/%s/pulls", g.repo, sha), nil, &prs); err != nil {
		return nil, err
	}
	for _, pr := range prs {
		if pr.MergedAt != nil {
			return &pr, nil
		}
	}
	return nil, nil
}

// artifactName is the name under which the action uploads the plans.
const artifactName = "smsform-plans"

type artifact struct {
	ID          int64     `json:"id"`
	DownloadURL string    `json:"archive_download_url"`
	Expired     bool      `json:"expired"`
	CreatedAt   time.Time `json:"created_at"`
	WorkflowRun struct {
		ID      int64  `json:"id"`
		HeadSHA string `json:"head_sha"`
	} `json:"workflow_run"`
}

// plansArtifact is the newest unexpired plans artifact made for the commit
// headSHA (the reviewed head of the pull request), nil when none.
func (g *github) plansArtifact(ctx context.Context, headSHA string) (*artifact, error) {
	var list struct {
		Artifacts []artifact `json:"artifacts"`
	}
	if err := g.call(ctx, "GET", fmt.Sprintf("/repos/%s/actions/artifacts?name=%s&per_page=100", g.repo, artifactName), nil, &list); err != nil {
		return nil, err
	}
	var best *artifact
	for i, a := range list.Artifacts {
		if a.WorkflowRun.HeadSHA == headSHA && !a.Expired && (best == nil || a.CreatedAt.After(best.CreatedAt)) {
			best = &list.Artifacts[i]
		}
	}
	return best, nil
}

// maxArtifact bounds what is downloaded: plans of millions of recipients
// are tens of megabytes.
const maxArtifact = 2 << 30

// download fetches the artifact's zip and unpacks its plan files into dir.
func (g *github) download(ctx context.Context, a *artifact, dir string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", a.DownloadURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+g.token)
	resp, err := g.env.HTTP.Do(req) // a redirect to storage drops the token (another host)
	if err != nil {
		return nil, fmt.Errorf("download the plans: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download the plans: %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxArtifact))
	if err != nil {
		return nil, fmt.Errorf("download the plans: %w", err)
	}
	return unzipPlans(data, dir)
}

// unzipPlans writes the *.plan files of a zip, and the folder's manifest,
// into dir, and returns the plan files' names. Only plain names are taken:
// nothing in the zip chooses where a file lands.
func unzipPlans(data []byte, dir string) ([]string, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("the plans artifact: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var names []string
	for _, f := range zr.File {
		name := f.Name
		manifest := name == planfile.ManifestName
		if !manifest && (name != path.Base(name) || !strings.HasSuffix(name, ".plan") || strings.HasPrefix(name, ".")) {
			return nil, fmt.Errorf("the plans artifact holds %q: only NAME.plan files and %s are expected", name, planfile.ManifestName)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		out, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			_, err = io.Copy(out, io.LimitReader(rc, maxArtifact))
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("the plans artifact: %s: %w", name, err)
		}
		if !manifest {
			names = append(names, name)
		}
	}
	return names, nil
}

// deleteArtifact removes the plans once applied: they hold phone numbers.
func (g *github) deleteArtifact(ctx context.Context, a *artifact) error {
	return g.call(ctx, "DELETE", fmt.Sprintf("/repos/%s/actions/artifacts/%d", g.repo, a.ID), nil, nil)
}
