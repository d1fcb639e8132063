package ledger

import (
	"github.com/smsform/smsform/internal/rawjson"
	"github.com/smsform/smsform/state"
)

// Gate is the project's ledger as an intent consults it (state.Gate): a
// recipient opted out now is suppressed, one the caps hold back is held,
// and the rest are claimed, one row of the cap index a send, in the
// intent's transaction. Make one per apply, with the campaign's caps.
type Gate struct{ caps Caps }

// NewGate is the gate of a campaign held to caps (nil: none, only the
// opt-outs).
func NewGate(caps *Caps) *Gate {
	g := &Gate{}
	if caps != nil {
		g.caps = *caps
	}
	return g
}

// Claim is state.Gate's: three statements whatever the ledger holds. The
// first makes the numbers' rows of the cap index if missing, locks them in
// the numbers' order in PostgreSQL (so that two batches never deadlock)
// and says who opted out; the second, only under a cap, reads their
// recent sends, as committed once the locks are held (a statement of its
// own, so that it sees a send another apply committed while this one
// waited for the lock); the third claims those sent.
func (g *Gate) Claim(tx *state.Tx, phones []string, attempt int64) (state.Admission, error) {
	q := of(tx.Postgres())
	now := tx.Now()
	at := capSecond(now)
	list := string(rawjson.AppendStrings(nil, phones))
	rows, err := tx.Query(q[qLock], list, at)
	if err != nil {
		return state.Admission{}, err
	}
	out := make(map[string]bool, len(phones))
	for rows.Next() {
		var p string
		var opted bool
		if err := rows.Scan(&p, &opted); err != nil {
			rows.Close()
			return state.Admission{}, err
		}
		out[p] = opted
	}
	if err := closeRows(rows); err != nil {
		return state.Admission{}, err
	}
	recent, err := g.recent(tx, q, phones, list)
	if err != nil {
		return state.Admission{}, err
	}
	adm := state.Admission{Send: make([]string, 0, len(phones))}
	for _, p := range phones {
		if out[p] {
			adm.Suppressed = append(adm.Suppressed, p)
			continue
		}
		if es := recent[p]; len(es) > 0 {
			if until := sendableAt(g.caps.of(p), es, now); until.After(now) {
				adm.Held = append(adm.Held, p)
				if until.After(adm.HeldUntil) {
					adm.HeldUntil = until
				}
				continue
			}
		}
		adm.Send = append(adm.Send, p)
	}
	if len(adm.Send) == 0 {
		return adm, nil
	}
	if len(adm.Send) < len(phones) {
		list = string(rawjson.AppendStrings(nil, adm.Send))
	}
	_, err = tx.Exec(q[qClaim], list, at, attempt, g.caps.Marketing)
	return adm, err
}

// recent reads the recent sends of phones, within the longest window of
// the caps that hold them; none without a cap.
func (g *Gate) recent(tx *state.Tx, q *dialect, phones []string, list string) (map[string][]send, error) {
	if !g.caps.Any() {
		return nil, nil
	}
	per := g.caps.longest(phones)
	if per <= 0 {
		return nil, nil
	}
	rows, err := tx.Query(q[qRecent], list, tx.Now().Add(-per).Unix())
	if err != nil {
		return nil, err
	}
	m := map[string][]send{}
	for rows.Next() {
		var p string
		var s send
		if err := rows.Scan(&p, &s.at, &s.marketing); err != nil {
			rows.Close()
			return nil, err
		}
		m[p] = append(m[p], s)
	}
	return m, closeRows(rows)
}

// Release is state.Gate's: the attempt's claims of phones go.
func (g *Gate) Release(tx *state.Tx, phones []string, attempt int64) error {
	_, err := tx.Exec(of(tx.Postgres())[qRelease], attempt, string(rawjson.AppendStrings(nil, phones)))
	return err
}
