# make test: the README's test command, which .ci/run runs last (with the
# servers it starts; bash .ci/run is the whole of CI). make bench: the
# figures of docs/BENCHMARKS.md. make lint: gofmt, go vet, staticcheck
# when installed.

.PHONY: test bench lint fuzz

test:
	go test -race -timeout 30m ./...

bench:
	cd memgraph && go test -run '^$$' -bench 'Common|Relations|Followers|FollowUnfollow|FollowParallel|Suggestions' -count 5 .
	cd memgraph && go test -run '^$$' -bench 'Memory|Load' -benchtime 1x -count 3 .
	FOLLOWGRAPH_TEST_REDIS=$${FOLLOWGRAPH_TEST_REDIS:-redis://127.0.0.1:6379} go test -run '^$$' -bench . -count 5 -timeout 30m ./redisgraph/

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	go vet ./...
	@if command -v staticcheck >/dev/null; then staticcheck ./...; else echo "staticcheck not installed: go install honnef.co/go/tools/cmd/staticcheck@latest"; fi

fuzz:
	go test -run '^$$' -fuzz '^FuzzParseUserID$$' -fuzztime 60s .
	go test -run '^$$' -fuzz '^FuzzDecodeCursor$$' -fuzztime 60s .
	go test -run '^$$' -fuzz '^FuzzServer$$' -fuzztime 120s ./httpapi/
	go test -run '^$$' -fuzz '^FuzzRelationsBody$$' -fuzztime 60s ./httpapi/
	go test -run '^$$' -fuzz '^FuzzFramer$$' -fuzztime 60s ./httpapi/
	go test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 60s ./eventlog/
	go test -run '^$$' -fuzz '^FuzzAuthorization$$' -fuzztime 60s ./auth/
