#!/usr/bin/env bash
# The demo behind `make demo`: validate and plan the example campaigns.
set -euo pipefail
smsform=${1:-./smsform}
for c in examples/announcement/announcement.yaml examples/reminder/reminder.yaml; do
	echo "==> smsform validate $c"
	"$smsform" validate "$c"
	echo "==> smsform plan $c"
	"$smsform" plan "$c"
done
