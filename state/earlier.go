package state

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"
)

// EarlierSigns lists, reading only, the signs of an earlier state of
// campaign at loc that an apply would refuse to start a new one over (see
// [EarlierStateError]): what plan shows first, so that a plan apply will
// refuse never reads as a first send. None when the state records the
// campaign, whose record is then the state.
func EarlierSigns(ctx context.Context, l Location, campaign string) ([]string, error) {
	loc := l.Unmasked()
	if IsPostgres(loc) {
		return pgEarlierSigns(ctx, loc, campaign)
	}
	real, err := ResolveFile(loc)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", loc, err)
	}
	exists, err := checkFile(real)
	if err != nil {
		return nil, err
	}
	if exists {
		st, err := openFileReadOnly(ctx, real, campaign, true)
		if err != nil {
			return nil, err
		}
		recorded := st.recorded()
		st.Close()
		if recorded {
			return nil, nil
		}
	}
	return fileSigns(real, campaign, exists), nil
}

// pgEarlierSigns is EarlierSigns for a PostgreSQL state: the last holder's
// row of the campaign's lock, and its record in another smsform schema.
func pgEarlierSigns(ctx context.Context, loc, campaign string) (_ []string, err error) {
	t, err := parsePostgres(loc)
	if err != nil {
		return nil, err
	}
	defer func() { err = explainPostgres(t, err) }()
	db := stdlib.OpenDB(*t.cfg)
	defer db.Close()
	v, err := pgSchemaVersion(ctx, db, t)
	if err != nil {
		return nil, err
	}
	var previous *holder
	if v > 0 {
		var id int64
		switch err := db.QueryRowContext(ctx, `SELECT id FROM campaigns WHERE name = $1`, campaign).Scan(&id); {
		case err == nil:
			return nil, nil
		case err != sql.ErrNoRows:
			return nil, fmt.Errorf("open state %s: %w", t.shown, err)
		}
		previous = lastHolder(ctx, db, campaign)
	}
	return pgSigns(ctx, db, t, previous, campaign), nil
}
