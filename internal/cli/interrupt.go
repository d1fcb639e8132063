package cli

import "sync"

// Interrupt carries what a second interrupt, which quits at once, leaves
// behind: main prints [Interrupt.Note] before exiting, and a command sets it
// while it has requests in flight.
type Interrupt struct {
	mu   sync.Mutex
	note string
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
