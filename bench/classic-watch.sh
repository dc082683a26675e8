#!/bin/sh
# bench/classic-watch.sh CMD [ARGS...] — the spot-notice watcher people copy
# from blog posts, as bench/spot.sh's comparison for `gpuctl run --cloud aws`.
#
# Starts CMD in the background, fetches an IMDSv2 session token once (the
# PUT of the AWS docs' snippet), then every 5 s asks for
# latest/meta-data/spot/instance-action with curl -s -f; the first 200
# answer sends SIGTERM to CMD. Exits with CMD's status. The one liberty
# taken with the blog loop: it also ends when CMD has ended (kill -0), so
# that a wrapped job that finishes on its own does not leave it polling
# forever.
#
# Environment: METADATA_URL (default http://169.254.169.254, the real
# service; bench/spot.sh points it at tests/mock/metadata.py).
MD=${METADATA_URL:-http://169.254.169.254}

"$@" &
PID=$!

TOKEN=$(curl -s -X PUT "$MD/latest/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 21600")
while kill -0 "$PID" 2>/dev/null; do
	if curl -s -f -H "X-aws-ec2-metadata-token: $TOKEN" "$MD/latest/meta-data/spot/instance-action" >/dev/null; then
		kill -TERM "$PID"
		break
	fi
	sleep 5
done
wait "$PID"
