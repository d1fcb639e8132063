package campaign

import (
	"strings"
	"testing"
	"time"

	"github.com/smsform/smsform/internal/window"
)

const windowHead = okHead + "recipients:\n  - numbers: [\"+14155550101\"]\n" // lines 1-6

// TestWindowBadInput is the catalogue of bad schedule keys: each names the
// file, the line and the key, with a hint.
func TestWindowBadInput(t *testing.T) {
	tests := []struct {
		name string
		yaml string // after windowHead: line 7 on
		want string
		hint string
	}{
		{"unknown day", "send_window:\n  days: [mon, tues]\n  from: \"09:00\"\n  to: \"20:00\"\n",
			`campaign.yaml:8: send_window.days[1]: unknown day "tues"`, "write tue"},
		{"day spelled out", "send_window:\n  days: [Monday]\n  from: \"09:00\"\n  to: \"20:00\"\n",
			`campaign.yaml:8: send_window.days[0]: unknown day "Monday"`, "write mon"},
		{"day repeated", "send_window:\n  days: [mon, mon]\n  from: \"09:00\"\n  to: \"20:00\"\n",
			"campaign.yaml:8: send_window.days[1]: day mon is repeated", "remove one"},
		{"days empty", "send_window:\n  days: []\n  from: \"09:00\"\n  to: \"20:00\"\n",
			"campaign.yaml:8: send_window.days: list is empty", "leave days out"},
		{"days as text", "send_window:\n  days: weekdays\n  from: \"09:00\"\n  to: \"20:00\"\n",
			`campaign.yaml:8: send_window.days: must be a list of days, not the text "weekdays"`, "days: [mon"},
		{"from after to", "send_window:\n  from: \"20:00\"\n  to: \"09:00\"\n",
			"campaign.yaml:9: send_window.to: 09:00 is not after from (20:00)", "cross midnight are not allowed"},
		{"from equals to", "send_window:\n  from: \"09:00\"\n  to: \"09:00\"\n",
			"campaign.yaml:9: send_window.to: 09:00 is not after from (09:00)", "cross midnight"},
		{"bad time", "send_window:\n  from: \"9am\"\n  to: \"20:00\"\n",
			`campaign.yaml:8: send_window.from: "9am" is not a time of day written HH:MM`, "24-hour"},
		{"hour 25", "send_window:\n  from: \"09:00\"\n  to: \"25:00\"\n",
			`campaign.yaml:9: send_window.to: "25:00" is not a time of day: hours go from 00 to 23`, "24:00"},
		{"24:00 as from", "send_window:\n  from: \"24:00\"\n  to: \"24:00\"\n",
			`campaign.yaml:8: send_window.from: "24:00" is not a time of day`, `starts at "00:00"`},
		{"time as number", "send_window:\n  from: 9\n  to: \"20:00\"\n",
			"campaign.yaml:8: send_window.from: must be a time of day in quotes, not a number (9)", `from: "09:00"`},
		{"missing to", "send_window:\n  from: \"09:00\"\n",
			"campaign.yaml:7: send_window.to: required key is missing", "to may be"},
		{"unknown window key", "send_window:\n  from: \"09:00\"\n  to: \"20:00\"\n  timezone: Europe/Paris\n",
			"campaign.yaml:10: send_window.timezone: unknown key", "known keys here"},
		{"window as text", "send_window: daytime\n",
			"campaign.yaml:7: send_window: must be a mapping of keys (days, from, to)", ""},
		{"invalid zone", "send_window: {from: \"09:00\", to: \"20:00\"}\nfallback_timezone: Europe/Pariss\n",
			`campaign.yaml:8: fallback_timezone: "Europe/Pariss" is not a known IANA time zone`, "Europe/Paris or America/New_York"},
		{"Local zone", "send_window: {from: \"09:00\", to: \"20:00\"}\nfallback_timezone: Local\n",
			`campaign.yaml:8: fallback_timezone: "Local" is not an IANA time zone name`, "IANA"},
		{"fallback without window", "fallback_timezone: Europe/Paris\n",
			"campaign.yaml:7: fallback_timezone: a fallback time zone needs a send_window", "add send_window"},
		{"date without time", "not_before: 2026-12-01\n",
			`campaign.yaml:7: not_before: "2026-12-01" is not an RFC 3339 time`, "2026-12-01T09:00:00+01:00"},
		{"time without offset", "not_after: \"2026-12-01T09:00:00\"\n",
			`campaign.yaml:7: not_after: "2026-12-01T09:00:00" is not an RFC 3339 time`, "offset"},
		{"not_after before not_before", "not_before: 2026-12-02T00:00:00Z\nnot_after: 2026-12-01T00:00:00Z\n",
			"campaign.yaml:8: not_after: 2026-12-01T00:00:00Z is not after not_before (2026-12-02T00:00:00Z)", "later than not_before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeCase(t, windowHead+tt.yaml, nil))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error\n%s\ndoes not contain %q", err, tt.want)
			}
			if errs := allErrors(t, err); tt.hint != "" && !hasHint(errs, tt.hint) {
				t.Errorf("no hint contains %q in %+v", tt.hint, errs[0])
			}
		})
	}
}

func TestWindowLoads(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want window.Spec
	}{
		{"none", "", window.Spec{}},
		{"weekdays, in week order", "send_window:\n  days: [fri, mon, wed]\n  from: \"09:00\"\n  to: \"20:00\"\nfallback_timezone: America/New_York\n",
			window.Spec{Days: []string{"mon", "wed", "fri"}, From: "09:00", To: "20:00", Fallback: "America/New_York"}},
		{"every day to midnight", "send_window: {from: \"00:00\", to: \"24:00\"}\n",
			window.Spec{From: "00:00", To: "24:00"}},
		{"bounds as YAML timestamps and as text", "not_before: 2026-12-01T09:00:00+01:00\nnot_after: \"2026-12-24T18:00:00Z\"\n",
			window.Spec{NotBefore: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), NotAfter: time.Date(2026, 12, 24, 18, 0, 0, 0, time.UTC)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(writeCase(t, windowHead+tt.yaml, nil))
			if err != nil {
				t.Fatal(err)
			}
			got := c.Window
			if strings.Join(got.Days, ",") != strings.Join(tt.want.Days, ",") || got.From != tt.want.From || got.To != tt.want.To ||
				got.Fallback != tt.want.Fallback || !got.NotBefore.Equal(tt.want.NotBefore) || !got.NotAfter.Equal(tt.want.NotAfter) {
				t.Errorf("Window = %+v, want %+v", got, tt.want)
			}
			if _, err := window.Compile(got); err != nil {
				t.Errorf("a loaded spec does not compile: %v", err)
			}
		})
	}
}
