package state

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/internal/words"
)

// Receiver records delivery reports and replies in a project's state. It
// is safe for concurrent use: calls to Record that overlap are written in
// one transaction by one goroutine, and each returns once what it was
// given is durable, so that a receiver answering many requests at once pays
// one commit for all of them, as apply's writer does.
//
// It takes no campaign's lock: applies run meanwhile. What it writes of a
// campaign's record is appended (a resolution is an attempt of its own),
// so an apply's view of its recipients stays true: a recipient it holds in
// doubt it never sends, and the report makes it sent.
type Receiver struct {
	loc     string // as shown
	db      *sql.DB
	q       *dialect
	pg      bool
	opts    ReceiverOptions
	stop    map[string]bool
	start   map[string]bool
	work    chan struct{}
	closed  chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	queue   []*recording
	names   map[int64]string // campaigns by id
	numbers *numberIndex     // built on first need
	// inFlight are the recipients whose report came while apply still
	// waited for the send's answer (the attempt an intent): nothing is
	// proved until apply records the answer, and only an answer recorded
	// in doubt is then resolved by the report. Only run's goroutine
	// touches it (and reclaim, before run starts). The reports themselves
	// are durable: a new receiver finds them again (reclaim).
	inFlight map[flightKey]flight
	// Where to look whether a campaign's lock is held (see applying): the
	// state file's real path, or the PostgreSQL schema.
	real, schema string
	// running caches applying's answers for the group being written.
	running map[int64]bool
}

type flightKey struct {
	attempt int64
	phone   string
}

// flight is a delivery report that waits for its attempt's outcome.
type flight struct {
	matched matched
	report  Report
}

// settleEvery is how often receive looks at the attempts of inFlight
// reports.
const settleEvery = time.Second

// recording is one call of Record waiting for its group's commit.
type recording struct {
	reports []Report
	replies []Reply
	out     Recorded
	err     error
	done    chan struct{}
}

// OpenReceiver opens the project's state at loc to record reports and
// replies; the state is created if missing, as apply would.
func OpenReceiver(ctx context.Context, l Location, o ReceiverOptions) (*Receiver, error) {
	loc := l.Unmasked()
	db, q, err := openControl(ctx, loc, "", true, true)
	if err != nil {
		return nil, err
	}
	if q == sqliteDialect {
		// Applies write the file at the same time: WAL lets them and the
		// receiver take turns at the write lock without blocking readers.
		if err := walMode(ctx, db); err != nil {
			db.Close()
			return nil, fmt.Errorf("open state %s: %w", Redact(loc), err)
		}
	}
	if o.MatchWindow <= 0 {
		o.MatchWindow = 7 * 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Receiver{loc: Redact(loc), db: db, q: q, pg: q == postgresDialect, opts: o,
		stop: wordSet(o.StopWords, DefaultStopWords), start: wordSet(o.StartWords, DefaultStartWords),
		work: make(chan struct{}, 1), closed: make(chan struct{}), done: make(chan struct{})}
	if r.pg {
		if t, err := parsePostgres(loc); err == nil {
			r.schema = t.schema
		}
	} else if real, err := ResolveFile(loc); err == nil {
		r.real = real
	}
	err = readVacated(ctx, db, q, r.loc)
	if err == nil {
		err = r.reclaim(ctx)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open state %s: %w", r.loc, err)
	}
	go r.run()
	return r, nil
}

// reclaim finds again the reports that wait for their attempts: those
// of recipients whose attempt is still open or in doubt. A receiver that
// held them in inFlight may have been killed, and a report, once
// acknowledged, is never posted again: without this, its recipient would
// stay in doubt for good. Those in doubt by now are resolved before
// OpenReceiver returns; the others wait as any report in flight.
func (r *Receiver) reclaim(ctx context.Context) error {
	type recipient struct {
		campaign int64
		phone    string
	}
	var open []recipient
	rows, err := r.db.QueryContext(ctx, r.q[qOpenAttempts])
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, campaign int64
		var phones string
		if err := rows.Scan(&id, &campaign, &phones); err != nil {
			rows.Close()
			return err
		}
		if err := eachPhone(phones, func(p string) { open = append(open, recipient{campaign, p}) }); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	g := &grouped{}
	for _, rc := range open {
		proofs, err := r.proofsOf(ctx, rc.campaign, rc.phone)
		if err != nil {
			return err
		}
		for _, rp := range proofs {
			if rp.Delivery != Pending {
				g.reports = append(g.reports, reportAt{Report: rp, out: &ReportResult{}})
			}
		}
	}
	if len(g.reports) == 0 {
		return nil
	}
	if err := r.match(ctx, g, r.opts.Now()); err != nil {
		return err
	}
	r.inFlight = map[flightKey]flight{}
	for _, rp := range g.reports {
		if m := rp.matched; m.state == AttemptIntent || m.state == AttemptInDoubt {
			r.inFlight[flightKey{m.attempt, m.phone}] = flight{m, rp.Report}
		}
	}
	return r.write(nil)
}

// proofsOf reads the reports recorded for one recipient of a campaign.
func (r *Receiver) proofsOf(ctx context.Context, campaign int64, phone string) ([]Report, error) {
	return readProofs(r.db.QueryContext(ctx, r.q[qProofsOf], campaign, phone))
}

// readProofs reads the rows of qProofsOf for one recipient.
func readProofs(rows *sql.Rows, err error) ([]Report, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Report
	for rows.Next() {
		var rp Report
		var delivery, at string
		if err := rows.Scan(&rp.Phone, &rp.ProviderID, &delivery, &rp.ProviderStatus, &rp.Reason, &at); err != nil {
			return nil, err
		}
		rp.Delivery, _ = ParseDelivery(delivery)
		rp.At = parseTime(at)
		out = append(out, rp)
	}
	return out, rows.Err()
}

// wordSet is list, or else defaults, in the form replies are compared in
// (see words.ReplyWord).
func wordSet(list, defaults []string) map[string]bool {
	if list == nil {
		list = defaults
	}
	set := map[string]bool{}
	for _, w := range list {
		set[words.ReplyWord(w)] = true
	}
	return set
}

// Record makes reports and replies durable and returns what became of
// each. A report or reply recorded before (the same one sent again) is a
// Duplicate and changes nothing; a reply whose text is a stop word opts
// its number out of every campaign of the state, a start word opts it back
// in (both recorded with the source "reply"). When Record returns nil,
// everything given is durable; when it returns an error, the caller must
// not take it for recorded (it may have been: a later call with the same
// reports finds them Duplicate).
func (r *Receiver) Record(ctx context.Context, reports []Report, replies []Reply) (Recorded, error) {
	rec := &recording{reports: reports, replies: replies, done: make(chan struct{})}
	r.mu.Lock()
	select {
	case <-r.closed:
		r.mu.Unlock()
		return Recorded{}, ErrClosed
	default:
	}
	r.queue = append(r.queue, rec)
	r.mu.Unlock()
	select {
	case r.work <- struct{}{}:
	default:
	}
	select {
	case <-rec.done:
		return rec.out, rec.err
	case <-ctx.Done():
		return Recorded{}, ctx.Err()
	}
}

// run writes what Record queues, a group at a time, until Close.
func (r *Receiver) run() {
	defer close(r.done)
	tick := time.NewTicker(settleEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.work:
		case <-tick.C:
			// A failure is met again by the next group or tick. The index
			// of message ids is kept filled as applies run alongside, so
			// that a group seldom waits for it.
			_ = indexMessages(context.Background(), r.db, r.q, r.pg)
			if len(r.inFlight) > 0 {
				_ = r.write(nil)
			}
			continue
		case <-r.closed:
			r.mu.Lock()
			group := r.queue
			r.queue = nil
			r.mu.Unlock()
			for _, rec := range group {
				rec.err = ErrClosed
				close(rec.done)
			}
			return
		}
		for {
			r.mu.Lock()
			group := r.queue
			r.queue = nil
			r.mu.Unlock()
			if len(group) == 0 {
				break
			}
			err := r.write(group)
			for _, rec := range group {
				if err != nil {
					rec.out, rec.err = Recorded{}, fmt.Errorf("record in state %s: %w", r.loc, err)
				}
				close(rec.done)
			}
		}
	}
}

// Close waits for the group being written, refuses what is queued and
// releases the state.
func (r *Receiver) Close() error {
	r.mu.Lock()
	select {
	case <-r.closed:
		r.mu.Unlock()
		return nil
	default:
		close(r.closed)
	}
	r.mu.Unlock()
	<-r.done
	return r.db.Close()
}

// write records a group of calls in one transaction.
func (r *Receiver) write(group []*recording) error {
	ctx := context.Background()
	now := r.opts.Now()
	r.running = map[int64]bool{}
	// Sized first: an import's group of 50,000 reports grew the slice by
	// copies, a twelfth of the import's CPU.
	var nReports, nReplies int
	for _, rec := range group {
		nReports += len(rec.reports)
		nReplies += len(rec.replies)
	}
	g := &grouped{reports: make([]reportAt, 0, nReports), replies: make([]replyAt, 0, nReplies)}
	for n, rec := range group {
		rec.out = Recorded{Reports: make([]ReportResult, len(rec.reports)), Replies: make([]ReplyResult, len(rec.replies))}
		for i := range rec.reports {
			// The key is taken from the report as given, before a missing
			// time is filled in: the same report posted again must have the
			// same key, whenever it arrives.
			g.reports = append(g.reports, reportAt{Report: rec.reports[i], key: reportKey(rec.reports[i]), out: &rec.out.Reports[i], owner: n})
		}
		for i := range rec.replies {
			rp, out := rec.replies[i], &rec.out.Replies[i]
			var word string
			out.Kind, word = r.kindOf(rp.Text)
			g.replies = append(g.replies, replyAt{Reply: rp, key: replyKey(rp, out.Kind == "stop", now), word: word, out: out, owner: n})
		}
	}
	if err := r.match(ctx, g, now); err != nil {
		return err
	}
	landed, gone, err := r.landed(ctx)
	if err != nil {
		return err
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if !r.pg {
		// A large group dirties most pages of the reports' key index, and
		// SQLite's checkpoint every 1,000 pages of WAL copied them back to
		// the file at nearly every commit of an import, to be dirtied
		// again by the next: letting the WAL grow to 20,000 pages (80 MB)
		// copies each once per several groups (import of 196,047 reports:
		// 9.6 -> 8.6 s). Durability is the WAL's, as before. The setting
		// is the connection's: set on whichever the pool gives the group.
		if _, err := tx.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 20000"); err != nil {
			return err
		}
	}
	// In PostgreSQL the shared advisory lock, held to the commit, keeps
	// state migrate from marking a campaign moved meanwhile: a report
	// written here before the mark is in the copy (the mark checks the
	// record under the lock, and copies it again if it changed), a reply
	// in the ledger the migration copies after the last mark.
	if err := lockMoves(ctx, tx, r.pg); err != nil {
		return err
	}
	marks, total, err := movedMarks(ctx, tx, r.q)
	if err != nil {
		return err
	}
	if len(group) > 0 {
		g = r.refuseMoved(g, group, marks, total)
	}
	// A recipient of a campaign that moved away is settled where it went:
	// its report went with the record, and the receiver there finds it
	// again when it starts (reclaim).
	landed, gone = leaveMoved(landed, gone, marks)
	resolved := map[flightKey]bool{}
	for _, f := range landed {
		if _, err := r.resolveOnce(ctx, tx, f.matched, f.report, now, resolved); err != nil {
			return err
		}
	}
	waiting, err := r.writeReports(ctx, tx, g, now, resolved)
	if err != nil {
		return err
	}
	if err := r.writeReplies(ctx, tx, g, now); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for _, f := range landed {
		delete(r.inFlight, flightKey{f.matched.attempt, f.matched.phone})
	}
	for _, k := range gone {
		delete(r.inFlight, k)
	}
	for _, f := range waiting {
		if r.inFlight == nil {
			r.inFlight = map[flightKey]flight{}
		}
		r.inFlight[flightKey{f.matched.attempt, f.matched.phone}] = f
	}
	return nil
}

// movesLock is the PostgreSQL advisory lock that orders the marks state
// migrate leaves on the records it moved (held alone) and the receivers'
// transactions (held shared).
const movesLock = 0x736d73666f726d // "smsform"

// MovedAwayError refuses to record in a state what belongs to one its
// records moved to (state migrate): a campaign's reports, or, once every
// campaign of the state moved (the whole state migrated, its ledger
// with it), anything. Recorded there it would stay behind, a STOP with
// it, unseen by the state in use. It wraps ErrMoved.
type MovedAwayError struct {
	Loc      string   // the state that refuses, a password masked
	To       []string // where its campaigns went, passwords masked
	Campaign string   // the moved campaign a report was matched to; "": every campaign moved
}

func (e *MovedAwayError) Error() string {
	if e.Campaign != "" {
		return fmt.Sprintf("campaign %q of the state at %s was moved to %s: its reports are recorded there; name that state in the project file and record them there",
			e.Campaign, e.Loc, strings.Join(e.To, ", "))
	}
	return fmt.Sprintf("every campaign of the state at %s was moved to %s, with the project's opt-outs: nothing more is recorded here; name that state in the project file and run this there",
		e.Loc, strings.Join(e.To, ", "))
}
func (e *MovedAwayError) Unwrap() error { return ErrMoved }

// movedMarks reads where the state's campaigns moved (by id, those that
// did) and how many it has.
func movedMarks(ctx context.Context, db querier, q *dialect) (map[int64]string, int, error) {
	rows, err := db.QueryContext(ctx, q[qMovedMarks])
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	marks, total := map[int64]string{}, 0
	for rows.Next() {
		var id int64
		var to string
		if err := rows.Scan(&id, &to); err != nil {
			return nil, 0, err
		}
		total++
		if to != "" {
			marks[id] = to
		}
	}
	return marks, total, rows.Err()
}

// lockMoves takes movesLock shared, to the end of db's transaction, in
// PostgreSQL.
func lockMoves(ctx context.Context, db execQuerier, pg bool) error {
	if !pg {
		return nil // a file's writing transaction holds its write lock already
	}
	_, err := db.ExecContext(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, movesLock)
	return err
}

// execQuerier is what reads and writes in a transaction: a *sql.Tx, or the
// *sql.Conn of a transaction begun by a statement (the writer's).
type execQuerier interface {
	querier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// RefuseVacated refuses, inside a writing transaction of the state shown
// (its engine PostgreSQL or not), a state whose every campaign moved away:
// the whole state was migrated, the project's opt-outs with it, and a
// change recorded here would stay behind (a *MovedAwayError). No
// migration marks its last campaign moved before tx ends.
func RefuseVacated(ctx context.Context, tx *sql.Tx, postgres bool, shown string) error {
	q := sqliteDialect
	if postgres {
		q = postgresDialect
	}
	return refuseVacated(ctx, tx, q, shown)
}

func refuseVacated(ctx context.Context, db execQuerier, q *dialect, shown string) error {
	if err := lockMoves(ctx, db, q == postgresDialect); err != nil {
		return err
	}
	return readVacated(ctx, db, q, shown)
}

// readVacated reads the moved marks of the state at loc (shown) through
// db: the *MovedAwayError of a state whose every campaign moved away,
// else nil, or the error of the read.
func readVacated(ctx context.Context, db querier, q *dialect, loc string) error {
	marks, total, err := movedMarks(ctx, db, q)
	if err != nil {
		return err
	}
	return vacated(loc, marks, total)
}

// vacated is the *MovedAwayError of the state at loc when marks say every
// one of its total campaigns moved.
func vacated(loc string, marks map[int64]string, total int) error {
	if total == 0 || len(marks) < total {
		return nil
	}
	var to []string
	for _, t := range marks {
		if !slices.Contains(to, t) {
			to = append(to, t)
		}
	}
	slices.Sort(to)
	return &MovedAwayError{Loc: loc, To: to}
}

// refuseMoved takes out of the group, before anything of it is written,
// the recordings that belong to a state a campaign moved to (marks, of the
// total campaigns: read under the lock write holds): each is refused with
// a *MovedAwayError (the server answers 503, and the provider posts it
// again, to the receiver of the state in use once it serves). It returns
// what is left to write.
func (r *Receiver) refuseMoved(g *grouped, group []*recording, marks map[int64]string, total int) *grouped {
	if len(marks) == 0 {
		return g
	}
	if err := vacated(r.loc, marks, total); err != nil {
		for _, rec := range group {
			rec.err = err
		}
		return &grouped{}
	}
	refused := map[int]bool{}
	for _, rp := range g.reports {
		if to, ok := marks[rp.matched.campaign]; ok && group[rp.owner].err == nil {
			group[rp.owner].err = &MovedAwayError{Loc: r.loc, To: []string{to}, Campaign: r.names[rp.matched.campaign]}
			refused[rp.owner] = true
		}
	}
	if len(refused) == 0 {
		return g
	}
	kept := &grouped{}
	for _, rp := range g.reports {
		if !refused[rp.owner] {
			kept.reports = append(kept.reports, rp)
		}
	}
	for _, rp := range g.replies {
		if !refused[rp.owner] {
			kept.replies = append(kept.replies, rp)
		}
	}
	return kept
}

// leaveMoved takes out of landed the reports of campaigns that moved
// away (marks), adding their keys to gone: the receiver lets them go.
func leaveMoved(landed []flight, gone []flightKey, marks map[int64]string) ([]flight, []flightKey) {
	if len(marks) == 0 {
		return landed, gone
	}
	kept := landed[:0:0]
	for _, f := range landed {
		if _, moved := marks[f.matched.campaign]; moved {
			gone = append(gone, flightKey{f.matched.attempt, f.matched.phone})
			continue
		}
		kept = append(kept, f)
	}
	return kept, gone
}

// landed are the inFlight reports whose attempts apply has since
// recorded in doubt; those recorded otherwise (sent, failed) are dropped,
// their report kept as any other. The report of an attempt split by a
// per-recipient answer is matched again, to the part that holds its
// recipient, and lands if that part is in doubt.
//
// gone are the keys of the split attempts' reports, to let go once the
// group that settles them commits: a failure leaves them waiting.
func (r *Receiver) landed(ctx context.Context) (out []flight, gone []flightKey, err error) {
	if len(r.inFlight) == 0 {
		return nil, nil, nil
	}
	var ids []string
	for k := range r.inFlight {
		ids = append(ids, strconv.FormatInt(k.attempt, 10))
	}
	states, err := r.attemptStates(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	again := &grouped{}
	for k, f := range r.inFlight {
		st := states[k.attempt].state
		if st == AttemptIntent {
			if st, err = r.settled(ctx, f.matched); err != nil {
				return nil, nil, err
			}
		}
		switch st {
		case AttemptIntent:
		case AttemptInDoubt:
			f.matched.state = AttemptInDoubt
			out = append(out, f)
		case AttemptSplit:
			again.reports = append(again.reports, reportAt{Report: f.report, out: &ReportResult{}})
			gone = append(gone, k)
		default:
			delete(r.inFlight, k)
		}
	}
	if len(again.reports) == 0 {
		return out, gone, nil
	}
	if err := r.match(ctx, again, r.opts.Now()); err != nil {
		return nil, nil, err
	}
	for _, rp := range again.reports {
		if rp.matched.state == AttemptInDoubt {
			out = append(out, flight{rp.matched, rp.Report})
		}
	}
	return out, gone, nil
}

// settled is the state of m's attempt, which was an intent when m was
// matched, for a report to act on: still an intent while an apply of its
// campaign may be running (see applying); once none is, the state as read
// after that (an apply records its answers before it lets the lock go),
// an intent still open being in doubt: its apply ended without the answer.
func (r *Receiver) settled(ctx context.Context, m matched) (AttemptState, error) {
	busy, err := r.applying(ctx, m.campaign)
	if err != nil || busy {
		return AttemptIntent, err
	}
	states, err := r.attemptStates(ctx, []string{strconv.FormatInt(m.attempt, 10)})
	if err != nil {
		return AttemptIntent, err
	}
	switch a, ok := states[m.attempt]; {
	case !ok:
		return AttemptForgotten, nil // gone since (a migration took it)
	case a.state == AttemptIntent:
		return AttemptInDoubt, nil
	default:
		return a.state, nil
	}
}

// applying reports whether the campaign's lock may be held now: an apply
// (or resolve, or migration) of it is running, and may yet record the
// answer of an intent it left open. Only a lock seen free says no: the
// intent's apply ended (a kill, a lost connection) before the answer, so
// the intent is in doubt as docs/state.md says of one, and a report
// settles it. Where the lock cannot be seen (a file state off Linux),
// the answer is yes: the report waits, as before, for the operator's
// resolve.
func (r *Receiver) applying(ctx context.Context, campaign int64) (bool, error) {
	if busy, ok := r.running[campaign]; ok {
		return busy, nil
	}
	if err := r.named(ctx, campaign); err != nil {
		return true, err
	}
	name, busy := r.names[campaign], true
	switch {
	case name == "":
	case r.pg && r.schema == "": // the location's schema not known: the lock cannot be looked for
	case r.pg:
		if err := r.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid)`,
			advisoryKey(r.schema, name)).Scan(&busy); err != nil {
			return true, err
		}
	case r.real != "":
		held, known, err := inodeLocked(r.real, name)
		if err != nil {
			return true, err
		}
		busy = held || !known
	}
	if r.running == nil {
		r.running = map[int64]bool{}
	}
	r.running[campaign] = busy
	return busy, nil
}

// resolveOnce resolves m's recipient by the report unless this
// transaction already did.
// A recipient that a later attempt took over (resolved by an earlier
// report, or by a person) is left as it is.
func (r *Receiver) resolveOnce(ctx context.Context, tx *sql.Tx, m matched, rp Report, now time.Time, resolved map[flightKey]bool) (bool, error) {
	k := flightKey{m.attempt, m.phone}
	if resolved[k] {
		return false, nil
	}
	resolved[k] = true
	var later int
	if err := tx.QueryRowContext(ctx, r.q[qLaterWith], m.campaign, m.attempt, `%"`+m.phone+`"%`).Scan(&later); err != nil || later > 0 {
		return false, err
	}
	return true, r.resolveByReport(ctx, tx, m, rp, now)
}

// grouped is a group's reports and replies, each with where its result goes.
type grouped struct {
	reports []reportAt
	replies []replyAt
}

type reportAt struct {
	Report
	key     string // reportKey of the report as given
	out     *ReportResult
	matched matched // campaign 0: none
	owner   int     // write: the index in its group of the recording it came with
}

type replyAt struct {
	Reply
	key      string // replyKey of the reply as given
	word     string // the stop or start word it was read as; "" for another reply
	out      *ReplyResult
	campaign int64 // 0: none
	owner    int   // as reportAt's
}

// matched is the recipient a report or reply was matched to: its
// campaign, phone, the attempt that sent it and that attempt's state.
type matched struct {
	campaign int64
	phone    string
	attempt  int64
	state    AttemptState
	by       string
}

// match finds each report's recipient (by id, else by number) and each
// reply's campaign, and says what a report means for its recipient.
func (r *Receiver) match(ctx context.Context, g *grouped, now time.Time) error {
	// The ids of what applies recorded since are put in the index first:
	// a report names its message by its id alone (a reclaimed report too,
	// whose attempt's answer may have come since).
	if err := indexMessages(ctx, r.db, r.q, r.pg); err != nil {
		return err
	}
	byID, err := r.byIDs(ctx, g.reports)
	if err != nil {
		return err
	}
	for i := range g.reports {
		rp := &g.reports[i]
		rp.At = atOrNow(rp.At, now)
		m, why := oneOf(byID[rp.ProviderID], rp.Phone)
		if m.campaign == 0 && why == "" {
			if m, why, err = r.byNumber(ctx, rp.Report); err != nil {
				return err
			}
		}
		if m.campaign == 0 {
			rp.out.Unmatched = why
			continue
		}
		if err := r.named(ctx, m.campaign); err != nil {
			return err
		}
		*rp.out = ReportResult{Campaign: r.names[m.campaign], Phone: m.phone, MatchedBy: m.by}
		rp.out.Anomaly = anomaly(m.state, rp.Delivery)
		rp.matched = m
	}
	for i := range g.replies {
		rp := &g.replies[i]
		rp.At = atOrNow(rp.At, now)
		m, _, err := r.latestTo(ctx, rp.Phone, rp.At)
		if err != nil {
			return err
		}
		if m.campaign != 0 {
			if err := r.named(ctx, m.campaign); err != nil {
				return err
			}
			rp.out.Campaign, rp.campaign = r.names[m.campaign], m.campaign
		}
	}
	return nil
}

// atOrNow is when a report or reply says it happened, else now: when it
// says nothing, or a time more than ten minutes ahead of ours (the slack a
// report's clock has in matching). Reports and replies count in their
// order (a newer one is never undone by an older), so one dated ahead, a
// provider's slip or a forgery, would otherwise outrank every later one: a
// START of 2286 would keep each later STOP from opting the number out. Its
// key, made before, is as sent.
func atOrNow(at, now time.Time) time.Time {
	if at.IsZero() || at.After(now.Add(10*time.Minute)) {
		return now
	}
	return at
}

// byIDs finds the messages of the reports' ids: one query for the group,
// each message an id names (see oneOf).
func (r *Receiver) byIDs(ctx context.Context, reports []reportAt) (map[string][]matched, error) {
	var ids []string
	for _, rp := range reports {
		if rp.ProviderID != "" {
			ids = append(ids, rp.ProviderID)
		}
	}
	out := map[string][]matched{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := r.db.QueryContext(ctx, r.q[qMessagesFor], string(rawjson.AppendStrings(nil, ids)))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, st string
		var m matched
		if err := rows.Scan(&id, &m.campaign, &m.phone, &m.attempt, &st); err != nil {
			return nil, err
		}
		m.state, m.by = AttemptState(st), "id"
		if !slices.Contains(out[id], m) {
			out[id] = append(out[id], m)
		}
	}
	return out, rows.Err()
}

// oneOf is the message a report's id names among those that have it:
// the only one, else the only one to the report's number. An id that
// names several messages (a provider that reuses its ids) and no number
// that tells them apart leaves the report unmatched, with why: a report
// settles a recipient in doubt, and must never settle the wrong one.
func oneOf(ms []matched, phone string) (matched, string) {
	switch {
	case len(ms) == 0:
		return matched{}, ""
	case len(ms) == 1 && (phone == "" || ms[0].phone == phone):
		return ms[0], ""
	case len(ms) == 1:
		return matched{}, "the provider's message id names a message to another number than the report's"
	}
	var one matched
	n := 0
	for _, m := range ms {
		if phone != "" && m.phone == phone {
			one = m
			n++
		}
	}
	if n == 1 {
		return one, ""
	}
	return matched{}, fmt.Sprintf("the provider's message id names %d messages, and the report's number does not tell which", len(ms))
}

// byNumber matches a report by its number: only when exactly one message
// of the state went to that number in the window before the report (a
// report's time may run a little ahead of ours). Anything else is
// unmatched, with why: never guessed.
func (r *Receiver) byNumber(ctx context.Context, rp Report) (matched, string, error) {
	switch {
	case rp.Phone != "":
	case rp.ProviderID != "" && rp.Unreadable:
		return matched{}, "no message has the provider's id, and the report's number is not one in international form", nil
	case rp.ProviderID != "":
		return matched{}, "no message has the provider's id, and the report names no number", nil
	case rp.Unreadable:
		return matched{}, "the report names no message id, and its number is not one in international form", nil
	default:
		return matched{}, "the report names neither a message id nor a number", nil
	}
	cands, err := r.sendsTo(ctx, rp.Phone, rp.At)
	if err != nil {
		return matched{}, "", err
	}
	days := int(r.opts.MatchWindow.Hours() / 24)
	switch len(cands) {
	case 0:
		return matched{}, fmt.Sprintf("no message went to that number in the %d days before the report", days), nil
	case 1:
		m := cands[0]
		m.by = "number"
		// A report that names an id is about that message: when the one
		// message to the number is in doubt and has another id, the report
		// is about a message smsform did not send (another tool's, on the
		// same account), and must not settle it. A message recorded sent
		// keeps its match by number: a provider that gives each part of a
		// long message an id of its own reports the others' ids too.
		if rp.ProviderID == "" || (m.state != AttemptInDoubt && m.state != AttemptIntent) {
			return m, "", nil
		}
		// The answer with the ids may have been recorded since the index
		// was read: the same id is the message's.
		known, err := r.providerIDOf(ctx, m.attempt, m.phone)
		switch {
		case err != nil || known == "":
			return m, "", err
		case known == rp.ProviderID:
			m.by = "id"
			return m, "", nil
		}
		return matched{}, "no message has the provider's id, and the one message to that number has another id: not guessed", nil
	}
	return matched{}, fmt.Sprintf("%d messages went to that number in the %d days before the report, and its id names none of them: not guessed", len(cands), days), nil
}

// providerIDOf is the id the provider gave the message of attempt to
// phone, "" when its answer gave none.
func (r *Receiver) providerIDOf(ctx context.Context, attempt int64, phone string) (string, error) {
	var phones, ids string
	switch err := r.db.QueryRowContext(ctx, r.q[qAttemptIDs], attempt).Scan(&phones, &ids); {
	case errors.Is(err, sql.ErrNoRows), err == nil && ids == "":
		return "", nil // gone since (migrated), or no ids: nothing to compare
	case err != nil:
		return "", err
	}
	var ps, is []string
	if err := json.Unmarshal([]byte(phones), &ps); err != nil {
		return "", err
	}
	if err := json.Unmarshal([]byte(ids), &is); err != nil {
		return "", err
	}
	if i := slices.Index(ps, phone); i >= 0 && i < len(is) {
		return is[i], nil
	}
	return "", nil
}

// latestTo is the latest message to phone before at, in the window: the
// campaign a reply answers.
func (r *Receiver) latestTo(ctx context.Context, phone string, at time.Time) (matched, string, error) {
	cands, err := r.sendsTo(ctx, phone, at)
	if err != nil || len(cands) == 0 {
		return matched{}, "", err
	}
	return cands[len(cands)-1], "", nil
}

// sendsTo are the attempts that may have sent to phone in the window
// before at, oldest first, with their states as they are now: those not
// acted on (forgotten), held back (suppressed) or split into parts are no
// message.
//
// An attempt split into parts by the provider's answer gets its parts in
// the transaction that marks it split: when the index was read just
// before that commit and the states just after, the split attempt is
// passed over and its parts are not indexed yet, so the index is read
// once more.
func (r *Receiver) sendsTo(ctx context.Context, phone string, at time.Time) ([]matched, error) {
	out, split, err := r.sendsToOnce(ctx, phone, at)
	if err == nil && split && len(out) == 0 {
		out, _, err = r.sendsToOnce(ctx, phone, at)
	}
	return out, err
}

// sendsToOnce is sendsTo of the index as read now, and whether a split
// attempt was passed over.
func (r *Receiver) sendsToOnce(ctx context.Context, phone string, at time.Time) (_ []matched, split bool, _ error) {
	if r.numbers == nil {
		r.numbers = &numberIndex{byPhone: map[string][]indexed{}}
	}
	if err := r.numbers.refresh(ctx, r.db, r.q); err != nil {
		return nil, false, err
	}
	from, to := at.Add(-r.opts.MatchWindow).Unix(), at.Add(10*time.Minute).Unix()
	var ids []string
	for _, e := range r.numbers.byPhone[phone] {
		if e.at >= from && e.at <= to {
			ids = append(ids, strconv.FormatInt(e.attempt, 10))
		}
	}
	if len(ids) == 0 {
		return nil, false, nil
	}
	states, err := r.attemptStates(ctx, ids)
	if err != nil {
		return nil, false, err
	}
	var out []matched
	var batches []string
	for _, e := range r.numbers.byPhone[phone] {
		a, ok := states[e.attempt]
		if !ok || e.at < from || e.at > to {
			continue
		}
		switch a.state {
		case AttemptSplit:
			split = true
			continue
		case AttemptForgotten, AttemptSuppressed:
			continue
		}
		out = append(out, matched{campaign: e.campaign, phone: phone, attempt: e.attempt, state: a.state})
		batches = append(batches, a.batch)
	}
	return resolvedOnce(out, batches), split, nil
}

// resolvedOnce is ms (oldest first, batches[i] the batch of ms[i]) with
// each attempt left out that a later one of its campaign and batch
// resolved as sent: a recipient in doubt (or failed) that a report
// resolved is recorded sent in an attempt of its own, while the attempt
// it was in keeps its other recipients. Both are one message to the
// number: counted twice, every later report of it was left unmatched as
// one of two messages.
func resolvedOnce(ms []matched, batches []string) []matched {
	out := ms[:0:0]
	for i, m := range ms {
		resolved := false
		for j := i + 1; j < len(ms) && !resolved; j++ {
			resolved = m.state != AttemptResolvedSent && ms[j].state == AttemptResolvedSent &&
				ms[j].campaign == m.campaign && batches[j] == batches[i]
		}
		if !resolved {
			out = append(out, m)
		}
	}
	return out
}

// attemptRow is what attemptStates reads of an attempt.
type attemptRow struct {
	state AttemptState
	batch string
}

// attemptStates reads the states (and batches) of the attempts ids.
func (r *Receiver) attemptStates(ctx context.Context, ids []string) (map[int64]attemptRow, error) {
	rows, err := r.db.QueryContext(ctx, r.q[qAttemptsByID], "["+strings.Join(ids, ",")+"]")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]attemptRow{}
	for rows.Next() {
		var id, campaign int64
		var st, batch, body, plan string
		if err := rows.Scan(&id, &campaign, &st, &batch, &body, &plan); err != nil {
			return nil, err
		}
		out[id] = attemptRow{AttemptState(st), batch}
	}
	return out, rows.Err()
}

// numberIndex is each number's attempts (campaign, attempt, when), read
// once and then only the attempts added since: what matching by number
// and attributing a reply need, which the attempts' table cannot answer
// (its recipients are JSON arrays).
//
// "Added since" is not "with a higher id": PostgreSQL hands out ids when
// a row is inserted, and a transaction that took id 71 may commit after
// one that took 72. An id skipped over is a hole, read again at each
// refresh until it appears or holeWait passes (a rolled-back insert
// leaves a hole for good).
type numberIndex struct {
	after   int64
	holes   map[int64]time.Time // ids below after not seen yet, since when
	byPhone map[string][]indexed
}

// holeWait is how long a skipped id is looked for: longer than any
// transaction that records an intent.
const holeWait = 10 * time.Minute

// maxHoles bounds the holes one refresh adds: a gap that wide is ids
// given up (a sequence's cache, a failed bulk insert), not transactions
// in flight.
const maxHoles = 1000

type indexed struct {
	campaign, attempt, at int64
}

func (x *numberIndex) refresh(ctx context.Context, db *sql.DB, q *dialect) error {
	if len(x.holes) > 0 {
		now := time.Now()
		ids := make([]string, 0, len(x.holes))
		for id, since := range x.holes {
			if now.Sub(since) > holeWait {
				delete(x.holes, id)
				continue
			}
			ids = append(ids, strconv.FormatInt(id, 10))
		}
		if len(ids) > 0 {
			if err := x.read(ctx, db, q[qAttemptsIn], "["+strings.Join(ids, ",")+"]"); err != nil {
				return err
			}
		}
	}
	return x.read(ctx, db, q[qAttemptsAfter], x.after)
}

// read indexes the attempts a query gives, oldest first.
func (x *numberIndex) read(ctx context.Context, db *sql.DB, query string, arg any) error {
	rows, err := db.QueryContext(ctx, query, arg)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, campaign int64
		var st, phones, started, finished string
		if err := rows.Scan(&id, &campaign, &st, &phones, &started, &finished); err != nil {
			return err
		}
		x.note(id)
		at := parseTime(started).Unix()
		if err := eachPhone(phones, func(p string) {
			x.byPhone[p] = append(x.byPhone[p], indexed{campaign, id, at})
		}); err != nil {
			return err
		}
	}
	return rows.Err()
}

// note records that id was read: a hole filled, or the ids skipped
// between the last one and id made holes.
func (x *numberIndex) note(id int64) {
	if id <= x.after {
		delete(x.holes, id)
		return
	}
	if gap := id - x.after - 1; gap > 0 && gap <= maxHoles {
		if x.holes == nil {
			x.holes = map[int64]time.Time{}
		}
		now := time.Now()
		for h := x.after + 1; h < id; h++ {
			x.holes[h] = now
		}
	}
	x.after = id
}

// named makes sure the campaign's name is known.
func (r *Receiver) named(ctx context.Context, id int64) error {
	if _, ok := r.names[id]; ok {
		return nil
	}
	rows, err := r.db.QueryContext(ctx, r.q[qPickCampaigns], "")
	if err != nil {
		return err
	}
	defer rows.Close()
	r.names = map[int64]string{}
	for rows.Next() {
		var cid int64
		var name string
		if err := rows.Scan(&cid, &name); err != nil {
			return err
		}
		r.names[cid] = name
	}
	return rows.Err()
}

// kindOf is what a reply's text asks: stop, start, or nothing (other),
// and the word it was read as. A stop word is also looked for as
// words.LooseReplyWord reads it ("Opt-Out", "STOP STOP"); a start word
// only as written.
func (r *Receiver) kindOf(text string) (kind, word string) {
	w := words.ReplyWord(text)
	if r.stop[w] {
		return "stop", w
	}
	for _, loose := range words.StopReadings(text) {
		if r.stop[loose] {
			return "stop", loose
		}
	}
	if r.start[w] {
		return "start", w
	}
	return "other", ""
}

// anomaly says why a report contradicts the record of the message it is
// about: the provider reports a message smsform recorded as not sent.
func anomaly(st AttemptState, d Delivery) string {
	var what string
	switch st {
	case AttemptFailed:
		what = "recorded failed (refused by the provider)"
	case AttemptForgotten, AttemptResolvedUnsent:
		what = "recorded unsent"
	case AttemptSuppressed:
		what = "recorded suppressed (opted out, never sent)"
	default:
		return ""
	}
	return fmt.Sprintf("the provider reports the message %s, but smsform %s", d, what)
}

// reportKey is a report's identity: the same report sent again has the
// same key, and is recorded once. A report without an id or a time is
// known only by its number and status: two such reports of one status to
// one number are one.
func reportKey(rp Report) string {
	h := sha256.New()
	for _, f := range []string{rp.ProviderID, rp.Phone, rp.Delivery.String(), rp.ProviderStatus, rp.Reason, formatTime(rp.At)} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// replyKey is a reply's identity, as reportKey is a report's: its
// provider's id when the mapping reads one, else its number, words and
// time. A reply with neither an id nor a time is known by its number and
// words alone, so that a provider's retry is recorded once; but a STOP of
// that kind is a new one each time it comes: a person's second STOP (after
// a START, or after their re-consent was recorded) was taken for the first
// posted again, and they were messaged on. Recording a STOP twice opts out
// no one more; a START or any other reply stays known by its words (a
// second START without an id or a time is not counted: the person stays
// opted out, the safe side).
func replyKey(rp Reply, stop bool, now time.Time) string {
	at := rp.At
	if at.IsZero() && stop {
		at = now
	}
	fields := []string{rp.Phone, rp.Text, formatTime(at)}
	if rp.ProviderID != "" {
		// With its number and words: a mapping's id that is not one per
		// reply (a conversation's, an account's) must not make a later
		// STOP a duplicate of an earlier reply.
		fields = []string{"id", rp.ProviderID, rp.Phone, rp.Text}
	}
	h := sha256.New()
	for _, f := range fields {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// writeReports inserts the group's reports (each once), and resolves each
// in-doubt recipient that a delivered or undelivered report proves the
// provider acted on, a report already recorded too (posting or importing
// it again settles what it proves). It returns the reports of recipients
// whose send is still in flight, to settle once apply records it.
func (r *Receiver) writeReports(ctx context.Context, tx *sql.Tx, g *grouped, now time.Time, resolved map[flightKey]bool) ([]flight, error) {
	if len(g.reports) == 0 {
		return nil, nil
	}
	rows := make([][]string, 0, len(g.reports))
	keys := make([]string, len(g.reports))
	seen := map[string]bool{}
	for i, rp := range g.reports {
		keys[i] = rp.key
		if seen[keys[i]] {
			continue // the same report twice in one group
		}
		seen[keys[i]] = true
		m := rp.matched
		rows = append(rows, []string{keys[i], strconv.FormatInt(m.campaign, 10), cmpOr(m.phone, rp.Phone), rp.ProviderID, rp.Delivery.String(),
			rp.ProviderStatus, rp.Reason, formatTime(rp.At), formatTime(now), m.by, rp.out.Unmatched, rp.out.Anomaly})
	}
	// In the order of their keys, the reports fill the index of keys page
	// after page rather than all over it (an import of 979,949 reports:
	// 45-50 s -> 40 s).
	slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	inserted, err := insertKeyed(ctx, tx, r.q[qInsertReports], rows)
	if err != nil {
		return nil, err
	}
	var waiting []flight
	for i := range g.reports {
		rp := &g.reports[i]
		if inserted[keys[i]] {
			delete(inserted, keys[i]) // a second copy in this group is a duplicate
		} else {
			rp.out.Duplicate = true
		}
		m := rp.matched
		switch {
		case m.campaign == 0 || rp.Delivery == Pending:
		case m.state == AttemptIntent:
			// Apply is still waiting for the answer: it may yet record
			// the recipient sent, and a second record would count it
			// twice. An intent whose campaign no apply holds now was
			// left open by one that ended before the answer (killed):
			// nothing will record it, and it is in doubt.
			// (An answer recorded since waits too: landed reads it.)
			st, err := r.settled(ctx, m)
			if err != nil {
				return nil, err
			}
			if st != AttemptInDoubt {
				waiting = append(waiting, flight{m, rp.Report})
				continue
			}
			m.state = AttemptInDoubt
			done, err := r.resolveOnce(ctx, tx, m, rp.Report, now, resolved)
			if err != nil {
				return nil, err
			}
			rp.out.Resolved = done
		case m.state == AttemptInDoubt && !resolved[flightKey{m.attempt, m.phone}]:
			done, err := r.resolveOnce(ctx, tx, m, rp.Report, now, resolved)
			if err != nil {
				return nil, err
			}
			rp.out.Resolved = done
		}
	}
	return waiting, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// insertKeyed inserts rows (a JSON array of arrays) with a statement that
// returns the key of each row it inserted, and returns those keys.
func insertKeyed(ctx context.Context, tx querier, q string, rows [][]string) (map[string]bool, error) {
	// Written into one buffer sized first: json.Marshal of a group of
	// 50,000 reports grew its buffer by copies and took a tenth of an
	// import's time.
	size := 2
	for _, row := range rows {
		for _, f := range row {
			size += len(f) + 3
		}
		size += 3
	}
	doc := append(make([]byte, 0, size), '[')
	for i, row := range rows {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = rawjson.AppendStrings(doc, row)
	}
	doc = append(doc, ']')
	res, err := tx.QueryContext(ctx, q, string(doc))
	if err != nil {
		return nil, err
	}
	defer res.Close()
	inserted := map[string]bool{}
	for res.Next() {
		var k string
		if err := res.Scan(&k); err != nil {
			return nil, err
		}
		inserted[k] = true
	}
	return inserted, res.Err()
}

// resolveByReport records the recipient m sent, resolved by the report: an
// attempt of its own after the one in doubt (its batch, body and plan),
// so that the recipient's latest attempt says it, and the campaign's
// serial moves as for any change of who was messaged.
func (r *Receiver) resolveByReport(ctx context.Context, tx *sql.Tx, m matched, rp Report, now time.Time) error {
	var id, campaign int64
	var st, batch, body, plan string
	err := tx.QueryRowContext(ctx, r.q[qAttemptsByID], "["+strconv.FormatInt(m.attempt, 10)+"]").Scan(&id, &campaign, &st, &batch, &body, &plan)
	if err != nil {
		return err
	}
	reason, phones, ids := byReport(rp, m.phone)
	var newID int64
	if err := tx.QueryRowContext(ctx, r.q[qPutAttempt], campaign, batch, string(AttemptResolvedSent), body, 1, 0, "", reason,
		formatTime(now), formatTime(now), plan, phones, rp.ProviderStatus, ids).Scan(&newID); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, r.q[qBumpSerial], campaign, 1)
	return err
}

// byReport is what the attempt that records phone sent, resolved by the
// report rp, says: its reason, and its phones and ids as JSON.
func byReport(rp Report, phone string) (reason, phones, ids string) {
	reason = fmt.Sprintf("resolved as sent by a delivery report: %s at %s", rp.Delivery, formatTime(rp.At))
	if rp.ProviderID != "" {
		reason += ", message " + rp.ProviderID
		ids = string(rawjson.AppendStrings(nil, []string{rp.ProviderID}))
	}
	return reason, string(rawjson.AppendStrings(nil, []string{phone})), ids
}

// writeReplies inserts the group's replies (each once), and for a new
// stop or start word changes the opt-outs (source "reply") unless the
// number already is as it asks.
func (r *Receiver) writeReplies(ctx context.Context, tx *sql.Tx, g *grouped, now time.Time) error {
	if len(g.replies) == 0 {
		return nil
	}
	rows := make([][]string, 0, len(g.replies))
	keys := make([]string, len(g.replies))
	for i, rp := range g.replies {
		keys[i] = rp.key
		// Only a stop or start word is kept (rp.word), never what else
		// people write.
		rows = append(rows, []string{keys[i], rp.Phone, rp.out.Kind, rp.word, strconv.FormatInt(rp.campaign, 10), formatTime(rp.At), formatTime(now)})
	}
	inserted, err := insertKeyed(ctx, tx, r.q[qInsertReplies], rows)
	if err != nil {
		return err
	}
	for i := range g.replies {
		rp := &g.replies[i]
		if !inserted[keys[i]] {
			rp.out.Duplicate = true
			continue
		}
		delete(inserted, keys[i])
		if rp.out.Kind == "other" || r.opts.OptOuts == nil {
			continue
		}
		said := rp.Reply
		said.Text = rp.word // the word it was read as: "Opt-Out" is OPT OUT
		if err := r.opts.OptOuts.FromReply(ctx, tx, r.pg, said, rp.out.Kind == "stop"); err != nil {
			return err
		}
	}
	return nil
}
