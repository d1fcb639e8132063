#!/usr/bin/env bash
# The demo behind `make demo`: start the sandbox on loopback, plan and apply
# the announcement example, apply again to show that nothing is sent twice,
# then send it in a project whose delivery reports smsform receive takes from
# a second sandbox, show the delivery, and stop everything. Everything it
# writes stays under .demo/.
set -euo pipefail
smsform=$(realpath "${1:-./smsform}")
work=.demo
rm -rf "$work"
mkdir -p "$work"
cp -r examples/announcement examples/reminder examples/prices examples/delivery "$work/"
cp -r examples/announcement examples/prices "$work/delivery/"
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
pids=$sandbox
trap 'kill $pids 2>/dev/null; wait $pids 2>/dev/null || true' EXIT
# listening FILE: the URL a process printed on its first line, within 10 s.
listening() {
	for _ in $(seq 100); do
		u=$(sed -n 's/^listening on //p' "$1")
		[ -n "$u" ] && { echo "$u"; return; }
		sleep 0.1
	done
	echo "demo: $1 says nothing of listening" >&2
	return 1
}
url=$(listening sandbox.out) || { cat sandbox.log >&2; exit 1; }
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

# Delivery: smsform receive takes the reports a second sandbox posts, signed
# with a secret both share, into the delivery project's state.
echo
echo "==> delivery reports: smsform receive, and a sandbox that reports to it"
export SMSFORM_RECEIVE_SECRET="demo-reports-$RANDOM$RANDOM$RANDOM"
export SMSFORM_SANDBOX_REPORTS_SECRET=$SMSFORM_RECEIVE_SECRET
cd delivery
"$smsform" receive --listen 127.0.0.1:0 >receive.out 2>receive.log &
pids="$pids $!"
recv=$(listening receive.out) || { cat receive.log >&2; exit 1; }
"$smsform" sandbox --addr 127.0.0.1:0 --outbox outbox.jsonl --report-delay 200ms --undelivered-rate 0.1 \
	--reports-to "$recv/reports" --replies-to "$recv/replies" --stop-rate 0.1 --seed 1 >sandbox.out 2>sandbox.log &
pids="$pids $!"
SMSFORM_BASE_URL=$(listening sandbox.out) || { cat sandbox.log >&2; exit 1; }
export SMSFORM_BASE_URL SMSFORM_TOKEN_DIR=$PWD/tokens
echo "==> receive on $recv, sandbox on $SMSFORM_BASE_URL"
step apply announcement/announcement.yaml --auto-approve
sent=$(wc -l <outbox.jsonl)
# Wait (at most 30 s) until every message sent has its report.
for _ in $(seq 300); do
	got=$("$smsform" reports show announcement/announcement.yaml --json |
		awk -F'[:,]' '/^  "(delivered|undelivered)":/ { n += $2 } END { print n + 0 }')
	[ "${got:-0}" -ge "$sent" ] && break
	sleep 0.1
done
[ "${got:-0}" -ge "$sent" ] || { echo "demo: only ${got:-0} of $sent reports arrived" >&2; cat receive.log >&2; exit 1; }
step reports show announcement/announcement.yaml
# The sandbox's seed makes two of the recipients reached reply STOP; their
# replies come with the reports. Wait (at most 10 s) for both.
for _ in $(seq 100); do
	stops=$("$smsform" optout list --json | grep -c '"source": "reply"')
	[ "$stops" -ge 2 ] && break
	sleep 0.1
done
step optout list
cd ..
echo
echo "==> done: nothing was sent twice, and every message's delivery is known. The sandboxes and receive stop now."
