package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/smsform/smsform/internal/ghaction"
	"github.com/smsform/smsform/plan/planfile"
)

// fakeGitHub is the part of GitHub's REST API the action uses: a pull
// request's comments, the pull request of a commit, the plans artifact.
type fakeGitHub struct {
	t        *testing.T
	mu       sync.Mutex
	comments map[int64]string
	posts    int
	artifact []byte // the zip upload-artifact would have made
	headSHA  string
	deleted  bool
	srv      *httptest.Server
}

func newFakeGitHub(t *testing.T, headSHA string) *fakeGitHub {
	f := &fakeGitHub{t: t, comments: map[int64]string{}, headSHA: headSHA}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/acme/campaigns/issues/7/comments", func(w http.ResponseWriter, r *http.Request) {
		var cs []map[string]any
		for id, body := range f.comments {
			cs = append(cs, map[string]any{"id": id, "body": body})
		}
		json.NewEncoder(w).Encode(cs)
	})
	mux.HandleFunc("POST /repos/acme/campaigns/issues/7/comments", func(w http.ResponseWriter, r *http.Request) {
		f.posts++
		f.comments[int64(100+f.posts)] = readBody(r)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "{}")
	})
	mux.HandleFunc("PATCH /repos/acme/campaigns/issues/comments/{id}", func(w http.ResponseWriter, r *http.Request) {
		var id int64
		fmt.Sscan(r.PathValue("id"), &id)
		if _, ok := f.comments[id]; !ok {
			http.NotFound(w, r)
			return
		}
		f.comments[id] = readBody(r)
		io.WriteString(w, "{}")
	})
	mux.HandleFunc("GET /repos/acme/campaigns/commits/{sha}/pulls", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `[{"number": 7, "merged_at": "2026-11-25T10:00:00Z", "head": {"sha": %q}}]`, f.headSHA)
	})
	mux.HandleFunc("GET /repos/acme/campaigns/actions/artifacts", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("name") != "smsform-plans" || f.artifact == nil || f.deleted {
			io.WriteString(w, `{"artifacts": []}`)
			return
		}
		fmt.Fprintf(w, `{"artifacts": [{"id": 9, "expired": false, "created_at": "2026-11-25T09:00:00Z", "archive_download_url": %q,
			"workflow_run": {"id": 42, "head_sha": %q}}, {"id": 8, "expired": false, "created_at": "2026-11-25T09:00:00Z",
			"archive_download_url": "http://nowhere.invalid/", "workflow_run": {"id": 41, "head_sha": "another"}}]}`, f.srv.URL+"/download/9", f.headSHA)
	})
	mux.HandleFunc("GET /download/9", func(w http.ResponseWriter, r *http.Request) { w.Write(f.artifact) })
	mux.HandleFunc("DELETE /repos/acme/campaigns/actions/artifacts/9", func(w http.ResponseWriter, r *http.Request) {
		f.deleted = true
		w.WriteHeader(http.StatusNoContent)
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer gh-token" {
			t.Errorf("%s %s without the token", r.Method, r.URL.Path)
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func readBody(r *http.Request) string {
	var b struct{ Body string }
	json.NewDecoder(r.Body).Decode(&b)
	return b.Body
}

// zipDir makes the artifact of the plans, as upload-artifact does.
func zipDir(t *testing.T, dir string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		w, _ := zw.Create(e.Name())
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		w.Write(b)
	}
	zw.Close()
	return buf.Bytes()
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// The action's logic, run as the workflows run it but against a fake
// GitHub, the sandbox and a real PostgreSQL: a pull request's plan comments
// once and edits that comment as the pull request changes, plans only the
// campaigns it changes, and after the merge exactly the reviewed plans are
// sent, once.
func TestActionPlanCommentApply(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	ctx := context.Background()
	db := pg.Database(t)
	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, "smsform.yaml"), "version: 1\nstate: "+db+"\n")
	os.MkdirAll(filepath.Join(repo, "campaigns", "lists"), 0o755)
	writeFile(t, filepath.Join(repo, "campaigns", "news.yaml"), "version: 1\nname: news\nsender: ACME\nrecipients:\n  - file: lists/news.csv\nbody: News.\n")
	writeFile(t, filepath.Join(repo, "campaigns", "promo.yaml"), "version: 1\nname: promo\nsender: ACME\nrecipients:\n  - numbers: [\"+447400123459\"]\nbody: Promo.\n")
	writeFile(t, filepath.Join(repo, "campaigns", "lists", "news.csv"), "phone\n+447400123564\n")
	git(t, repo, "init", "-q")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	base := git(t, repo, "rev-parse", "HEAD")

	// The pull request adds two people to the news list.
	writeFile(t, filepath.Join(repo, "campaigns", "lists", "news.csv"), "phone\n+447400123564\n+12015550133\n+33612345702\n")
	git(t, repo, "commit", "-q", "-am", "more news")
	head := git(t, repo, "rev-parse", "HEAD")
	gh := newFakeGitHub(t, head)
	tmp := t.TempDir()
	event := filepath.Join(tmp, "event.json")
	writeFile(t, event, fmt.Sprintf(`{"pull_request": {"number": 7, "base": {"sha": %q}, "head": {"sha": %q}}}`, base, head))
	vars := map[string]string{
		"GITHUB_API_URL": gh.srv.URL, "GITHUB_REPOSITORY": "acme/campaigns", "GITHUB_TOKEN": "gh-token", "GITHUB_EVENT_PATH": event,
		"GITHUB_OUTPUT": filepath.Join(tmp, "output"), "GITHUB_STEP_SUMMARY": filepath.Join(tmp, "summary"), "RUNNER_TEMP": tmp,
		"GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "42", "GITHUB_SHA": head,
	}
	var log bytes.Buffer
	run := func(cmd string, environ ...string) error {
		return ghaction.Run(ctx, []string{cmd}, ghaction.Env{Getenv: func(k string) string { return vars[k] }, Environ: append(os.Environ(), environ...),
			Stdout: &log, Stderr: &log, Dir: repo})
	}
	if err := run("plan"); err != nil {
		t.Fatalf("plan: %v\n%s", err, log.String())
	}
	if gh.posts != 1 || len(gh.comments) != 1 {
		t.Fatalf("%d comments posted, %d kept; want 1", gh.posts, len(gh.comments))
	}
	for _, body := range gh.comments {
		for _, want := range []string{"<!-- smsform-plan -->\n### smsform plan: 1 campaign", "campaigns/news.yaml", "Plan: 3 messages", "[run 42](https://github.com/acme/campaigns/actions/runs/42)"} {
			if !strings.Contains(body, want) {
				t.Errorf("the comment lacks %q:\n%s", want, body)
			}
		}
		if strings.Contains(body, "promo.yaml") || strings.Contains(body, "+447400123564") {
			t.Errorf("the comment names an unchanged campaign or a whole number:\n%s", body)
		}
	}
	out, _ := os.ReadFile(vars["GITHUB_OUTPUT"])
	plans := filepath.Join(tmp, "smsform-plans")
	if !strings.Contains(string(out), "exit-code=2\n") || !strings.Contains(string(out), "plans="+plans+"\n") {
		t.Errorf("outputs:\n%s", out)
	}

	// A second push to the pull request: the same comment, edited.
	writeFile(t, filepath.Join(repo, "campaigns", "promo.yaml"), "version: 1\nname: promo\nsender: ACME\nrecipients:\n  - numbers: [\"+447400123459\"]\nbody: Promo, now 30% off.\n")
	git(t, repo, "commit", "-q", "-am", "better promo")
	gh.headSHA = git(t, repo, "rev-parse", "HEAD")
	vars["GITHUB_SHA"] = gh.headSHA
	if err := run("plan"); err != nil {
		t.Fatalf("plan again: %v\n%s", err, log.String())
	}
	if gh.posts != 1 || len(gh.comments) != 1 {
		t.Fatalf("after a second plan: %d comments posted, %d kept; want the first one edited", gh.posts, len(gh.comments))
	}
	// The comment names the plans the merge applies as the folder's
	// manifest does, digests included.
	m, err := planfile.ReadManifest(plans)
	if err != nil || len(m.Plans) != 2 {
		t.Fatalf("the plans' manifest: %+v, %v", m, err)
	}
	for _, body := range gh.comments {
		if !strings.Contains(body, "### smsform plan: 2 campaigns") {
			t.Errorf("the comment was not brought up to date:\n%s", body)
		}
		for _, p := range m.Plans {
			if row := "| `" + p.File + "` | `" + p.Campaign + "` | `" + p.SHA256 + "` |"; !strings.Contains(body, row) {
				t.Errorf("the comment lacks the plan %s as the manifest lists it (%s):\n%s", p.File, row, body)
			}
		}
	}
	gh.artifact = zipDir(t, plans)

	// After the merge: the reviewed plans, applied once.
	outbox := filepath.Join(tmp, "outbox.jsonl")
	url := startSandbox(t, "--outbox", outbox)
	creds := []string{"SMSFORM_BASE_URL=" + url, "SMSFORM_CLIENT_ID=tty-client", "SMSFORM_CLIENT_SECRET=tty-secret", "SMSFORM_TOKEN_DIR=" + filepath.Join(tmp, "tokens")}
	if err := run("apply", creds...); err != nil {
		t.Fatalf("apply: %v\n%s", err, log.String())
	}
	if !gh.deleted {
		t.Error("the applied plans' artifact was not deleted")
	}
	if !strings.Contains(log.String(), "applying the 2 plans reviewed in pull request #7 (run 42)") {
		t.Errorf("the log does not say what was applied:\n%s", log.String())
	}
	sent := func() int {
		b, _ := os.ReadFile(outbox)
		return strings.Count(string(b), "\n")
	}
	if n := sent(); n != 4 {
		t.Errorf("the sandbox got %d messages, want 4 (3 news, 1 promo)", n)
	}

	// The artifact again (a rerun of the job before it was deleted): the
	// plans are used up, apply passes over each, nothing more is sent.
	gh.deleted = false
	log.Reset()
	if err := run("apply", creds...); err != nil || !strings.Contains(log.String(), "was applied whole before: nothing was sent") {
		t.Errorf("applying used-up plans = %v, want each passed over\n%s", err, log.String())
	}
	if n := sent(); n != 4 {
		t.Errorf("after the rerun the sandbox got %d messages, want still 4", n)
	}

	// A scheduled run of a paused campaign: apply refuses (exit 6), which
	// is no failure of the job.
	pause := exec.Command("smsform", "pause", "campaigns/promo.yaml", "--reason", "hold")
	pause.Dir = repo
	if out, err := pause.CombinedOutput(); err != nil {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	vars["INPUT_CAMPAIGNS"] = "campaigns/promo.yaml"
	log.Reset()
	if err := run("apply", creds...); err != nil || !strings.Contains(log.String(), "the campaign is paused (smsform pause") {
		t.Errorf("applying a paused campaign = %v, want no failure and a notice\n%s", err, log.String())
	}
	delete(vars, "INPUT_CAMPAIGNS")

	// Plan given a bare password refuses before running smsform: the
	// project file names the applying role, not the read-only one plan
	// reads as. Neither the error nor the log shows the value.
	vars["INPUT_STATE"] = "readpw-Secret456"
	log.Reset()
	if err := run("plan"); err == nil || !strings.Contains(err.Error(), "read-only role's whole URL") ||
		strings.Contains(err.Error()+log.String(), "Secret456") {
		t.Errorf("plan with a bare password = %v, want a refusal that does not show it\n%s", err, log.String())
	}
	delete(vars, "INPUT_STATE")

	// Without a database the action refuses: a runner's state file is gone
	// when the job ends.
	writeFile(t, filepath.Join(repo, "smsform.yaml"), "version: 1\nstate: .smsform/\n")
	if err := run("plan"); err == nil || !strings.Contains(err.Error(), "not in PostgreSQL") {
		t.Errorf("plan with a file state = %v, want a refusal", err)
	}
}
