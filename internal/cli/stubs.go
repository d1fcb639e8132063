package cli

import "context"

func runApply(ctx context.Context, args []string, env Env) error   { return nil }
func runToken(ctx context.Context, args []string, env Env) error   { return nil }
func runState(ctx context.Context, args []string, env Env) error   { return nil }
func runSandbox(ctx context.Context, args []string, env Env) error { return nil }
