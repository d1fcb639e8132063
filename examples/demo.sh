#!/usr/bin/env bash
# The demo behind `make demo`: start the sandbox on loopback, plan and apply
# the announcement example, apply again to show that nothing is sent twice,
# and stop the sandbox. Everything it writes stays under .demo/.
set -euo pipefail
smsform=$(realpath "${1:-./smsform}")
work=.demo
rm -rf "$work"
mkdir -p "$work"
cp -r examples/announcement examples/reminder examples/prices "$work/"
cd "$work"

# Sandbox credentials, made up for this run; apply reads the same pair.
export SMSFORM_SANDBOX_CLIENT_ID=demo-client SMSFORM_SANDBOX_CLIENT_SECRET="demo-$RANDOM$RANDOM"
export SMSFORM_CLIENT_ID=$SMSFORM_SANDBOX_CLIENT_ID SMSFORM_CLIENT_SECRET=$SMSFORM_SANDBOX_CLIENT_SECRET
export SMSFORM_TOKEN_DIR=$PWD/tokens

# It answers as many real providers do rather than in its own shapes:
# 202 with a bare message_id, OAuth-style errors, and only the literal
# "Basic id:secret" at the token endpoint (apply finds that by itself).
"$smsform" sandbox --addr 127.0.0.1:0 --outbox outbox.jsonl \
	--success-status 202 --success-body minimal --error-body oauth --basic literal >sandbox.out 2>sandbox.log &
sandbox=$!
trap 'kill "$sandbox" 2>/dev/null; wait "$sandbox" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	url=$(sed -n 's/^listening on //p' sandbox.out)
	[ -n "$url" ] && break
	sleep 0.1
done
[ -n "$url" ] || { echo "demo: the sandbox did not start" >&2; cat sandbox.log >&2; exit 1; }
export SMSFORM_BASE_URL=$url
echo "==> sandbox listening on $url"

step() { echo; echo "==> smsform $*"; "$smsform" "$@"; }
step validate announcement/announcement.yaml
step plan announcement/announcement.yaml
step apply announcement/announcement.yaml --auto-approve
first=$(wc -l <outbox.jsonl)
echo "==> the sandbox's outbox holds $first messages"
step apply announcement/announcement.yaml --auto-approve
second=$(wc -l <outbox.jsonl)
echo "==> after the rerun it still holds $second messages"
[ "$first" = "$second" ] || { echo "demo: the rerun sent again!" >&2; exit 1; }
step state list announcement/announcement.yaml
step plan reminder/reminder.yaml --format markdown
echo
echo "==> done: nothing was sent twice. The sandbox stops now."
