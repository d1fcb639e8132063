#!/usr/bin/env bash
# The action's build step (action.yml): smsform and smsform-action from the
# action's own checkout, smsform stamped with the action's ref, so that the
# plan job and the apply job run one version. The folder goes on PATH for
# the job's later steps.
set -euo pipefail
bin="${RUNNER_TEMP:?}/smsform-bin"
mkdir -p "$bin"
version="${ACTION_REF:-dev}"
go build -trimpath -ldflags "-X github.com/smsform/smsform/internal/cli.Version=${version}" -o "$bin/smsform" .
go build -trimpath -o "$bin/smsform-action" ./internal/ghaction/smsform-action
echo "$bin" >>"${GITHUB_PATH:?}"
"$bin/smsform" version
