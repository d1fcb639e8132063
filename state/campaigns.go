package state

import (
	"context"
	"fmt"
)

// Campaign is a campaign a state records, as [Campaigns] lists it.
type Campaign struct {
	Name    string
	Moved   bool   // migrated away: kept only to read
	MovedTo string // where to, when Moved
}

// Campaigns lists the campaigns the state at loc records, by name; none
// for a missing state. A state of an older schema records one campaign,
// which is listed.
func Campaigns(ctx context.Context, l Location) ([]Campaign, error) {
	st, err := openLedger(ctx, l.Unmasked())
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if st.db == nil {
		return nil, nil
	}
	if st.schema < 3 {
		ro, err := OpenReadOnly(ctx, l, "")
		if err != nil {
			return nil, err
		}
		defer ro.Close()
		if ro.Campaign() == "" {
			return nil, nil
		}
		c := Campaign{Name: ro.Campaign()}
		if m := ro.Moved(); m != nil {
			c.Moved, c.MovedTo = true, m.To
		}
		return []Campaign{c}, nil
	}
	rows, err := st.db.QueryContext(ctx, `SELECT name, moved_to FROM campaigns ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", st.loc, err)
	}
	defer rows.Close()
	var cs []Campaign
	for rows.Next() {
		var c Campaign
		if err := rows.Scan(&c.Name, &c.MovedTo); err != nil {
			return nil, fmt.Errorf("read state %s: %w", st.loc, err)
		}
		c.Moved = c.MovedTo != ""
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read state %s: %w", st.loc, err)
	}
	return cs, nil
}

// Vacated is the *MovedAwayError of the state at l when every campaign it
// records moved away: a whole state was migrated, the project's ledger
// with it, and nothing more is to be recorded or planned there (what it
// holds is kept to read). Nil for any other state, one that records no
// campaign included.
func Vacated(ctx context.Context, l Location) error {
	cs, err := Campaigns(ctx, l)
	if err != nil {
		return err
	}
	marks := map[int64]string{}
	for i, c := range cs {
		if c.Moved {
			marks[int64(i)] = c.MovedTo
		}
	}
	return vacated(l.String(), marks, len(cs))
}
