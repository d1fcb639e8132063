//go:build !race

package e164

const raceEnabled = false
