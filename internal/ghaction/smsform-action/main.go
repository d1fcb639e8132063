// Command smsform-action runs smsform's GitHub Action: action.yml builds
// it beside smsform and runs "smsform-action plan" or "smsform-action
// apply" (see package ghaction).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/smsform/smsform/internal/ghaction"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := ghaction.Run(ctx, os.Args[1:], ghaction.Env{Getenv: os.Getenv, Environ: os.Environ(), Stdout: os.Stdout, Stderr: os.Stderr, Dir: "."})
	if err != nil {
		fmt.Fprintf(os.Stdout, "::error::%s\n", strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(err.Error()))
		os.Exit(1)
	}
}
