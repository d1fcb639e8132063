// Package tokenstore keeps issued access tokens between runs, so that apply
// reuses one token until shortly before it expires. Tokens are secrets: the
// store is a folder of mode 0700 holding files of mode 0600, and a store that
// others can read is refused.
package tokenstore

import (
	"time"
)

// Token is a stored token.
type Token struct {
	Value     string
	ValidTill time.Time
}

// Store is a token store in one folder.
type Store struct{ dir string }

// DefaultDir is the user's cache folder + "/smsform/tokens".
func DefaultDir() (string, error) { panic("todo") }

// Open opens (creating with mode 0700 if needed) the store in dir, and
// refuses one whose folder or files others can read.
func Open(dir string) (*Store, error) { panic("todo") }

// Get returns the token stored for baseURL and clientID, if any.
func (s *Store) Get(baseURL, clientID string) (Token, bool, error) { panic("todo") }

// Put stores t for baseURL and clientID, replacing any earlier one, crash-safely.
func (s *Store) Put(baseURL, clientID string, t Token) error { panic("todo") }
