package state

import (
	"context"
	"fmt"
)

// Campaign is a campaign a state records, as [Campaigns] lists it.
type Campaign struct {
	Name  string
	Moved bool // migrated away: kept only to read
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
		return []Campaign{{Name: ro.Campaign(), Moved: ro.Moved() != nil}}, nil
	}
	rows, err := st.db.QueryContext(ctx, `SELECT name, moved_to FROM campaigns ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", st.loc, err)
	}
	defer rows.Close()
	var cs []Campaign
	for rows.Next() {
		var c Campaign
		var movedTo string
		if err := rows.Scan(&c.Name, &movedTo); err != nil {
			return nil, fmt.Errorf("read state %s: %w", st.loc, err)
		}
		c.Moved = movedTo != ""
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read state %s: %w", st.loc, err)
	}
	return cs, nil
}
