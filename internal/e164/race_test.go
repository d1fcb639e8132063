//go:build race

package e164

// raceEnabled shortens TestDifferential under the race detector, which makes
// the library's regular expressions about ten times slower.
const raceEnabled = true
