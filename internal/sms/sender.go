package sms

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/smsform/smsform/internal/e164"
)

// maxAlphanumeric is the longest alphanumeric sender operators accept.
const maxAlphanumeric = 11

// CheckSender reports why s is not an acceptable sender, or nil: an
// alphanumeric sender is 1-11 letters, digits and spaces with at least one
// letter; otherwise it must be an E.164 number or a 3-8 digit short code.
//
// Letters and digits are ASCII ones. An E.164 sender is "+" and digits only,
// valid by phonenumbers.
func CheckSender(s string) error {
	if s == "" {
		return fmt.Errorf("sender is empty; write an alphanumeric name of at most %d characters, a phone number in E.164 or a short code", maxAlphanumeric)
	}
	if s[0] == '+' {
		return checkE164Sender(s)
	}
	if isDigits(s) {
		if len(s) < 3 || len(s) > 8 {
			return fmt.Errorf("sender %q has %d digits; a short code has 3 to 8, and a phone number is written in E.164 with a leading +", s, len(s))
		}
		return nil
	}
	letter := false
	for _, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
			letter = true
		case '0' <= r && r <= '9', r == ' ':
		default:
			return fmt.Errorf("sender %q has %q; an alphanumeric sender may hold only letters, digits and spaces", s, string(r))
		}
	}
	if n := utf8.RuneCountInString(s); n > maxAlphanumeric {
		return fmt.Errorf("sender %q is %d characters; an alphanumeric sender has at most %d", s, n, maxAlphanumeric)
	}
	if !letter {
		return fmt.Errorf("sender %q has no letter; an alphanumeric sender needs at least one", s)
	}
	return nil
}

func checkE164Sender(s string) error {
	switch canon, err := e164.Strict(s); {
	case errors.Is(err, e164.ErrNotE164):
		return fmt.Errorf("sender %q starts with + but is not in E.164; write + and the digits only, without spaces or dashes", s)
	case err != nil:
		return fmt.Errorf("sender %q is not a valid phone number: %w", s, err)
	case canon != s:
		return fmt.Errorf("sender %q is not in E.164; write it as %s", s, canon)
	}
	return nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
