package cli

import "sync"

// Interrupt carries what a second interrupt, which quits at once, leaves
// behind: main prints [Interrupt.Note] before exiting, and a command sets it
// while it has requests in flight.
type Interrupt struct {
	mu   sync.Mutex
	note string
	// prompting: a question waits for an answer, and nothing is in
	// flight; the first interrupt cancels the command without a word (the
	// command says it was cancelled).
	prompting bool
}

// Prompting reports whether a question waits for an answer.
func (i *Interrupt) Prompting() bool {
	if i == nil {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.prompting
}

func (i *Interrupt) setPrompting(p bool) {
	if i == nil {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.prompting = p
}

// Note is what to tell the user when quitting at once now; "" when nothing
// is at stake.
func (i *Interrupt) Note() string {
	if i == nil {
		return ""
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.note
}

func (i *Interrupt) set(note string) {
	if i == nil {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.note = note
}
