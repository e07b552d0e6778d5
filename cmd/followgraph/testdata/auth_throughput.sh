#!/usr/bin/env bash
# auth_throughput.sh BINARY EDGES PAIRS [SECONDS]: the read rate of one
# followgraph binary's server with authentication or TLS against the same
# binary's without, side by side (ab_throughput.sh): a service token, a
# user's token (a JWT, cached after its first check), and HTTPS. Keys,
# tokens and certificates are made with openssl for the run.
set -euo pipefail
bin=$1 edges=$2 pairs=$3 secs=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

token=$(openssl rand -hex 32)
printf '%s read bench\n' "$token" >"$work/tokens"

openssl genpkey -algorithm ed25519 -out "$work/user.key" 2>/dev/null
openssl pkey -in "$work/user.key" -pubout -out "$work/user.pub"
head=$(printf '{"alg":"EdDSA","typ":"JWT"}' | b64url)
body=$(printf '{"sub":"5","exp":%d}' $(($(date +%s) + 3600)) | b64url)
printf '%s.%s' "$head" "$body" >"$work/jwt.in"
sig=$(openssl pkeyutl -sign -rawin -inkey "$work/user.key" -in "$work/jwt.in" | b64url)
jwt="$head.$body.$sig"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$work/tls.key" -out "$work/tls.pem" 2>/dev/null

echo "== a service token"
NEW_SERVE="--auth-tokens $work/tokens" NEW_BENCH="--token $token" \
	"$here/ab_throughput.sh" "$bin" "$bin" "$edges" reads "$pairs" "$secs"
echo "== a user's token (JWT, EdDSA)"
NEW_SERVE="--auth-jwt-keys $work/user.pub" NEW_BENCH="--token $jwt" \
	"$here/ab_throughput.sh" "$bin" "$bin" "$edges" reads "$pairs" "$secs"
echo "== HTTPS"
NEW_SERVE="--tls-cert $work/tls.pem --tls-key $work/tls.key" NEW_SCHEME=https NEW_BENCH="--tls-ca $work/tls.pem" \
	"$here/ab_throughput.sh" "$bin" "$bin" "$edges" reads "$pairs" "$secs"
