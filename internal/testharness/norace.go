//go:build !race

package testharness

// RaceBuild says this program was built with the race detector.
const RaceBuild = false
