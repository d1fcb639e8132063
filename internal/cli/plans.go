package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/smsform/smsform/campaign"
	"github.com/smsform/smsform/internal/report"
	"github.com/smsform/smsform/internal/words"
	"github.com/smsform/smsform/plan/planfile"
	"github.com/smsform/smsform/state"
)

// This file is plan and validate over several campaigns: a project's, a
// folder's, several files, or those changed since a git revision.

// outIsDir reports whether --out names a folder for one plan file per
// campaign, written with a trailing / (with several campaigns it always
// is). A single campaign's --out naming an existing folder stays refused:
// a plan is not written into a folder nobody asked for.
func outIsDir(out string) bool {
	return strings.HasSuffix(out, "/") || strings.HasSuffix(out, string(filepath.Separator))
}

// selectCampaigns is the campaign files of the command line, less those
// unchanged since --changed-since.
func selectCampaigns(ctx context.Context, env Env, pos []string, since string) (files []string, many bool, err error) {
	files, many, err = campaignFiles(pos)
	if err != nil || since == "" {
		return files, many, err
	}
	files, err = changedSince(ctx, env, since, files)
	return files, true, err
}

// campaignError names the campaign file an error belongs to, unless the
// error already starts with it (a campaign.Error does).
type campaignError struct {
	file string
	err  error
}

func (e *campaignError) Error() string {
	if strings.HasPrefix(e.err.Error(), e.file) {
		return e.err.Error()
	}
	return e.file + ": " + e.err.Error()
}

func (e *campaignError) Unwrap() error { return e.err }

// joinedErrors is the errors err joins (errors.Join), each in turn split
// the same way, or err alone.
func joinedErrors(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, joinedErrors(e)...)
	}
	return out
}

// runPlans plans each campaign and shows them together: one section per
// campaign and the combined summary, one markdown comment, or one JSON
// document. With --out DIR each plan is saved as DIR/NAME.plan, and the
// plans saved are listed in DIR's manifest (what apply DIR applies). The exit
// is 1 if any campaign fails to plan; else, with --detailed-exitcode, 2 if
// any has something to send.
func runPlans(ctx context.Context, env Env, f planFlags, files []string) error {
	at, err := planAt(env, f)
	if err != nil {
		return err
	}
	if f.outFile != "" {
		if err := os.MkdirAll(f.outFile, 0o700); err != nil { // plan files hold phone numbers
			return fmt.Errorf("--out %s: %w", f.outFile, err)
		}
	}
	cps := make([]report.CampaignPlan, 0, len(files))
	var errs []error
	out := &savedPlans{names: map[string]string{}}
	for _, file := range files {
		r, err := computePlan(ctx, env, f, file, at)
		defer r.close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		cp := planOne(ctx, env, f, file, r, err, out)
		if cp.Err != nil {
			errs = append(errs, &campaignError{file: file, err: cp.Err})
		}
		cps = append(cps, cp)
	}
	if f.outFile != "" {
		if err := out.writeManifest(env, f.outFile); err != nil {
			return err
		}
	}
	if err := writeCampaigns(env, f.out, cps); err != nil {
		return err
	}
	sum := report.SumCampaigns(cps)
	if f.outFile != "" && !inAutomation(env) && (sum.Pending > 0 || sum.RefusedCampaigns > 0) {
		refused := ""
		if sum.RefusedCampaigns > 0 {
			refused = fmt.Sprintf("apply will refuse %s of them until what the plan says is settled; ", words.Count(sum.RefusedCampaigns))
		}
		fmt.Fprintf(env.Stderr, "smsform: plans saved in %s (they hold phone numbers: keep them private)\nhint: %sapply exactly these plans with: smsform apply %s\n",
			f.outFile, refused, f.outFile)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if f.detailed && sum.Pending > 0 {
		return ErrPending
	}
	return nil
}

// savedPlans is what plan --out DIR/ saved: the campaign file of each
// campaign name, and the folder's manifest.
type savedPlans struct {
	names   map[string]string
	entries []planfile.ManifestPlan
}

// writeManifest lists in dir the plans this run saved, which is what
// apply DIR applies, and warns of the other plan files there: apply DIR
// refuses the folder while they are in it.
func (s *savedPlans) writeManifest(env Env, dir string) error {
	if err := planfile.WriteManifest(dir, Version, s.entries); err != nil {
		return err
	}
	ours := map[string]bool{}
	for _, e := range s.entries {
		ours[e.File] = true
	}
	there, _ := filepath.Glob(filepath.Join(dir, "*.plan"))
	for _, p := range there {
		if !ours[filepath.Base(p)] {
			warnf(env, "%s is not one of the plans this run saved in %s: smsform apply %s refuses the folder while it is there (remove it, or save the plans in a new folder)", p, dir, dir)
		}
	}
	return nil
}

// planOne turns one campaign's plan and error into its part of the output,
// saving the plan when --out names a folder and it is one apply may take.
func planOne(ctx context.Context, env Env, f planFlags, file string, r planned, err error, saved *savedPlans) report.CampaignPlan {
	cp := report.CampaignPlan{File: file, Plan: r.plan, State: stateForReview(r.choice)}
	over := false
	if shown, ok := invalidNumbers(err); ok {
		err = shown
	} else if over, err = overBudget(err, file); err != nil && !over {
		cp.Plan = nil
	}
	cp.Err = err
	if f.outFile == "" || cp.Plan == nil || (err != nil && !over) {
		return cp
	}
	name := r.campaign.Name
	if other, dup := saved.names[name]; dup {
		cp.Err = withHint(fmt.Errorf("%s and %s both name campaign %s: one campaign, one file", other, file, name), "give each campaign a name of its own")
		return cp
	}
	saved.names[name] = file
	if err := projectCampaign(file); err != nil {
		// apply DIR refuses such a plan: better said before the review.
		cp.Err = withHint(err, "smsform apply %s sends only the project's campaigns: add it to campaigns: in %s, or save its plan alone with --out FILE", f.outFile, campaign.ProjectFile)
		return cp
	}
	out := filepath.Join(f.outFile, name+".plan")
	if err := planfile.CheckOverwrite(out); err != nil {
		cp.Err = withHint(err, "remove it, or give --out a new folder")
		return cp
	}
	entry, err := savePlan(ctx, env, out, r)
	if err != nil {
		cp.Err = err
		return cp
	}
	saved.entries = append(saved.entries, entry)
	cp.Saved = out
	return cp
}

// stateForReview names a campaign's state in a pull request: the project's
// state: as written (a folder a reviewer knows), "" for report to name it
// from the plan (a database without its credentials, never a runner's
// path).
func stateForReview(c stateChoice) string {
	if c.source == fromProject && c.project != nil && !state.IsPostgres(c.project.State) {
		return c.project.State
	}
	return ""
}

// writeCampaigns shows the campaigns' plans in the format asked for.
func writeCampaigns(env Env, o outputFlags, cps []report.CampaignPlan) error {
	return writeWith(&o, env, env.Stdout, report.WriteCampaignsTable, report.WriteCampaignsMarkdown, report.WriteCampaignsJSON, cps)
}

// validateAll validates each campaign, and with more than one says how
// many were valid.
func validateAll(ctx context.Context, env Env, files []string, many bool) error {
	var errs []error
	failed := 0
	for _, path := range files {
		err := validate(ctx, env, path)
		if err != nil && ctx.Err() != nil {
			return err
		}
		if err != nil {
			failed++
		}
		switch {
		case err == nil:
		case many:
			// Each of a campaign's errors says its file and keeps its own
			// hint (a joined error's are not reached through a wrapper).
			for _, e := range joinedErrors(err) {
				errs = append(errs, &campaignError{file: campaign.Plain(path), err: e})
			}
		default:
			errs = append(errs, err)
		}
	}
	if many {
		fmt.Fprintf(env.Stdout, "%s: %s valid, %s with errors\n", words.N(len(files), "campaign", "campaigns"),
			words.Count(len(files)-failed), words.Count(failed))
	}
	return errors.Join(errs...)
}
