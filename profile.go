package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
)

// profileEnv names a file to write a CPU profile of the whole command to,
// for `go tool pprof`: make bench runs the binary as a child process, so a
// profile of what it measures has to come from the binary itself. Unset (the
// normal case) it costs nothing. A "%p" in the name is replaced by the
// process id, so that each of the processes a bench run starts (apply, its
// sandbox) leaves a profile of its own.
const profileEnv = "SMSFORM_CPUPROFILE"

// startProfile starts the CPU profile profileEnv asks for and returns the
// function that ends it; a file that cannot be made is said on stderr and
// the command runs unprofiled, since a profile is never worth a failed send.
func startProfile(getenv func(string) string) (stop func()) {
	path := getenv(profileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid())))
	if err == nil {
		err = pprof.StartCPUProfile(f)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "smsform: %s: no CPU profile: %v\n", profileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "smsform: %s: %v\n", profileEnv, err)
		}
	}
}
