#!/bin/sh
# Makes deploy/compose/secrets/ once: a service token with every scope for
# the operator, the database password, and the password of the NATS routes
# between the nodes of ha.yaml. The folder is the operator's
# only (0700); the files are readable by the containers' users (the image
# runs as uid 65532), which see only the file each is given.
set -eu
cd "$(dirname "$0")"
umask 077
mkdir -p secrets
chmod 0700 secrets
if [ ! -e secrets/followgraph-tokens ]; then
	echo "$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n') read,write,admin operator" > secrets/followgraph-tokens
fi
if [ ! -e secrets/postgres-password ]; then
	od -An -N24 -tx1 /dev/urandom | tr -d ' \n' > secrets/postgres-password
fi
if [ ! -e secrets/nats-route-password ]; then
	od -An -N24 -tx1 /dev/urandom | tr -d ' \n' > secrets/nats-route-password
fi
chmod 0644 secrets/followgraph-tokens secrets/postgres-password secrets/nats-route-password
echo "the operator's token: $(cut -d' ' -f1 secrets/followgraph-tokens)"
