package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/smsform/smsform/internal/e164"
	"github.com/smsform/smsform/internal/rawjson"
)

// ErrTargetNotEmpty is returned by Copy when the target already records something.
var ErrTargetNotEmpty = errors.New("target state is not empty")

// Copied says what Copy copied, as read back from the target.
type Copied struct {
	Campaign string
	Lineage  string
	Serial   int64
	Attempts int
	Plans    int
	Reports  int // delivery reports matched to the campaign
	Tests    int // test sends
	Counts   map[Status]int
}

// CopyOptions tune Copy.
type CopyOptions struct {
	Campaign    string // which campaign, for a PostgreSQL source ("" when it holds one)
	Shared      bool   // the target is a project's state (Options.Shared)
	By          string // who migrates, for the source's moved mark
	LockTimeout time.Duration
	RunURL      string
	// ClaimSends claims the record's sends in the target's frequency cap
	// index even when its source holds a ledger (see claimCopied): the
	// target holds another project's ledger, which the source's claims
	// will never join.
	ClaimSends bool
}

// Copy copies a campaign's whole record, every attempt and applied plan,
// its lineage and serial, from the state at from to the state at to,
// between any two backends. Both are locked meanwhile, so no apply runs on
// either. The target must record nothing yet (it is created if missing);
// the copy is one transaction, and is read back and compared with the
// source before Copy returns: a saved plan made against the source applies
// to the target.
func Copy(ctx context.Context, from, to Location, opts CopyOptions) (*Copied, error) {
	ro, err := OpenReadOnly(ctx, from, opts.Campaign)
	if err != nil {
		return nil, err
	}
	name := ro.Campaign()
	ro.Close()
	if name == "" {
		return nil, fmt.Errorf("copy state: no state at %s", from)
	}
	src, err := Open(ctx, from, Options{Campaign: name, LockTimeout: opts.LockTimeout, RunURL: opts.RunURL, Shared: true})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	// The target is new by design: signs of an earlier one do not apply.
	// A record moved away from it is replaced: that is migrating back.
	dst, err := Open(ctx, to, Options{Campaign: name, LockTimeout: opts.LockTimeout, RunURL: opts.RunURL, NewState: true,
		Shared: opts.Shared, AllowMoved: true})
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	resumed := false
	if n, err := dst.rows(ctx); err != nil {
		return nil, err
	} else if dst.Moved() == nil && (n > 0 || dst.Serial() != 0) {
		// A copy of this very record, committed by a run stopped before
		// it marked the source moved (killed, the machine gone): refused,
		// the migration could never be finished, and the source, never
		// marked, would keep refusing every apply at the target.
		if resumed, err = copiedBefore(ctx, src, dst); err != nil {
			return nil, err
		} else if !resumed {
			return nil, fmt.Errorf("copy state to %s: it already records campaign %q (serial %d, %d attempts, lineage %s): %w",
				dst.loc, name, dst.Serial(), n, dst.Lineage(), ErrTargetNotEmpty)
		}
	}
	// A receiver of the source may write to the record while it is
	// copied (a delivery report, a recipient in doubt it settles), and a
	// pause may be set: the record is then copied again, a few times
	// without the lock, then by the mark under it, which holds up every
	// receiver of the state (of the database, in PostgreSQL) for as long
	// as the copy takes.
	// A copy made before is copied over (as a try that found the record
	// changed is): what was read of the source since (a pause) goes too.
	got, err := copyOnce(ctx, src, dst, to, name, resumed, opts.ClaimSends)
	for try := 0; try < unlockedCopies; try++ {
		if err == nil {
			var changed bool
			if changed, err = src.changedSince(ctx, src.db, got.readAt); err != nil || !changed {
				break
			}
		} else if !errors.Is(err, errChangedWhileCopied) {
			break
		}
		got, err = copyOnce(ctx, src, dst, to, name, true, opts.ClaimSends)
	}
	if err != nil && !errors.Is(err, errChangedWhileCopied) {
		return nil, err
	}
	// The source stays readable, but nothing writes or plans against it
	// any more: a forgotten variable must not make it a second ledger.
	got, err = src.markMoved(ctx, to.Unmasked(), opts.By, got, func() (*copiedAt, error) {
		return copyOnce(ctx, src, dst, to, name, true, opts.ClaimSends)
	})
	if err != nil {
		return nil, fmt.Errorf("copy state: the source %s could not be marked moved: %w", src.loc, err)
	}
	if err := dst.Close(); err != nil {
		return nil, err
	}
	return got.Copied, nil
}

// copiedBefore reports whether the target's live record of the campaign
// is a copy of the source's as it is now, left by a Copy stopped between
// its commit and the source's mark: the same lineage and serial, and the
// same attempts, applied plans, test sends and recipients' counts (what
// copyOnce checks a copy by). The lineage is the source's own and the
// serial moves with every write, so a record applied to at the target
// since, another record of the same name, or a source written to since is
// not taken for it. Delivery reports are not compared: the source's
// receive may have recorded one since (a report moves no serial), and the
// copy made again carries every report over and checks them.
func copiedBefore(ctx context.Context, src, dst *State) (bool, error) {
	want, err := src.summary(ctx)
	if err != nil {
		return false, err
	}
	have, err := dst.summary(ctx)
	if err != nil {
		return false, err
	}
	return have.Lineage == want.Lineage && have.Serial == want.Serial && have.Attempts == want.Attempts &&
		have.Plans == want.Plans && have.Tests == want.Tests && maps.Equal(have.Counts, want.Counts), nil
}

// unlockedCopies is how many times Copy copies again, without the lock,
// a record that changed while it was copied.
const unlockedCopies = 2

// errChangedWhileCopied says that the source's record changed between the
// copy's first read and its mark.
var errChangedWhileCopied = errors.New("the record changed while it was copied")

// copiedAt is a copy as read back, with what it was read at.
type copiedAt struct {
	*Copied
	readAt
}

// readAt is what a copy read of the source's record that may change
// while it is copied, the campaign's lock held: its serial (read first),
// which a receiver's settling of a recipient moves; how many delivery
// reports it has; its pause, which is set without the lock.
type readAt struct {
	serial  int64
	reports int
	pause   [3]string // at, by, reason
}

// copyOnce copies src's record into dst in one transaction (again: over
// the copy an earlier try left there) and reads it back from a view of its
// own. errChangedWhileCopied when what was read back differs from the
// source because the source changed meanwhile. The mark calls it holding
// the moves lock (PostgreSQL's advisory lock, one key for the database):
// nothing on its way may ask for that lock, which a target in another
// schema of the same database shares, or it would wait for itself unseen.
// It asks none: the target's record exists by then (birth, which does,
// has run) and the target is opened with AllowMoved.
func copyOnce(ctx context.Context, src, dst *State, to Location, name string, again, claim bool) (*copiedAt, error) {
	want, err := src.summary(ctx)
	if err != nil {
		return nil, err
	}
	at := readAt{serial: want.Serial}
	if err := dst.w.do(ctx, func(t *txn) error { return t.copyFrom(src, &at, again, claim) }); err != nil {
		return nil, fmt.Errorf("copy state to %s: %w", dst.loc, err)
	}
	check, err := OpenReadOnly(ctx, to, name)
	if err != nil {
		return nil, err
	}
	defer check.Close()
	got, err := check.summary(ctx)
	if err != nil {
		return nil, err
	}
	// The target may hold more reports than were counted here: those that
	// came to the source meanwhile, or, migrating back, to the record that
	// had moved away. copyReports checked that each one copied is there.
	if got.Lineage != want.Lineage || got.Serial != want.Serial || got.Attempts != want.Attempts ||
		got.Plans != want.Plans || got.Reports < want.Reports || got.Tests != want.Tests || !maps.Equal(got.Counts, want.Counts) {
		if changed, err := src.changedSince(ctx, src.db, at); err == nil && changed {
			return nil, errChangedWhileCopied
		}
		return nil, fmt.Errorf("copy state to %s: read back %+v, the source has %+v", check.loc, *got, *want)
	}
	return &copiedAt{Copied: got, readAt: at}, nil
}

// changedSince reports whether the campaign's record in s changed since a
// copy read it at at, as db reads it now.
func (s *State) changedSince(ctx context.Context, db querier, at readAt) (bool, error) {
	now := readAt{}
	var err error
	if now.serial, err = s.serialNow(ctx, db); err != nil {
		return false, err
	}
	var tests int
	if err := db.QueryRowContext(ctx, s.q[qCountCopied], s.args()...).Scan(&now.reports, &tests); err != nil {
		return false, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	if err := db.QueryRowContext(ctx, s.q[qPausedNow], s.args()...).Scan(&now.pause[0], &now.pause[1], &now.pause[2]); err != nil {
		return false, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return now != at, nil
}

// serialNow is the serial of the campaign's record as db reads it now:
// a receiver's writes move it while s is open.
func (s *State) serialNow(ctx context.Context, db querier) (int64, error) {
	var id, serial int64
	var lineage string
	if err := db.QueryRowContext(ctx, s.q[qCampaignByName], s.campaign).Scan(&id, &lineage, &serial); err != nil {
		return 0, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return serial, nil
}

// rows counts the campaign's attempts, applied plans, reports and test
// sends in the state.
func (s *State) rows(ctx context.Context) (int, error) {
	c, err := s.summary(ctx)
	if err != nil {
		return 0, err
	}
	return c.Attempts + c.Plans + c.Reports + c.Tests, nil
}

func (s *State) summary(ctx context.Context) (*Copied, error) {
	c := &Copied{Campaign: s.campaign, Lineage: s.lineage, Serial: s.Serial()}
	var err error
	if s.db != nil && !s.unscoped && s.recorded() {
		// Read first, and not as it was at open: a receiver's write since
		// shows as a serial the copy was not read at (changedSince).
		if c.Serial, err = s.serialNow(ctx, s.db); err != nil {
			return nil, err
		}
	}
	if c.Counts, err = s.Counts(ctx); err != nil {
		return nil, err
	}
	if err := s.Attempts(ctx, func(Attempt) error { c.Attempts++; return nil }); err != nil {
		return nil, err
	}
	if s.db == nil {
		return c, nil
	}
	rows, err := s.db.QueryContext(ctx, s.q[qCopyPlans], s.args()...)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	defer rows.Close()
	for rows.Next() {
		c.Plans++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	if s.unscoped || s.schema < 5 || !s.recorded() {
		return c, nil // no reports, no test sends
	}
	if err := s.db.QueryRowContext(ctx, s.q[qCountCopied], s.args()...).Scan(&c.Reports, &c.Tests); err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.loc, err)
	}
	return c, nil
}

// copyFrom writes every row of src into this transaction's state, in
// order, and takes src's lineage and its serial at.serial (read before the
// rows); again, over the copy of an earlier try. It fills in at what else
// it read.
func (t *txn) copyFrom(src *State, at *readAt, again, claim bool) error {
	dst := t.w.s
	t.wrote = true
	claims := claim
	if !claims {
		var err error
		if claims, err = t.claimsCopied(src); err != nil {
			return err
		}
	}
	if dst.Moved() != nil || again {
		// Migrating back, or copying again: the record that moved away (or
		// the earlier copy) goes, mark and all, but for its delivery
		// reports: a receiver still pointed at it may have recorded some
		// the other side never saw (copyReports merges the others'). When
		// the copy's sends are claimed again (see claimCopied), the old
		// record's claims go first, so that no send counts twice.
		if claims {
			if _, err := t.conn.ExecContext(t.ctx, dst.q[qDropCopiedClaims], -dst.id.Load(), dst.id.Load()); err != nil {
				return err
			}
		}
		for _, q := range []string{dst.q[qDropAttempts], dst.q[qDropPlans], dst.q[qDropTestSends], dst.q[qClearMoved]} {
			if _, err := t.conn.ExecContext(t.ctx, q, dst.args()...); err != nil {
				return err
			}
		}
	}
	put, err := t.conn.PrepareContext(t.ctx, dst.q[qPutAttempt])
	if err != nil {
		return err
	}
	defer put.Close()
	rows, err := src.db.QueryContext(t.ctx, src.q[qCopyAttempts], src.args()...)
	if err != nil {
		return fmt.Errorf("read state %s: %w", src.loc, err)
	}
	defer rows.Close()
	for rows.Next() {
		var batch, state, bodyHash, requestID, reason, started, finished, planID, phones, providerStatus, providerIDs string
		var recipients, httpStatus int
		if err := rows.Scan(&batch, &state, &bodyHash, &recipients, &httpStatus, &requestID, &reason, &started, &finished, &planID, &phones, &providerStatus, &providerIDs); err != nil {
			return fmt.Errorf("read state %s: %w", src.loc, err)
		}
		var id int64
		if err := put.QueryRowContext(t.ctx, dst.args(batch, state, bodyHash, recipients, httpStatus, requestID, reason, started, finished, planID, phones, providerStatus, providerIDs)...).Scan(&id); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read state %s: %w", src.loc, err)
	}
	plans, err := src.db.QueryContext(t.ctx, src.q[qCopyPlans], src.args()...)
	if err != nil {
		return fmt.Errorf("read state %s: %w", src.loc, err)
	}
	defer plans.Close()
	for plans.Next() {
		var id, at string
		var serial int64
		var done int
		if err := plans.Scan(&id, &at, &serial, &done); err != nil {
			return fmt.Errorf("read state %s: %w", src.loc, err)
		}
		if _, err := t.conn.ExecContext(t.ctx, dst.q[qPutPlan], dst.args(id, at, serial, done)...); err != nil {
			return err
		}
	}
	if err := plans.Err(); err != nil {
		return fmt.Errorf("read state %s: %w", src.loc, err)
	}
	if claims {
		if err := t.claimCopied(src); err != nil {
			return err
		}
	}
	if at.reports, err = t.copyReports(src); err != nil {
		return err
	}
	if err := t.copyTestSends(src); err != nil {
		return err
	}
	// The serial is set, not bumped: the copy is the same state. A pause
	// goes along (a paused campaign must not become sendable by moving),
	// read now: it is set without the campaign's lock.
	if _, err := t.conn.ExecContext(t.ctx, dst.q[qSetMeta], src.Lineage(), at.serial, dst.id.Load()); err != nil {
		return err
	}
	p := &at.pause
	if err := src.db.QueryRowContext(t.ctx, src.q[qPausedNow], src.args()...).Scan(&p[0], &p[1], &p[2]); err != nil {
		return fmt.Errorf("read state %s: %w", src.loc, err)
	}
	_, err = t.conn.ExecContext(t.ctx, dst.q[qSetCopied], dst.args(p[0], p[1], p[2], src.latency.Milliseconds())...)
	return err
}

// copyReports copies the campaign's delivery reports, the evidence that
// resolves a recipient in doubt and the DELIVERY of `state list`, each
// under its key. A key the target holds already is the same report when
// it is the campaign's there too (migrating back); under another campaign,
// or matched to none, the copy is refused whole, before anything is
// committed.
func (t *txn) copyReports(src *State) (int, error) {
	dst := t.w.s
	rows, err := src.db.QueryContext(t.ctx, src.q[qCopyReports], src.args()...)
	if err != nil {
		return 0, fmt.Errorf("read state %s: %w", src.loc, err)
	}
	defer rows.Close()
	n := 0
	campaign := strconv.FormatInt(dst.id.Load(), 10)
	var chunk [][]string
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		inserted, err := insertKeyed(t.ctx, t.conn, dst.q[qInsertReports], chunk)
		if err != nil {
			return err
		}
		// The keys the target held already: one question for the chunk
		// (a copy made again holds them all).
		var held []string
		phoneOf := map[string]string{}
		for _, r := range chunk {
			if !inserted[r[0]] {
				held = append(held, r[0])
				phoneOf[r[0]] = r[2]
			}
		}
		chunk = chunk[:0]
		if len(held) == 0 {
			return nil
		}
		var key string
		switch err := t.conn.QueryRowContext(t.ctx, dst.q[qReportElsewhere], string(rawjson.AppendStrings(nil, held)), dst.id.Load()).Scan(&key); {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("a delivery report of campaign %q (%s, key %s) is recorded there already for another campaign or for none: "+
			"nothing was copied; the two states have received the same report, and which campaign it is about needs a look (smsform reports show)",
			dst.campaign, e164.Mask(phoneOf[key]), key)
	}
	for rows.Next() {
		r := make([]string, 12)
		// The target's row: the campaign's id there, then the source's
		// columns as they are.
		if err := rows.Scan(&r[0], &r[2], &r[3], &r[4], &r[5], &r[6], &r[7], &r[8], &r[9], &r[10], &r[11]); err != nil {
			return 0, fmt.Errorf("read state %s: %w", src.loc, err)
		}
		r[1] = campaign
		n++
		if chunk = append(chunk, r); len(chunk) == copyChunk {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read state %s: %w", src.loc, err)
	}
	return n, flush()
}

// copyChunk is how many reports one statement of copyReports writes.
const copyChunk = 1000

// copyTestSends copies the campaign's test sends, which plan and apply
// mention (the last one) and which are no recipient's record.
func (t *txn) copyTestSends(src *State) error {
	dst := t.w.s
	rows, err := src.db.QueryContext(t.ctx, src.q[qCopyTestSends], src.args()...)
	if err != nil {
		return fmt.Errorf("read state %s: %w", src.loc, err)
	}
	defer rows.Close()
	for rows.Next() {
		var at, by, body, outcome, requestID, reason, phones string
		var httpStatus int
		if err := rows.Scan(&at, &by, &body, &outcome, &httpStatus, &requestID, &reason, &phones); err != nil {
			return fmt.Errorf("read state %s: %w", src.loc, err)
		}
		if _, err := t.conn.ExecContext(t.ctx, dst.q[qInsertTestSend], dst.args(at, by, body, outcome, httpStatus, requestID, reason, phones)...); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read state %s: %w", src.loc, err)
	}
	return nil
}

// claimsCopied says whether the copied record's sends are to be claimed in
// the target's frequency cap index (see claimCopied): its source holds
// nothing of a project's ledger.
func (t *txn) claimsCopied(src *State) (bool, error) {
	var holds int
	if err := src.db.QueryRowContext(t.ctx, src.q[qHoldsLedger]).Scan(&holds); err != nil {
		return false, fmt.Errorf("read state %s: %w", src.loc, err)
	}
	return holds == 0, nil
}

// claimCopied counts the copied record's sends in the target's frequency
// cap index, when its source never did: a state that holds nothing of a
// project's ledger (a campaign sent on its own, outside a project) claimed
// none of them. Without it, a campaign moved into a project's state would
// not count for the project's cap, and a person it messaged could be
// messaged again past the cap. A source that holds a ledger carries its
// claims with it (the ledger's copy, in a whole state's migration), so it is
// left alone, and so are the claims the target holds already, unless the
// target holds another project's ledger, which those claims never join
// (CopyOptions.ClaimSends: the campaign moved from one project to another). Each send
// counts as marketing (the record does not say the campaign's kind; a cap
// on marketing messages must not forget it), at the time the record gives
// it, under a marker of the campaign (minus its id), never an attempt of
// the target's: a copy made again replaces them (copyFrom drops them with
// the old record's own), and no release gives them back (a recipient in
// doubt resolved unsent stays counted until the window passes: the marker
// does not say which of the campaign's sends it is).
//
// If the target's ledger is in use, the numbers' rows of the cap index are
// locked first, in the numbers' order, as an intent's claim does, so that
// an apply claiming the same numbers meanwhile reads these sends. A target
// whose index is empty gets the sends alone: its ledger stays empty, and a
// project's ledger may still be copied into it.
func (t *txn) claimCopied(src *State) error {
	dst := t.w.s
	marker := -dst.id.Load()
	type send struct {
		phone string
		at    int64
	}
	var sends []send
	err := src.EachRecipient(t.ctx, func(r Recipient) error {
		if r.Status == Sent || r.Status == InDoubt {
			sends = append(sends, send{r.Phone, r.At.Unix()})
		}
		return nil
	})
	if err != nil || len(sends) == 0 {
		return err
	}
	var inUse int
	if err := t.conn.QueryRowContext(t.ctx, dst.q[qHoldsLedger]).Scan(&inUse); err != nil {
		return err
	}
	slices.SortFunc(sends, func(a, b send) int { return strings.Compare(a.phone, b.phone) })
	var list []byte
	for chunk := range slices.Chunk(sends, copyChunk) {
		list = append(list[:0], '[')
		for i, s := range chunk {
			if i > 0 {
				list = append(list, ',')
			}
			// A recorded number is E.164: a Go quoted string is its JSON.
			list = append(strconv.AppendQuote(append(list, '['), s.phone), ',')
			list = append(strconv.AppendInt(list, s.at, 10), ']')
		}
		list = append(list, ']')
		if inUse == 1 {
			if _, err := t.conn.ExecContext(t.ctx, dst.q[qLockCopiedClaims], string(list)); err != nil {
				return err
			}
		}
		if _, err := t.conn.ExecContext(t.ctx, dst.q[qCopiedClaims], string(list), marker); err != nil {
			return err
		}
	}
	return nil
}
